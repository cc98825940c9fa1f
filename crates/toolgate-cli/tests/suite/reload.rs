//! `toolgate serve` reloads the `tools/` folder while it runs: an edited
//! manifest reaches the sessions that loaded its group as
//! `notifications/tools/list_changed`, and SIGHUP reloads too (and does not
//! stop the gateway).

#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long to wait for what the gateway should do at once.
const PATIENCE: Duration = Duration::from_secs(20);

/// A `toolgate serve --stdio` child whose stdout (JSON-RPC) and stderr
/// (what it tells the operator) are read line by line.
struct Served {
    child: Child,
    stdin: ChildStdin,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

fn lines_of(read: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (sender, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(read).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

impl Served {
    fn start(dir: &Path) -> Self {
        super::support::pin_deferred(dir);
        let mut child = super::support::toolgate(dir)
            .args(["serve", "--stdio", "--memory-store", "--no-builtins"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
    }

    /// Sends request `id` and waits for its answer; what came before it
    /// (notifications) is passed over.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = next_json(&self.stdout, method);
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Waits for a stderr line containing `text`.
    fn said(&self, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(text) => return,
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        panic!(
            "the gateway never said '{text}'; it said:\n{}",
            seen.join("\n")
        );
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn next_json(lines: &Receiver<String>, waiting_for: &str) -> Value {
    let line = lines
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("nothing on stdout while waiting for {waiting_for}"));
    serde_json::from_str(&line).unwrap()
}

fn mathx(tools: &[&str]) -> String {
    let mut entries =
        vec![json!({"_meta": true, "display_name": "Math", "description": "Arithmetic"})];
    entries.extend(tools.iter().map(|name| {
        json!({"name": name, "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}})
    }));
    Value::Array(entries).to_string()
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_edited_manifest_notifies_the_session_that_loaded_it_and_sighup_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("mathx.json"), mathx(&["mathx_add"])).unwrap();
    std::fs::write(
        tools.join("mathx.js"),
        "function mathx_add({a, b}) { return a + b; }\nfunction mathx_mul({a, b}) { return a * b; }\n",
    )
    .unwrap();
    let mut served = Served::start(dir.path());
    let init = served.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "toolgate", "{init}");
    served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let loaded = served.request(
        2,
        "tools/call",
        json!({"name": "load_tool_group", "arguments": {"group_name": "mathx"}}),
    );
    assert_ne!(loaded["result"]["isError"], true, "{loaded}");
    let listed = served.request(3, "tools/list", json!({}));
    assert!(
        tool_names(&listed).contains(&"mathx_add".to_owned()),
        "{listed}"
    );

    // The file watch: a tool added to the manifest.
    std::fs::write(tools.join("mathx.json"), mathx(&["mathx_add", "mathx_mul"])).unwrap();
    let notified = next_json(&served.stdout, "notifications/tools/list_changed");
    assert_eq!(
        notified["method"], "notifications/tools/list_changed",
        "{notified}"
    );
    served.said("manifests reloaded: groups changed: mathx");
    let listed = served.request(4, "tools/list", json!({}));
    let names = tool_names(&listed);
    let add = names.iter().position(|name| name == "mathx_add");
    let mul = names.iter().position(|name| name == "mathx_mul");
    assert!(add.is_some() && add < mul, "{names:?}");
    let product = served.request(
        5,
        "tools/call",
        json!({"name": "mathx_mul", "arguments": {"a": 6, "b": 7}}),
    );
    assert_eq!(product["result"]["content"][0]["text"], "42", "{product}");

    // SIGHUP reloads, and the gateway goes on.
    served.signal("HUP");
    served.said("manifests reloaded: nothing changed");
    let listed = served.request(6, "tools/list", json!({}));
    assert!(
        tool_names(&listed).contains(&"mathx_mul".to_owned()),
        "{listed}"
    );
}

/// `toolgate.toml` with one `[[upstream]]` table per name, each running
/// the reference time server.
fn with_clocks(names: &[&str]) -> String {
    let time = super::support::peers().venv_bin.join("mcp-server-time");
    names
        .iter()
        .map(|name| {
            format!(
                "[[upstream]]\nname = \"{name}\"\ncommand = {command:?}\n\n",
                command = time.display().to_string()
            )
        })
        .collect()
}

#[test]
fn upstreams_follow_the_config_file_and_a_bad_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, with_clocks(&["clock"])).unwrap();
    let mut served = Served::start(dir.path());
    served.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let loaded = served.request(
        2,
        "tools/call",
        json!({"name": "load_tool_group", "arguments": {"group_name": "clock"}}),
    );
    assert_ne!(loaded["result"]["isError"], true, "{loaded}");
    let listed = served.request(3, "tools/list", json!({}));
    assert!(
        tool_names(&listed).contains(&"get_current_time".to_owned()),
        "{listed}"
    );

    // clock leaves the file, clock2 comes: applied without a restart.
    std::fs::write(&config, with_clocks(&["clock2"])).unwrap();
    let notified = next_json(&served.stdout, "notifications/tools/list_changed");
    assert_eq!(
        notified["method"], "notifications/tools/list_changed",
        "{notified}"
    );
    served.said(
        "toolgate.toml: upstreams added: clock2 (starts on first load); upstreams removed: clock",
    );
    let listed = served.request(4, "tools/list", json!({}));
    assert!(
        !tool_names(&listed).contains(&"get_current_time".to_owned()),
        "{listed}"
    );
    let loaded = served.request(
        5,
        "tools/call",
        json!({"name": "load_tool_group", "arguments": {"group_name": "clock2"}}),
    );
    assert_ne!(loaded["result"]["isError"], true, "{loaded}");
    let now = served.request(
        6,
        "tools/call",
        json!({"name": "get_current_time", "arguments": {"timezone": "UTC"}}),
    );
    assert_ne!(now["result"]["isError"], true, "{now}");

    // A file that does not check is refused with its reason; clock2 runs on.
    std::fs::write(&config, "[[upstream]]\nname = \"clock3\"\n").unwrap();
    served.said("not applied, the configuration before it keeps running");
    let now = served.request(
        7,
        "tools/call",
        json!({"name": "get_current_time", "arguments": {"timezone": "UTC"}}),
    );
    assert_ne!(now["result"]["isError"], true, "{now}");
}

/// A `[clients.<name>]` table for each name, its token `tg_<name>-reload-0123456789`.
fn clients(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| {
            let hash = toolgate_mcp::TokenHash::of(&token(name)).to_hex();
            format!("[clients.{name}]\ntoken_sha256 = \"{hash}\"\n\n")
        })
        .collect()
}

fn token(name: &str) -> String {
    format!("tg_{name}-reload-0123456789")
}

/// Whether `name`'s token opens a session at `url`.
fn admitted(url: &str, name: &str) -> bool {
    let status = super::gateways::initialize_status(url, Some(&token(name)));
    assert!(
        status.contains("200") || status.contains("401"),
        "{name}: {status}"
    );
    status.contains("200")
}

#[test]
fn a_config_file_that_is_a_symlink_is_followed_to_its_target() {
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    let real = conf.join("real.toml");
    std::fs::write(&real, clients(&["alice", "bob"])).unwrap();
    symlink("conf/real.toml", dir.path().join("toolgate.toml")).unwrap();
    let (mut child, url) = super::gateways::serve_logged(dir.path(), "127.0.0.1:0");
    assert!(admitted(&url, "alice") && admitted(&url, "bob"));

    // The target edited in place: Bob is revoked.
    std::fs::write(&real, clients(&["alice"])).unwrap();
    super::gateways::until_logged(dir.path(), "applied 1 client(s)");
    assert!(admitted(&url, "alice"));
    assert!(!admitted(&url, "bob"));

    // The target replaced by a rename, as editors save: Alice is revoked.
    let saved = conf.join(".real.toml.new");
    std::fs::write(&saved, clients(&["bob", "carol"])).unwrap();
    std::fs::rename(&saved, &real).unwrap();
    super::gateways::until_logged(dir.path(), "applied 2 client(s)");
    assert!(!admitted(&url, "alice"));
    assert!(admitted(&url, "bob") && admitted(&url, "carol"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_config_map_update_swapping_its_data_link_is_applied() {
    use std::os::unix::fs::symlink;

    // A Kubernetes ConfigMap volume: toolgate.toml -> ..data/toolgate.toml,
    // ..data -> ..<timestamp>, swapped atomically on each update.
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("..2026_01_01_00_00_00.1");
    std::fs::create_dir(&first).unwrap();
    std::fs::write(first.join("toolgate.toml"), clients(&["alice", "bob"])).unwrap();
    symlink("..2026_01_01_00_00_00.1", dir.path().join("..data")).unwrap();
    symlink("..data/toolgate.toml", dir.path().join("toolgate.toml")).unwrap();
    let (mut child, url) = super::gateways::serve_logged(dir.path(), "127.0.0.1:0");
    assert!(admitted(&url, "alice") && admitted(&url, "bob"));

    // The update, as the kubelet writes it: a new directory, a new link,
    // renamed over ..data, the old directory removed.
    let second = dir.path().join("..2026_01_01_00_01_00.2");
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("toolgate.toml"), clients(&["alice"])).unwrap();
    symlink("..2026_01_01_00_01_00.2", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    std::fs::remove_dir_all(&first).unwrap();
    super::gateways::until_logged(dir.path(), "applied 1 client(s)");
    assert!(admitted(&url, "alice"));
    assert!(!admitted(&url, "bob"));

    // And the next update, through the directory watched since the swap.
    let third = dir.path().join("..2026_01_01_00_02_00.3");
    std::fs::create_dir(&third).unwrap();
    std::fs::write(third.join("toolgate.toml"), clients(&["bob", "carol"])).unwrap();
    symlink("..2026_01_01_00_02_00.3", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    std::fs::remove_dir_all(&second).unwrap();
    super::gateways::until_logged(dir.path(), "applied 2 client(s)");
    assert!(!admitted(&url, "alice"));
    assert!(admitted(&url, "bob") && admitted(&url, "carol"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_reload_that_leaves_a_loopback_listener_without_tokens_is_applied_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, clients(&["alice"])).unwrap();
    let (mut child, url) = super::gateways::serve_logged(dir.path(), "127.0.0.1:0");
    assert!(super::gateways::initialize_status(&url, None).contains("401"));

    std::fs::write(&config, "").unwrap();
    let log = super::gateways::until_logged(dir.path(), "applied 0 client(s)");
    assert!(
        log.contains(
            "toolgate.toml: no client has a token any more and there is no [auth.oauth]: \
             --listen 127.0.0.1:0 now lets in every process on this machine without one"
        ),
        "{log}"
    );
    assert!(super::gateways::initialize_status(&url, None).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

/// A manifests folder mounted from a Kubernetes ConfigMap: each file is a
/// link into `..data`, itself a link to the current version, and an update
/// swaps `..data` for a new version. No event names a `.json` file, and the
/// update still reaches the sessions.
#[test]
fn a_manifests_folder_updated_as_a_config_map_is_reloaded() {
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    let version = |name: &str, manifest: &[&str]| {
        let folder = tools.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("mathx.json"), mathx(manifest)).unwrap();
        std::fs::write(
            folder.join("mathx.js"),
            "function mathx_add({a, b}) { return a + b; }\nfunction mathx_mul({a, b}) { return a * b; }\n",
        )
        .unwrap();
    };
    version("..2026_11_28_a", &["mathx_add"]);
    symlink("..2026_11_28_a", tools.join("..data")).unwrap();
    for file in ["mathx.json", "mathx.js"] {
        symlink(format!("..data/{file}"), tools.join(file)).unwrap();
    }
    let mut served = Served::start(dir.path());
    served.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let loaded = served.request(
        2,
        "tools/call",
        json!({"name": "load_tool_group", "arguments": {"group_name": "mathx"}}),
    );
    assert_ne!(loaded["result"]["isError"], true, "{loaded}");

    // The update, as the kubelet writes it: a new version, a new link to it,
    // renamed over `..data`.
    version("..2026_11_28_b", &["mathx_add", "mathx_mul"]);
    symlink("..2026_11_28_b", tools.join("..data_tmp")).unwrap();
    std::fs::rename(tools.join("..data_tmp"), tools.join("..data")).unwrap();
    served.said("manifests reloaded: groups changed: mathx");
    let listed = served.request(3, "tools/list", json!({}));
    assert!(
        tool_names(&listed).contains(&"mathx_mul".to_owned()),
        "{listed}"
    );
}
