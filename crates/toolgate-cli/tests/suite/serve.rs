//! `toolgate serve` and `toolgate catalog --config`, run as a user runs them:
//! the refusals at the start, the transports (stdio, HTTP, a JavaScript tool
//! over each), a store that outlives the process, a clean stop, and the
//! upstream figures.

use std::process::Command;

use super::gateways::{
    HttpGateway, StdioGateway, call_over, serve_in, serve_logged, stderr, toolgate, until_logged,
    write_mathx,
};

#[test]
fn a_non_loopback_address_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolgate(
        &["serve", "--memory-store", "--listen", "0.0.0.0:0"],
        dir.path(),
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("--listen 0.0.0.0:0 is reachable from other machines: set TOOLGATE_TOKEN or --token-file"),
        "{message}"
    );
}

#[test]
fn a_short_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "short\n").unwrap();
    let output = toolgate(
        &[
            "serve",
            "--memory-store",
            "--listen",
            "0.0.0.0:0",
            "--token-file",
            "token",
        ],
        dir.path(),
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("the bearer token is 5 characters long; use at least 16"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_bad_config_names_the_file_and_the_upstream() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[[upstream]]\nname = \"git\"\n",
    )
    .unwrap();
    // ./toolgate.toml is read by default.
    let output = toolgate(
        &["serve", "--memory-store", "--listen", "127.0.0.1:0"],
        dir.path(),
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(
            "toolgate.toml:1: upstream 'git': needs `command` (stdio) or `url` (streamable HTTP)"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_timeout_too_large_for_a_duration_is_refused_not_a_panic() {
    let serve = ["serve", "--memory-store", "--listen", "127.0.0.1:0"].as_slice();
    let chat = ["chat", "--memory-store", "-m", "hi"].as_slice();
    for (config, command, expected) in [
        (
            "[[upstream]]\nname = \"git\"\ncommand = \"git-mcp\"\ntimeout_seconds = 1e300\n",
            serve,
            "upstream 'git': `timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got 1e300",
        ),
        (
            "[web]\ntimeout_seconds = 1e300\n",
            serve,
            "`timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got 1e300",
        ),
        (
            "[model]\nprovider = \"openai\"\nmodel = \"m\"\nread_timeout_seconds = 1e300\n",
            chat,
            "read_timeout_seconds must be a positive number of seconds, at most 86400 (a day), not 1e300",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolgate.toml"), config).unwrap();
        let output = toolgate(command, dir.path());
        assert_ne!(output.status.code(), Some(101), "panicked on {config}");
        assert!(!output.status.success(), "{config}");
        assert!(
            stderr(&output).contains(expected),
            "{config}\n{}",
            stderr(&output)
        );
    }
}

#[test]
fn catalog_with_a_config_lists_the_upstreams_and_the_turn_one_saving() {
    let dir = tempfile::tempdir().unwrap();
    let server = super::support::peers().venv_bin.join("mcp-server-time");
    std::fs::write(
        dir.path().join("servers.json"),
        format!(
            r#"{{"mcpServers": {{"clock": {{"command": "{}"}}}}}}"#,
            server.display()
        ),
    )
    .unwrap();
    let output = toolgate(
        &[
            "catalog",
            "--mcp-config",
            "servers.json",
            "--no-builtins",
            "--json",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["tools"], 2, "{report}");
    assert_eq!(report["groups"][0]["name"], "clock", "{report}");
    let core: Vec<&str> = report["core_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool.as_str().unwrap())
        .collect();
    assert_eq!(core, ["load_tool_group", "unload_tool_group", "call_tool"]);
}

#[test]
fn stdio_answers_initialize_on_stdout() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let mut child = super::support::toolgate(dir.path())
        .args(["serve", "--stdio", "--memory-store", "--no-builtins"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = lines.send(line);
    });
    let answer = answers.recv_timeout(std::time::Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer.expect("no answer to initialize on stdout");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "toolgate",
        "{answer}"
    );
}

#[test]
fn sigterm_stops_the_gateway_cleanly_and_checkpoints_its_store() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _) = serve_in(dir.path(), &["--store", "sessions.db"]);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "exit after SIGTERM: {status:?}");
    // The write-ahead log was folded into the database file.
    let wal = dir.path().join("sessions.db-wal");
    let wal_bytes = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(
        wal_bytes,
        0,
        "{} still holds {wal_bytes} bytes",
        wal.display()
    );
}

#[test]
fn stdio_runs_a_javascript_tool_of_the_tools_folder() {
    let dir = tempfile::tempdir().unwrap();
    write_mathx(dir.path());
    let mut gateway = StdioGateway::start(dir.path(), &["--no-builtins"]);
    let init = gateway.request(
        1,
        "initialize",
        serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "toolgate", "{init}");
    gateway.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let listed = gateway.request(2, "tools/list", serde_json::json!({}));
    let load = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "load_tool_group")
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        load["description"]
            .as_str()
            .unwrap()
            .contains("- mathx: Arithmetic in JavaScript"),
        "{load}"
    );

    let loaded = gateway.request(
        3,
        "tools/call",
        serde_json::json!({"name": "load_tool_group", "arguments": {"group_name": "mathx"}}),
    );
    assert_ne!(loaded["result"]["isError"], true, "{loaded}");
    let sum = gateway.request(
        4,
        "tools/call",
        serde_json::json!({"name": "mathx_add", "arguments": {"a": 2, "b": 40}}),
    );
    assert_ne!(sum["result"]["isError"], true, "{sum}");
    assert_eq!(
        sum["result"]["structuredContent"],
        serde_json::json!({"sum": 42}),
        "{sum}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_runs_a_javascript_tool_of_the_tools_folder() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;

    let dir = tempfile::tempdir().unwrap();
    write_mathx(dir.path());
    let gateway = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || HttpGateway::start(&dir)
    })
    .await
    .unwrap();
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(gateway.url.clone()))
            .await
            .unwrap();

    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["load_tool_group", "unload_tool_group", "call_tool"]);
    let listing = listed[0].description.as_deref().unwrap();
    assert!(
        listing.contains("- mathx: Arithmetic in JavaScript"),
        "{listing}"
    );

    let loaded = call_over(
        &client,
        "load_tool_group",
        serde_json::json!({"group_name": "mathx"}),
    )
    .await;
    assert_ne!(loaded["isError"], true, "{loaded}");
    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "load_tool_group",
            "unload_tool_group",
            "call_tool",
            "mathx_add",
            "mathx_divide"
        ]
    );

    let sum = call_over(&client, "mathx_add", serde_json::json!({"a": 2, "b": 40})).await;
    assert_ne!(sum["isError"], true, "{sum}");
    assert_eq!(
        sum["structuredContent"],
        serde_json::json!({"sum": 42}),
        "{sum}"
    );
    let quotient = call_over(&client, "mathx_divide", serde_json::json!({"a": 1, "b": 4})).await;
    assert_eq!(
        quotient["content"],
        serde_json::json!([{"type": "text", "text": "0.25"}]),
        "{quotient}"
    );
    let thrown = call_over(&client, "mathx_divide", serde_json::json!({"a": 1, "b": 0})).await;
    assert_eq!(thrown["isError"], true, "{thrown}");
    assert_eq!(
        thrown["content"],
        serde_json::json!([{
            "type": "text",
            "text": "Tool 'mathx_divide' failed: RangeError: division by zero (mathx.js, line 5)"
        }]),
        "{thrown}"
    );
    client.cancel().await.unwrap();
}

/// A session kept in PostgreSQL (the server `scripts/test` starts) comes back
/// with its loaded groups in a new gateway process, as from SQLite.
#[test]
fn a_session_in_postgres_survives_a_restart_of_the_gateway() {
    let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test")
    });
    let dir = tempfile::tempdir().unwrap();
    let session = format!("cli-restart-{}", std::process::id());
    let args = ["--store", url.as_str(), "--session", session.as_str()];
    let initialize = |gateway: &mut StdioGateway| {
        let init = gateway.request(
            1,
            "initialize",
            serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "toolgate", "{init}");
        gateway.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    };
    let names = |listed: &serde_json::Value| -> Vec<String> {
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    {
        let mut gateway = StdioGateway::start_with(dir.path(), &args);
        initialize(&mut gateway);
        let before = names(&gateway.request(2, "tools/list", serde_json::json!({})));
        assert!(
            !before.iter().any(|name| name.starts_with("time")),
            "{before:?}"
        );
        let loaded = gateway.request(
            3,
            "tools/call",
            serde_json::json!({"name": "load_tool_group", "arguments": {"group_name": "time"}}),
        );
        assert_ne!(loaded["result"]["isError"], true, "{loaded}");
    }
    // The second gateway finds the database in its configuration instead,
    // with the password (the server trusts local connections, so any
    // password does) in a file beside it.
    std::fs::write(dir.path().join("pg-password"), "unused-secret\n").unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!("[store]\nurl = \"{url}\"\npassword_file = \"pg-password\"\npool_size = 2\n"),
    )
    .unwrap();
    let mut gateway = StdioGateway::start_with(dir.path(), &["--session", session.as_str()]);
    initialize(&mut gateway);
    let after = names(&gateway.request(2, "tools/list", serde_json::json!({})));
    assert!(
        after.iter().any(|name| name.starts_with("time")),
        "{after:?}"
    );
}

/// The banner names the running binary by its absolute path for clients
/// that start their servers themselves: `toolgate` need not be on their PATH
/// (`desktop_entry.rs` starts one with what else it gives them).
#[test]
fn the_banner_gives_stdio_clients_the_binarys_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _url) = serve_logged(dir.path(), "127.0.0.1:0");
    let banner = until_logged(dir.path(), "Press Ctrl-C to stop.");
    child.kill().unwrap();
    child.wait().unwrap();
    let binary = env!("CARGO_BIN_EXE_toolgate");
    assert!(
        banner.contains(&format!(
            "stdio clients:   command `{binary} serve --stdio --no-builtins --memory-store`"
        )),
        "{banner}"
    );
    let desktop = banner
        .lines()
        .find_map(|line| line.trim().strip_prefix("Claude Desktop:"))
        .unwrap_or_else(|| panic!("no Claude Desktop line:\n{banner}"));
    let config: serde_json::Value = serde_json::from_str(desktop.trim()).unwrap();
    assert_eq!(
        config["mcpServers"]["toolgate"],
        serde_json::json!({
            "command": binary,
            "args": ["serve", "--stdio", "--no-builtins", "--memory-store"]
        })
    );
}
