use super::*;

const DIM: usize = 4;

fn model(byte: u8) -> ModelId {
    ModelId([byte; 32])
}

fn filled(dir: &Path) -> VectorCache {
    let mut cache = VectorCache::open_for(dir, model(1), DIM);
    assert!(cache.insert("alpha", vec![1.0, 0.0, 0.0, 0.0]));
    assert!(cache.insert("beta", vec![0.0, 1.0, 0.0, 0.0]));
    assert!(cache.insert("gamma", vec![0.0, 0.0, 0.5, -0.5]));
    cache.save().unwrap();
    cache
}

#[test]
fn vectors_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let saved = filled(dir.path());
    let cache = VectorCache::open_for(dir.path(), model(1), DIM);
    assert_eq!(cache.path(), saved.path());
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.discarded(), 0);
    assert_eq!(cache.get("gamma"), Some(&[0.0, 0.0, 0.5, -0.5][..]));
    assert_eq!(cache.get("delta"), None);
}

#[test]
fn another_model_or_dimension_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    filled(dir.path());
    assert!(VectorCache::open_for(dir.path(), model(2), DIM).is_empty());
    let other_dimension = VectorCache::open_for(dir.path(), model(1), DIM + 1);
    assert!(other_dimension.is_empty());
    assert_eq!(other_dimension.discarded(), 1);
}

#[test]
fn a_damaged_record_is_left_out_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled(dir.path()).path().to_path_buf();
    let mut bytes = std::fs::read(&path).unwrap();
    let record = 32 + 4 * DIM + CHECK;
    bytes[HEADER + record + 35] ^= 0x40; // a vector byte of the second record
    std::fs::write(&path, &bytes).unwrap();

    let mut cache = VectorCache::open_for(dir.path(), model(1), DIM);
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.discarded(), 1);
    // Saving rewrites the file without the damaged record.
    cache.save().unwrap();
    let cache = VectorCache::open_for(dir.path(), model(1), DIM);
    assert_eq!((cache.len(), cache.discarded()), (2, 0));
}

#[test]
fn a_cut_file_or_garbage_is_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled(dir.path()).path().to_path_buf();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    let cache = VectorCache::open_for(dir.path(), model(1), DIM);
    assert_eq!((cache.len(), cache.discarded()), (2, 1));

    std::fs::write(&path, b"not a cache").unwrap();
    let cache = VectorCache::open_for(dir.path(), model(1), DIM);
    assert_eq!((cache.len(), cache.discarded()), (0, 1));
}

#[test]
fn refuses_vectors_of_another_length_and_saves_only_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cache = VectorCache::open_for(&dir.path().join("new/sub"), model(1), DIM);
    assert!(!cache.insert("short", vec![1.0]));
    cache.save().unwrap();
    assert!(!cache.path().exists(), "nothing to save");
    assert!(cache.insert("ok", vec![0.0; DIM]));
    cache.save().unwrap();
    assert!(cache.path().exists());
}
