//! Real upstream MCP servers behind the gateway: the PyPI and npm reference
//! servers that `scripts/install-peers` puts in `.peers/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_mcp::config::{UpstreamConfig, UpstreamTransport};
use toolgate_store::MemoryStore;
use toolgate_tools::Startup;

use super::support::{CORE, call, connect, is_error, load, serve_default, text, tool_names};

/// Where `scripts/install-peers` put the reference servers.
pub(crate) struct Peers {
    pub(crate) node_bin: PathBuf,
    pub(crate) venv_bin: PathBuf,
}

/// In `TOOLGATE_PEERS_DIR` when it is set, as the script installs them,
/// else in the repository's `.peers`.
pub(crate) fn peers() -> Peers {
    let env_file = std::env::var_os("TOOLGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers"))
        .join("env");
    let text = std::fs::read_to_string(&env_file).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run scripts/install-peers (./scripts/test does) to install the reference MCP servers",
            env_file.display()
        )
    });
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{key}=")))
            .map(|value| PathBuf::from(value.trim_matches('\'').trim_matches('"')))
            .unwrap_or_else(|| panic!("{key} missing from {}", env_file.display()))
    };
    Peers {
        node_bin: value("TOOLGATE_PEERS_NODE_BIN"),
        venv_bin: value("TOOLGATE_PEERS_VENV").join("bin"),
    }
}

pub(crate) fn stdio(name: &str, command: PathBuf, args: &[&str]) -> UpstreamConfig {
    UpstreamConfig {
        call_timeout: Duration::from_secs(30),
        ..UpstreamConfig::stdio(
            toolgate_core::GroupId::new(name).unwrap(),
            command.display().to_string(),
            args,
        )
    }
}

#[tokio::test]
async fn a_lazy_upstream_starts_on_first_load_and_serves_its_tools() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let clock = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    let served = serve_default(root.path(), vec![clock]).await;
    let (client, recorder) = connect(&served.url).await;

    // Offered before it runs; its description falls back to a sentence.
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(
        instructions.contains("- clock: Tools of the MCP server 'clock'"),
        "{instructions}"
    );
    assert_eq!(tool_names(&client).await, CORE);

    let loaded = call(&client, "load_tool_group", json!({"group_name": "clock"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    assert!(
        text(&loaded).starts_with("Loaded 2 tools from group 'Clock':"),
        "{}",
        text(&loaded)
    );
    recorder.wait_for_list_changed(1).await;
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &["get_current_time", "convert_time"]].concat()
    );
    let now = call(
        &client,
        "get_current_time",
        json!({"timezone": "Europe/Paris"}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
    assert!(text(&now).contains("Europe/Paris"), "{}", text(&now));
    let invalid = call(&client, "get_current_time", json!({"timezone": 5})).await;
    assert!(
        text(&invalid).starts_with("Invalid arguments for tool 'get_current_time': 'timezone'"),
        "{}",
        text(&invalid)
    );
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn a_bad_upstream_fails_only_its_own_group() {
    let root = tempfile::tempdir().unwrap();
    let broken = stdio(
        "broken",
        PathBuf::from("toolgate-test-no-such-command"),
        &[],
    );
    let served = serve_default(root.path(), vec![broken]).await;
    let (client, _) = connect(&served.url).await;

    let failed = call(&client, "load_tool_group", json!({"group_name": "broken"})).await;
    assert!(is_error(&failed));
    assert_eq!(
        text(&failed),
        "MCP server 'broken' failed to start: command `toolgate-test-no-such-command` not found \
         on PATH"
    );
    // Asked again at once, it says when it will try again instead of spawning.
    let again = call(&client, "load_tool_group", json!({"group_name": "broken"})).await;
    assert!(
        text(&again).starts_with("MCP server 'broken' is unavailable:"),
        "{}",
        text(&again)
    );

    let time = call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    assert!(!is_error(&time), "{}", text(&time));
    let now = call(&client, "time_now", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn colliding_names_are_qualified_and_stay_put_when_upstreams_are_added() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let mut first = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    first.startup = Startup::Eager;
    let mut second = stdio("clock2", peers.venv_bin.join("mcp-server-time"), &[]);
    second.startup = Startup::Eager;

    let exposed = |served: &super::support::Served<MemoryStore>, group: &str| {
        served.gateway.with_catalog(|catalog| {
            catalog
                .group_tools(group)
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>()
        })
    };
    let served = serve_default(root.path(), vec![first.clone(), second.clone()]).await;
    assert_eq!(
        exposed(&served, "clock"),
        ["get_current_time", "convert_time"]
    );
    assert_eq!(
        exposed(&served, "clock2"),
        ["clock2__get_current_time", "clock2__convert_time"]
    );
    let (client, _) = connect(&served.url).await;
    call(&client, "load_tool_group", json!({"group_name": "clock2"})).await;
    let now = call(
        &client,
        "clock2__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
    served.stop().await;

    // Appending a third server that exposes the same names renames nothing.
    let mut third = stdio("clock3", peers.venv_bin.join("mcp-server-time"), &[]);
    third.startup = Startup::Eager;
    let served = serve_default(root.path(), vec![first, second, third]).await;
    assert_eq!(
        exposed(&served, "clock"),
        ["get_current_time", "convert_time"]
    );
    assert_eq!(
        exposed(&served, "clock2"),
        ["clock2__get_current_time", "clock2__convert_time"]
    );
    assert_eq!(
        exposed(&served, "clock3"),
        ["clock3__get_current_time", "clock3__convert_time"]
    );
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_upstream_keeps_serving() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let mut everything = stdio(
        "everything",
        peers.node_bin.join("mcp-server-everything"),
        &["stdio"],
    );
    everything.call_timeout = Duration::from_secs(1);
    let served = serve_default(root.path(), vec![everything]).await;
    let (client, _) = connect(&served.url).await;
    load(&client, "everything").await;

    let slow = call(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 20, "steps": 5}),
    )
    .await;
    assert!(is_error(&slow));
    assert_eq!(
        text(&slow),
        "MCP server 'everything' did not answer 'trigger-long-running-operation' within 1s; the call was cancelled"
    );
    let echoed = call(&client, "echo", json!({"message": "still here"})).await;
    assert!(!is_error(&echoed), "{}", text(&echoed));
    assert!(text(&echoed).contains("still here"), "{}", text(&echoed));
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn an_upstream_list_change_reaches_the_sessions_that_loaded_it() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/changing_server.py");
    let changing = stdio(
        "changing",
        peers.venv_bin.join("python"),
        &[fixture.to_str().unwrap()],
    );
    let served = serve_default(root.path(), vec![changing]).await;
    let (loader, loader_events) = connect(&served.url).await;
    let (bystander, bystander_events) = connect(&served.url).await;
    call(
        &loader,
        "load_tool_group",
        json!({"group_name": "changing"}),
    )
    .await;
    loader_events.wait_for_list_changed(1).await;
    assert_eq!(tool_names(&bystander).await, CORE);

    let added = call(&loader, "add_tool", json!({"name": "shout"})).await;
    assert_eq!(text(&added), "added shout");
    loader_events.wait_for_list_changed(2).await;
    assert_eq!(
        tool_names(&loader).await,
        [&CORE[..], &["echo", "add_tool", "sleep", "shout"]].concat()
    );
    let shouted = call(&loader, "shout", json!({"message": "hi"})).await;
    assert_eq!(text(&shouted), "shout: hi");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        bystander_events.list_changed(),
        0,
        "the bystander never loaded the group"
    );
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream_too() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let marker = root.path().join("cancelled");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/changing_server.py");
    let mut changing = stdio(
        "changing",
        peers.venv_bin.join("python"),
        &[fixture.to_str().unwrap()],
    );
    if let UpstreamTransport::Stdio { env, .. } = &mut changing.transport {
        env.insert("FIXTURE_CANCEL_FILE".into(), marker.display().to_string());
    }
    let served = serve_default(root.path(), vec![changing]).await;
    let (client, _) = connect(&served.url).await;
    call(
        &client,
        "load_tool_group",
        json!({"group_name": "changing"}),
    )
    .await;

    // The client gives up after half a second; dropping the request cancels it.
    let params = rmcp::model::CallToolRequestParams::new("sleep")
        .with_arguments(json!({"seconds": 30}).as_object().unwrap().clone());
    let gave_up = tokio::time::timeout(Duration::from_millis(500), client.call_tool(params)).await;
    assert!(gave_up.is_err());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream never heard of the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "cancelled");
    // The upstream still serves.
    let echoed = call(&client, "echo", json!({"message": "after"})).await;
    assert_eq!(text(&echoed), "echo: after");
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn names_follow_the_configuration_not_the_load_order() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let first = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    let second = stdio("clock2", peers.venv_bin.join("mcp-server-time"), &[]);
    let served = serve_default(root.path(), vec![first, second]).await;
    let (client, _) = connect(&served.url).await;

    // The later upstream is loaded first; it still gets the qualified names.
    let loaded = call(&client, "load_tool_group", json!({"group_name": "clock2"})).await;
    assert!(
        text(&loaded).contains("- clock2__get_current_time: "),
        "{}",
        text(&loaded)
    );
    let loaded = call(&client, "load_tool_group", json!({"group_name": "clock"})).await;
    assert!(
        text(&loaded).contains("- get_current_time: "),
        "{}",
        text(&loaded)
    );
    let now = call(&client, "get_current_time", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn a_load_sends_one_list_changed_even_when_the_server_announces_changes() {
    // server-everything announces a tool-list change as it starts.
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let everything = stdio(
        "everything",
        peers.node_bin.join("mcp-server-everything"),
        &["stdio"],
    );
    let served = serve_default(root.path(), vec![everything]).await;
    let (client, recorder) = connect(&served.url).await;
    call(
        &client,
        "load_tool_group",
        json!({"group_name": "everything"}),
    )
    .await;
    recorder.wait_for_list_changed(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(recorder.list_changed(), 1);
    // Stop the upstreams now, so no child process outlives the test.
    served.stop().await;
}

#[tokio::test]
async fn a_stdio_upstream_sees_only_a_safe_environment_and_what_it_inherits() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let everything = |name: &str, inherit: Vec<String>| {
        let mut config = stdio(name, peers.node_bin.join("mcp-server-everything"), &[]);
        if let UpstreamTransport::Stdio { inherit_env, .. } = &mut config.transport {
            *inherit_env = inherit;
        }
        config
    };
    // Cargo gives every test process CARGO_MANIFEST_DIR; it stands for a
    // secret of the gateway's environment here.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let served = serve_default(
        root.path(),
        vec![
            everything("plain", Vec::new()),
            everything("trusted", vec!["CARGO_MANIFEST_DIR".into()]),
        ],
    )
    .await;
    let (client, _) = connect(&served.url).await;
    for group in ["plain", "trusted"] {
        let loaded = call(&client, "load_tool_group", json!({"group_name": group})).await;
        assert!(!is_error(&loaded), "{}", text(&loaded));
    }
    let env = |tool: &str| {
        let client = &client;
        let tool = tool.to_owned();
        async move { text(&call(client, &tool, json!({})).await) }
    };
    let plain = env("get-env").await;
    assert!(plain.contains("\"PATH\""), "{plain}");
    assert!(!plain.contains("CARGO_MANIFEST_DIR"), "{plain}");
    let trusted = env("trusted__get-env").await;
    assert!(trusted.contains("CARGO_MANIFEST_DIR"), "{trusted}");
    served.stop().await;
}

#[tokio::test]
async fn a_missing_working_directory_is_named_not_blamed_on_the_command() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let mut config = stdio("lost", peers.node_bin.join("mcp-server-everything"), &[]);
    if let UpstreamTransport::Stdio { cwd, .. } = &mut config.transport {
        *cwd = Some(root.path().join("no-such-dir"));
    }
    let served = serve_default(root.path(), vec![config]).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "lost"})).await;
    assert!(is_error(&loaded));
    assert!(
        text(&loaded).contains("no-such-dir` is not a directory that exists"),
        "{}",
        text(&loaded)
    );
    served.stop().await;
}

#[tokio::test]
async fn a_password_in_an_upstream_url_never_reaches_a_client() {
    let root = tempfile::tempdir().unwrap();
    // A port nothing listens on: the start fails and says why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut config = stdio("remote", PathBuf::from("unused"), &[]);
    config.transport = UpstreamTransport::Http {
        url: format!("http://alice:pa55-w0rd-secret@127.0.0.1:{port}/mcp"),
        headers: Default::default(),
    };
    config.startup_timeout = Duration::from_secs(5);
    let served = serve_default(root.path(), vec![config]).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "remote"})).await;
    assert!(is_error(&loaded));
    assert!(
        !text(&loaded).contains("pa55-w0rd-secret"),
        "{}",
        text(&loaded)
    );
    assert!(text(&loaded).contains("***@127.0.0.1"), "{}", text(&loaded));
    served.stop().await;
}

/// A stdio server that writes `script`'s lines on stderr (through `sh`).
fn shell(name: &str, script: &str) -> UpstreamConfig {
    stdio(name, PathBuf::from("sh"), &["-c", script])
}

#[tokio::test]
async fn a_server_that_dies_at_start_is_reported_with_its_last_stderr_lines() {
    let root = tempfile::tempdir().unwrap();
    let mut config = shell(
        "tls",
        "echo 'fetching the server' >&2; \
         echo \"error: invalid peer certificate: UnknownIssuer (token $API_TOKEN)\" >&2; exit 1",
    );
    if let UpstreamTransport::Stdio { env, .. } = &mut config.transport {
        env.insert("API_TOKEN".into(), "tok-0123456789".into());
    }
    let served = serve_default(root.path(), vec![config]).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "tls"})).await;
    assert!(is_error(&loaded));
    // The cause is in the error, its secret is not.
    assert_eq!(
        text(&loaded),
        "MCP server 'tls' failed to start: `sh` ended before completing the MCP handshake; \
         stderr: fetching the server\nerror: invalid peer certificate: UnknownIssuer (token ***)"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_is_reported_with_what_it_said() {
    let root = tempfile::tempdir().unwrap();
    let mut config = shell(
        "stuck",
        "echo 'waiting for the package index' >&2; exec sleep 60",
    );
    config.startup_timeout = Duration::from_secs(1);
    let served = serve_default(root.path(), vec![config]).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "stuck"})).await;
    assert!(is_error(&loaded));
    assert_eq!(
        text(&loaded),
        "MCP server 'stuck' failed to start: `sh` did not complete the MCP handshake within 1s \
         (startup_timeout_seconds); stderr: waiting for the package index"
    );
    served.stop().await;
}

#[tokio::test]
async fn each_start_of_an_upstream_is_reported_to_its_progress() {
    use std::sync::{Arc, Mutex};
    use toolgate_tools::{Progress, Step};

    let root = tempfile::tempdir().unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&steps);
    let progress = Progress::new(move |step| {
        let seen = match step {
            Step::Starting { source } => format!("starting {source}"),
            Step::Started { source } => format!("started {source}"),
            other => format!("{other:?}"),
        };
        heard.lock().unwrap().push(seen);
    });
    let mut lazy = shell("lazy", "exit 1");
    let mut eager = shell("eager", "exit 1");
    eager.startup = Startup::Eager;
    for config in [&mut lazy, &mut eager] {
        config.progress = Some(progress.clone());
    }
    let served = serve_default(root.path(), vec![lazy, eager]).await;
    // Both start with the gateway: the lazy one too, as it comes first
    // (the tools of those listed before an eager one are listed first).
    assert_eq!(
        *steps.lock().unwrap(),
        [
            "starting lazy",
            "started lazy",
            "starting eager",
            "started eager"
        ]
    );
    served.stop().await;
}
