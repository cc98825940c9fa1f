use serde::Deserialize;

use crate::test_model::{embedder, model_dir};
use crate::{EmbedError, Embedder, VectorCache};

#[derive(Deserialize)]
struct Reference {
    text: String,
    int8: Vec<f32>,
    fp32: Vec<f32>,
}

fn references() -> Vec<Reference> {
    serde_json::from_str(include_str!("../tests/fixtures/embeddings.json")).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `tests/fixtures/embeddings.json` (`tests/fixtures/reference.py`): the same
/// int8 model on Python onnxruntime, and the float reference
/// (sentence-transformers' computation over the original weights).
#[test]
fn matches_the_reference_vectors_one_text_at_a_time() {
    let model = embedder();
    for reference in references() {
        let ours = &model.embed(&[&reference.text]).unwrap()[0];
        let same_model = cosine(ours, &reference.int8);
        let float = cosine(ours, &reference.fp32);
        assert!(
            same_model >= 0.9999,
            "{:?}: {same_model} vs int8",
            reference.text
        );
        assert!(float >= 0.995, "{:?}: {float} vs fp32", reference.text);
    }
}

#[test]
fn a_batch_padded_to_its_longest_text_gives_the_same_vectors() {
    let model = embedder();
    let references = references();
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    let vectors = model.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (vector, reference) in vectors.iter().zip(&references) {
        let norm = cosine(vector, vector).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        let same = cosine(vector, &reference.int8);
        assert!(same >= 0.999, "{:?}: {same}", reference.text);
    }
}

#[test]
fn knows_its_dimension_and_identity() {
    let model = embedder();
    assert_eq!(model.dimension(), 384);
    assert_eq!(model.id().to_hex().len(), 64);
    assert!(model.embed(&[]).unwrap().is_empty());
    // A second load in the same process reuses the loaded ONNX Runtime.
    let again = Embedder::load(model.dir()).unwrap();
    assert_eq!(again.id(), model.id());
}

#[test]
fn a_missing_directory_or_file_is_named() {
    let missing = std::env::temp_dir().join("toolgate-embed-no-such-model");
    let error = Embedder::load(&missing).unwrap_err();
    assert!(matches!(error, EmbedError::NoModelDir { .. }));
    assert_eq!(
        error.to_string(),
        format!("no embedding model directory at {}", missing.display())
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        model_dir().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let error = Embedder::load(dir.path()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the embedding model in {} has no model.onnx",
            dir.path().display()
        )
    );
}

#[test]
fn the_cache_embeds_what_it_lacks_and_keeps_it_across_restarts() {
    let model = embedder();
    let dir = tempfile::tempdir().unwrap();
    let texts = [
        "list_files: List the files in a directory",
        "get_weather: Weather",
    ];
    let mut cache = VectorCache::open(dir.path(), model);
    let first = cache.embed(model, &texts).unwrap();
    assert_eq!(cache.len(), 2);
    cache.save().unwrap();

    let mut reopened = VectorCache::open(dir.path(), model);
    assert_eq!(reopened.len(), 2);
    assert_eq!(reopened.discarded(), 0);
    let again = reopened.embed(model, &texts).unwrap();
    assert_eq!(again, first);
}
