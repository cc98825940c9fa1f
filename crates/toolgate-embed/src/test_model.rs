//! The model the tests run: the directory `scripts/install-peers` wrote into
//! `.peers/env` as `TOOLGATE_EMBED_MODEL` (`TOOLGATE_PEERS_DIR` overrides
//! `.peers`). Loaded once per test binary.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::Embedder;

/// The installed model directory; panics saying how to install it.
pub(crate) fn model_dir() -> PathBuf {
    let peers = std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.peers"));
    let env_file = peers.join("env");
    let text = std::fs::read_to_string(&env_file).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: run scripts/install-peers to install the embedding model",
            env_file.display()
        )
    });
    let dir = text
        .lines()
        .find_map(|line| line.strip_prefix("TOOLGATE_EMBED_MODEL="))
        .unwrap_or_else(|| {
            panic!(
                "{} has no TOOLGATE_EMBED_MODEL: run scripts/install-peers",
                env_file.display()
            )
        });
    PathBuf::from(dir.trim_matches('\'').trim_matches('"'))
}

/// The model, loaded once.
pub(crate) fn embedder() -> &'static Embedder {
    static MODEL: OnceLock<Embedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = model_dir();
        Embedder::load(&dir).unwrap_or_else(|e| panic!("{e}: run scripts/install-peers"))
    })
}
