//! Benchmarks of the local embedding model (divan): one short query, a whole
//! catalog of tool texts, loading the model, opening a warm vector cache.
//!
//! `cargo bench -p toolgate-embed`. The model comes from
//! `TOOLGATE_EMBED_MODEL`, else from the env file `scripts/install-peers`
//! wrote (`.peers/env`, or `$TOOLGATE_PEERS_DIR/env`). The texts are the test
//! fixture's (tool descriptions and queries); with `TOOLGATE_DATA` set to the
//! datasets folder, the catalog is `toolbench_stable`'s 2,490 tools instead.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmark setup: a missing model should abort loudly"
)]

use std::path::PathBuf;
use std::sync::LazyLock;

use divan::Bencher;
use divan::counter::ItemsCount;
use toolgate_embed::{Embedder, ModelId, VectorCache};

fn main() {
    divan::main();
}

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOOLGATE_EMBED_MODEL") {
        return dir.into();
    }
    let peers = std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.peers"));
    let text = std::fs::read_to_string(peers.join("env"))
        .expect("no .peers/env: run scripts/install-peers or set TOOLGATE_EMBED_MODEL");
    let dir = text
        .lines()
        .find_map(|line| line.strip_prefix("TOOLGATE_EMBED_MODEL="))
        .expect("no TOOLGATE_EMBED_MODEL in .peers/env: run scripts/install-peers");
    PathBuf::from(dir.trim_matches('\'').trim_matches('"'))
}

static MODEL: LazyLock<Embedder> = LazyLock::new(|| Embedder::load(&model_dir()).unwrap());

/// The fixture's texts.
static FIXTURE: LazyLock<Vec<String>> = LazyLock::new(|| {
    include_str!("../tests/fixtures/tokens.jsonl")
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["text"].as_str().unwrap().to_string()
        })
        .collect()
});

/// Queries of 10 to 20 words.
static QUERIES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    FIXTURE
        .iter()
        .map(String::as_str)
        .filter(|text| (10..=20).contains(&text.split_whitespace().count()))
        .collect()
});

/// Tool texts (`name: description`).
static TOOLS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let Some(data) = std::env::var_os("TOOLGATE_DATA").filter(|d| !d.is_empty()) else {
        return FIXTURE.clone();
    };
    let path = PathBuf::from(data).join("toolbench_stable/tools.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| {
            let tool: serde_json::Value = serde_json::from_str(line).unwrap();
            format!(
                "{}: {}",
                tool["name"].as_str().unwrap_or_default(),
                tool["description"].as_str().unwrap_or_default()
            )
        })
        .collect()
});

/// One short query, tokenized and embedded (what each routed turn pays).
#[divan::bench]
fn query(bencher: Bencher) {
    let model = &*MODEL;
    let mut next = QUERIES.iter().cycle();
    bencher.bench_local(|| model.embed(&[next.next().unwrap()]).unwrap());
}

/// Every tool text in one call, as a cold start embeds the catalog (sorted
/// by length inside, batches of 32 padded to their longest).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn all_tools_cold(bencher: Bencher) {
    let model = &*MODEL;
    let tools: Vec<&str> = TOOLS.iter().map(String::as_str).collect();
    bencher
        .counter(ItemsCount::new(tools.len()))
        .bench_local(|| model.embed(&tools).unwrap());
}

/// Loading the model: reading and hashing the files, starting ONNX Runtime.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn load_model() -> Embedder {
    Embedder::load(&model_dir()).unwrap()
}

/// Opening a cache of 4,000 vectors of 384 floats (start-up with a warm
/// cache, the model's own load apart).
#[divan::bench(sample_count = 20)]
fn open_warm_cache_4000(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelId([7; 32]);
    let mut cache = VectorCache::open_for(dir.path(), model, 384);
    for i in 0..4000_u32 {
        let vector = (0..384_u32)
            .map(|j| ((i * 384 + j) % 97) as f32 / 97.0)
            .collect();
        cache.insert(&format!("tool {i}: a description"), vector);
    }
    cache.save().unwrap();
    bencher.bench_local(|| {
        let cache = VectorCache::open_for(dir.path(), model, 384);
        assert_eq!(cache.len(), 4000);
        cache
    });
}
