//! `toolgate serve` and `toolgate catalog --config`, run as a user runs them:
//! the refusals that protect a user, and the upstream figures.

use std::path::Path;
use std::process::{Command, Output};

fn toolgate(args: &[&str], cwd: &Path) -> Output {
    super::support::toolgate(cwd).args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

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
        &["catalog", "--mcp-config", "servers.json", "--json"],
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

/// Starts `toolgate serve` without the built-in groups on a free port;
/// returns it once it listens, with what it printed so far.
fn serve_in(dir: &Path, extra: &[&str]) -> (std::process::Child, String) {
    serve_listening(dir, &[&["--no-builtins"], extra].concat())
}

/// Starts `toolgate serve` with `args` on a free port; returns it once it
/// listens, with what it printed so far.
fn serve_listening(dir: &Path, args: &[&str]) -> (std::process::Child, String) {
    let (child, printed, _) = super::support::listening(
        super::support::toolgate(dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args),
    );
    (child, printed)
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

/// A `toolgate serve --stdio` child, spoken to one JSON-RPC line at a time.
pub(super) struct StdioGateway {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl StdioGateway {
    /// Starts `toolgate serve --stdio --memory-store` and the `extra`
    /// arguments in `dir`.
    pub(super) fn start(dir: &Path, extra: &[&str]) -> Self {
        let args: Vec<&str> = std::iter::once("--memory-store")
            .chain(extra.iter().copied())
            .collect();
        Self::start_with(dir, &args)
    }

    /// Starts `toolgate serve --stdio` with `args` (a store among them) in
    /// `dir`.
    pub(super) fn start_with(dir: &Path, args: &[&str]) -> Self {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;

        let mut child = super::support::toolgate(dir)
            .args(["serve", "--stdio"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
        }
    }

    pub(super) fn send(&mut self, message: serde_json::Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
    }

    /// Ends the session as a client does, closing stdin, and waits for the
    /// gateway to exit.
    pub(super) fn close(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }

    /// Sends request `id` and waits for its answer (notifications passed
    /// over).
    pub(super) fn request(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `tools/mathx.json` and `tools/mathx.js` into `dir`: a group of
/// two JavaScript tools, one adding, one throwing on line 5.
pub(super) fn write_mathx(dir: &Path) {
    let tools = dir.join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(
        tools.join("mathx.json"),
        r#"[
          {"_meta": true, "display_name": "Math", "description": "Arithmetic in JavaScript"},
          {"name": "mathx_add", "function": "add", "description": "Adds a and b",
           "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
          {"name": "mathx_divide", "function": "divide", "description": "Divides a by b",
           "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}
        ]"#,
    )
    .unwrap();
    std::fs::write(
        tools.join("mathx.js"),
        "async function add({ a, b }) {\n  return { sum: a + b };\n}\nfunction divide({ a, b }) {\n  if (b === 0) throw new RangeError(\"division by zero\");\n  return a / b;\n}\n",
    )
    .unwrap();
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

/// A `toolgate serve` child over HTTP, killed when dropped.
struct HttpGateway {
    child: std::process::Child,
    /// Where its MCP endpoint listens.
    url: String,
}

impl HttpGateway {
    fn start(dir: &Path) -> Self {
        let (child, printed) = serve_in(dir, &["--memory-store"]);
        let url = listening_url(&printed);
        Self { child, url }
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` over an rmcp client, bounded in time.
async fn call_over(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let serde_json::Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), client.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{name} timed out"))
        .unwrap();
    serde_json::to_value(result).unwrap()
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

/// The URL a `serve` banner says it listens on.
fn listening_url(banner: &str) -> String {
    banner
        .lines()
        .find_map(|line| line.strip_prefix("Listening on "))
        .unwrap_or_else(|| panic!("no URL in:\n{banner}"))
        .trim()
        .to_owned()
}

/// One blocking POST of `initialize` to `url`, with `token` when given; the
/// status line.
pub(super) fn initialize_status(url: &str, token: Option<&str>) -> String {
    initialize_response(url, token)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The whole answer to an `initialize` sent with `token`.
fn initialize_response(url: &str, token: Option<&str>) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli-test","version":"0"}}}"#;
    let auth = token.map_or(String::new(), |token| {
        format!("authorization: Bearer {token}\r\n")
    });
    exchange(
        url,
        &format!(
            "POST /mcp HTTP/1.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{auth}content-length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Sends `request` (its first lines, without `host` and `connection`) to
/// the gateway at `url` and reads the whole answer.
fn exchange(url: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (head, rest) = request.split_once("\r\n").unwrap();
    let request = format!("{head}\r\nhost: {address}\r\nconnection: close\r\n{rest}");
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

#[test]
fn a_token_made_by_token_create_lets_its_client_in() {
    let dir = tempfile::tempdir().unwrap();
    let made = toolgate(&["token", "create", "ci-bot"], dir.path());
    assert!(made.status.success(), "{}", stderr(&made));
    let printed = String::from_utf8(made.stdout).unwrap();
    let token = printed
        .lines()
        .find(|line| line.starts_with("tg_"))
        .unwrap_or_else(|| panic!("no token in:\n{printed}"))
        .to_owned();
    let table = &printed[printed.find("[clients.ci-bot]").expect("no table")..];
    std::fs::write(dir.path().join("toolgate.toml"), table).unwrap();

    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    assert!(
        banner.contains("clients:   1 ([clients] in the config)"),
        "{banner}"
    );
    let url = listening_url(&banner);
    assert!(initialize_status(&url, Some(&token)).contains("200"));
    assert!(initialize_status(&url, None).contains("401"));
    assert!(initialize_status(&url, Some("tg_0000000000000000")).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_gateway_signing_clients_in_with_oauth_starts_while_its_issuer_is_away() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[auth.oauth]\nissuer = \"http://127.0.0.1:9/realm\"\n\
         audience = \"https://toolgate.example.com/mcp\"\ndefault_client = \"staff\"\n\n\
         [clients.staff]\n",
    )
    .unwrap();
    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    assert!(
        banner.contains(
            "OAuth:     tokens from http://127.0.0.1:9/realm; its keys are not fetched yet"
        ),
        "{banner}"
    );
    let url = listening_url(&banner);
    assert!(initialize_status(&url, None).contains("401"));
    assert!(initialize_status(&url, Some("not-a-jwt")).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_rate_limit_on_a_tool_no_tool_holds_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[rate_limits.tools]\nno_such_tool = { calls = 1, per_seconds = 60 }\n",
    )
    .unwrap();
    let (mut child, banner) = serve_in(dir.path(), &["--memory-store"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner
            .contains("warning: [rate_limits.tools] names 'no_such_tool', which no tool holds now"),
        "{banner}"
    );
}

#[test]
fn a_policy_naming_no_tool_is_warned_about_but_a_former_tool_name_of_an_action_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!(
            "[clients.alice]\ntoken_sha256 = \"{hash}\"\n\
             deny_tools = [\"web_fetch\", \"web_fetchh\", \"call_tool\", \"time_now\"]\n"
        ),
    )
    .unwrap();
    let (mut child, banner) = serve_listening(dir.path(), &["--memory-store"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner.contains(
            "warning: [clients.alice] deny_tools names 'web_fetchh', which no tool holds now"
        ),
        "{banner}"
    );
    // `web_fetch` is web's fetch action by its former name; call_tool a
    // meta-tool; time_now a tool.
    for known in ["'web_fetch'", "'call_tool'", "'time_now'"] {
        assert!(!banner.contains(&format!("names {known}")), "{banner}");
    }
}

#[test]
fn a_policy_naming_a_group_that_does_not_exist_stops_serve_naming_the_client_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!("[clients.alice]\ntoken_sha256 = \"{hash}\"\nallow_groups = [\"tiem\"]\n"),
    )
    .unwrap();
    let output = toolgate(
        &["serve", "--memory-store", "--listen", "127.0.0.1:0"],
        dir.path(),
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("[clients.alice] allow_groups names 'tiem', which is not a group (groups: time, files, web"),
        "{message}"
    );
}

/// `toolgate serve` on a free port of `listen` with its stderr in
/// `dir/serve.log`; the child and its MCP URL.
pub(super) fn serve_logged(dir: &Path, listen: &str) -> (std::process::Child, String) {
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let child = super::support::toolgate(dir)
        .args([
            "serve",
            "--listen",
            listen,
            "--no-builtins",
            "--memory-store",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let url = until_logged(dir, "Listening on ")
        .lines()
        .find_map(|line| line.strip_prefix("Listening on "))
        .unwrap()
        .trim()
        .to_owned();
    (child, url)
}

/// The log once it holds `text` (at most 20 s).
pub(super) fn until_logged(dir: &Path, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
        if log.contains(text) {
            return log;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in:\n{log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn clients_change_with_the_config_file_and_a_bad_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = |name: &str, token: &str| {
        let hash = toolgate_mcp::TokenHash::of(token).to_hex();
        format!("[clients.{name}]\ntoken_sha256 = \"{hash}\"\n")
    };
    let (alice, bob) = ("tg_alice-reload-0123456789", "tg_bob-reload-0123456789");
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, table("alice", alice)).unwrap();
    let (mut child, url) = serve_logged(dir.path(), "127.0.0.1:0");
    assert!(initialize_status(&url, Some(alice)).contains("200"));
    assert!(initialize_status(&url, Some(bob)).contains("401"));

    // Alice's token is withdrawn and Bob's added, without a restart.
    std::fs::write(&config, table("bob", bob)).unwrap();
    until_logged(dir.path(), "applied 1 client(s)");
    assert!(initialize_status(&url, Some(alice)).contains("401"));
    assert!(initialize_status(&url, Some(bob)).contains("200"));

    // A file that does not check is refused; Bob stays in.
    std::fs::write(&config, "[clients.eve]\ntoken_sha256 = \"short\"\n").unwrap();
    let log = until_logged(dir.path(), "not applied");
    assert!(
        log.contains("[clients.eve]: `token_sha256` is 5 characters long"),
        "{log}"
    );
    assert!(initialize_status(&url, Some(bob)).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_reload_that_would_open_an_exposed_listener_to_anyone_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tg_ops-exposed-0123456789";
    let hash = toolgate_mcp::TokenHash::of(token).to_hex();
    let config = dir.path().join("toolgate.toml");
    std::fs::write(
        &config,
        format!("[clients.ops]\ntoken_sha256 = \"{hash}\"\n"),
    )
    .unwrap();
    // Reachable from other machines, guarded only by the clients' tokens.
    let (mut child, url) = serve_logged(dir.path(), "0.0.0.0:0");
    let url = url.replace("0.0.0.0", "127.0.0.1");
    assert!(initialize_status(&url, None).contains("401"));

    // Taking the last token away would let anyone in: refused.
    std::fs::write(&config, "").unwrap();
    let log = until_logged(dir.path(), "not applied");
    assert!(
        log.contains(
            "no client would have a token: --listen 0.0.0.0:0 is reachable from other machines"
        ),
        "{log}"
    );
    assert!(initialize_status(&url, None).contains("401"));
    assert!(!initialize_status(&url, Some(token)).contains("401"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn oauth_comes_and_goes_with_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tg_staff-oauth-0123456789";
    let hash = toolgate_mcp::TokenHash::of(token).to_hex();
    let staff = format!("[clients.staff]\ntoken_sha256 = \"{hash}\"\n");
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, &staff).unwrap();
    let (mut child, url) = serve_logged(dir.path(), "127.0.0.1:0");
    let metadata = "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n\r\n";
    assert!(exchange(&url, metadata).starts_with("HTTP/1.1 404"));

    // Signing in with OAuth is switched on without a restart.
    std::fs::write(
        &config,
        format!(
            "[auth.oauth]\nissuer = \"http://127.0.0.1:9/realm\"\n\
             audience = \"https://toolgate.example.com/mcp\"\n\n{staff}"
        ),
    )
    .unwrap();
    let log = until_logged(dir.path(), "[auth.oauth] applied");
    assert!(
        log.contains("[auth.oauth] applied: tokens from http://127.0.0.1:9/realm; its keys are not fetched yet"),
        "{log}"
    );
    let published = exchange(&url, metadata);
    assert!(published.starts_with("HTTP/1.1 200"), "{published}");
    assert!(
        published.contains(r#""resource":"https://toolgate.example.com/mcp""#),
        "{published}"
    );
    let challenge = initialize_response(&url, None);
    assert!(
        challenge.to_lowercase().contains(
            "www-authenticate: bearer resource_metadata=\"https://toolgate.example.com/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
    assert!(initialize_status(&url, Some(token)).contains("200"));

    // And off again: the client's own token still works.
    std::fs::write(&config, &staff).unwrap();
    until_logged(dir.path(), "[auth.oauth] removed");
    assert!(exchange(&url, metadata).starts_with("HTTP/1.1 404"));
    assert!(initialize_status(&url, Some(token)).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_removed_with_an_upstream_is_out_before_that_upstreams_calls_finish() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::time::{Duration, Instant};

    let peers = super::support::peers();
    let dir = tempfile::tempdir().unwrap();
    let table = |name: &str, token: &str| {
        let hash = toolgate_mcp::TokenHash::of(token).to_hex();
        format!("[clients.{name}]\ntoken_sha256 = \"{hash}\"\n\n")
    };
    let (alice, bob) = ("tg_alice-order-0123456789", "tg_bob-order-0123456789");
    let everything = format!(
        "[[upstream]]\nname = \"everything\"\ncommand = {:?}\nargs = [\"stdio\"]\n",
        peers.node_bin.join("mcp-server-everything")
    );
    let config = dir.path().join("toolgate.toml");
    std::fs::write(
        &config,
        format!("{}{}{everything}", table("alice", alice), table("bob", bob)),
    )
    .unwrap();
    let (mut child, url) = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || serve_logged(&dir, "127.0.0.1:0")
    })
    .await
    .unwrap();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(bob),
    );
    let client = ().serve(transport).await.unwrap();
    let loaded = call_over(
        &client,
        "load_tool_group",
        serde_json::json!({"group_name": "everything"}),
    )
    .await;
    assert_ne!(loaded["isError"], serde_json::json!(true), "{loaded}");
    // Bob's five-second operation is under way when one save removes both
    // Alice and the server it runs on.
    let long = tokio::spawn(async move {
        let result = call_over(
            &client,
            "trigger-long-running-operation",
            serde_json::json!({"duration": 5, "steps": 5}),
        )
        .await;
        (result, client)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(&config, table("bob", bob)).unwrap();
    let written = Instant::now();

    // Alice is shut out at once, not once the server has drained.
    let shut_out = tokio::task::spawn_blocking(move || {
        while written.elapsed() < Duration::from_secs(3) {
            if initialize_status(&url, Some(alice)).contains("401") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    })
    .await
    .unwrap();
    assert!(shut_out, "Alice still in 3 s after the save");
    // Bob's operation finished on the server being removed.
    let (result, _client) = long.await.unwrap();
    assert_ne!(result["isError"], serde_json::json!(true), "{result}");
    until_logged(dir.path(), "upstreams removed: everything");
    let _ = child.kill();
    let _ = child.wait();
}

/// The banner names the running binary by its absolute path for clients
/// that start their servers themselves: `toolgate` need not be on their PATH.
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
            "stdio clients:   command `{binary} serve --stdio`"
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
        serde_json::json!({"command": binary, "args": ["serve", "--stdio"]})
    );
}
