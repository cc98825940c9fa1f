//! What several test files share: the installed test peers, and the
//! `toolgate` binary started the same way on every machine.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Variables of the test's own environment a `toolgate` child keeps: where
/// programs are, and where temporary files go. Nothing else of the machine
/// reaches it (no `TOOLGATE_*`, no provider keys, no `RUST_LOG`, no model
/// installed under the developer's home).
const KEPT_VARIABLES: [&str; 3] = ["PATH", "TMPDIR", "LANG"];

/// The `toolgate` binary, run in `home`: its home and XDG data, cache and
/// config directories are `home`, and its environment holds only
/// [`KEPT_VARIABLES`] of the test's, so a test sees what a fresh machine
/// sees. The caller adds what its case needs (a model, a key).
pub(crate) fn toolgate(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.env_clear();
    for name in KEPT_VARIABLES {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home)
        .env("XDG_CACHE_HOME", home)
        .env("XDG_CONFIG_HOME", home);
    command
}

/// The `bin` directories of the test peers `scripts/install-peers` installs.
pub(crate) struct Peers {
    pub(crate) node_bin: PathBuf,
    pub(crate) venv_bin: PathBuf,
    /// The local embedding model's directory.
    pub(crate) embed_model: PathBuf,
}

/// The peers `scripts/install-peers` installed: in `TOOLGATE_PEERS_DIR`
/// when it is set, as the script does, else in the repository's `.peers`.
pub(crate) fn peers() -> Peers {
    let env_file = std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.peers"))
        .join("env");
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

/// Spawns `command` (a `toolgate serve` on an HTTP listener) with its
/// stderr read until the gateway listens: the child, what it printed up to
/// and with the `Listening on` line, and the MCP URL on it. Its stderr is
/// drained from then on, so the gateway never blocks on a full pipe.
pub(crate) fn listening(command: &mut Command) -> (Child, String, String) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("toolgate serve ended before listening:\n{printed}");
        }
        printed.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("Listening on ") {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    });
    (child, printed, url)
}

/// Runs `command` with `input` on stdin, off the test's runtime threads.
pub(crate) async fn run(mut command: Command, input: &str) -> Output {
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

/// A process's output as text.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Pins `[tools] loaded_schemas = "tool_list"` in `dir`'s `toolgate.toml`
/// (made if missing) unless the file sets it: the chat stories that read
/// the tools each request lists are told in that placement; `toolgate
/// chat`'s own default, the conversation, has tests of its own.
pub(crate) fn pin_tool_list(dir: &Path) {
    pin(dir, "loaded_schemas", "loaded_schemas = \"tool_list\"\n");
}

/// Pins `[tools] defer = "always"` in `dir`'s `toolgate.toml` (made if
/// missing) unless the file sets it: the stories of loading groups on
/// demand are told on catalogs small enough that `toolgate chat` and
/// `toolgate serve` would send every tool by default; sending them has
/// tests of its own.
pub(crate) fn pin_deferred(dir: &Path) {
    pin(dir, "defer =", "defer = \"always\"\n");
}

/// Adds `line` to `[tools]` in `dir`'s `toolgate.toml` (made if missing)
/// unless the file holds `key` already: last in the table where it can be,
/// so the lines a test's error names stay.
fn pin(dir: &Path, key: &str, line: &str) {
    let path = dir.join("toolgate.toml");
    let settings = std::fs::read_to_string(&path).unwrap_or_default();
    if settings.contains(key) {
        return;
    }
    let pinned = match settings.find("[tools]\n") {
        Some(at) if !settings[at..].contains("\n[") && settings.ends_with('\n') => {
            format!("{settings}{line}")
        }
        Some(at) => {
            let after = at + "[tools]\n".len();
            format!("{}{line}{}", &settings[..after], &settings[after..])
        }
        None => format!("{settings}\n[tools]\n{line}"),
    };
    std::fs::write(path, pinned).unwrap();
}
