//! What several test files share: the installed test peers.

use std::path::PathBuf;

/// The `bin` directories of the test peers `scripts/install-peers` installs.
pub(crate) struct Peers {
    pub(crate) node_bin: PathBuf,
    pub(crate) venv_bin: PathBuf,
    /// The local embedding model's directory.
    pub(crate) embed_model: PathBuf,
}

pub(crate) fn peers() -> Peers {
    let env_file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.peers/env");
    let text = std::fs::read_to_string(&env_file).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run scripts/install-peers",
            env_file.display()
        )
    });
    let value = |key: &str| {
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| {
                panic!(
                    "{} has no {key}: run scripts/install-peers",
                    env_file.display()
                )
            });
        PathBuf::from(line.trim_matches('\'').trim_matches('"'))
    };
    Peers {
        node_bin: value("TOOLGATE_PEERS_NODE_BIN"),
        venv_bin: value("TOOLGATE_PEERS_VENV").join("bin"),
        embed_model: value("TOOLGATE_EMBED_MODEL"),
    }
}
