//! What a user meets on a first run, as they run it: an upstream that fails
//! to start says why in plain words in the banner, on the status page and
//! to the model, a bad upstream name or `[routing]` key
//! is refused with its file and line whatever the command, an address in
//! use suggests `--listen`, and `toolgate chat` without a key says where a
//! key goes before it tries the network.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use toolgate_llm::scripted::{ScriptedServer, Wire, error_reply};

/// `toolgate` in `dir`, as on a fresh machine (no key, no token, no model).
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = super::support::toolgate(dir);
    command.args(args).stdin(Stdio::null());
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A directory holding `toolgate.toml` with `config`.
fn project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.toml"), config).unwrap();
    dir
}

const SERVE: &[&str] = &[
    "serve",
    "--memory-store",
    "--no-builtins",
    "--listen",
    "127.0.0.1:0",
];

/// `toolgate serve` once it listens, with what it printed so far.
struct Serving {
    child: Child,
    printed: String,
}

impl Serving {
    fn start(dir: &Path) -> Self {
        let (child, printed, _) = super::support::listening(&mut command(dir, SERVE));
        Self { child, printed }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_banner_says_why_upstreams_failed_even_one_that_starts_on_first_load() {
    // The lazy one is started anyway, to list the tools of the eager one
    // after it (their names must not change once given).
    let dir = project(
        r#"
[[upstream]]
name = "lazy"
command = "sh"
args = ["-c", "echo 'ModuleNotFoundError: No module named mcp' >&2; exit 3"]

[[upstream]]
name = "eager"
command = "sh"
args = ["-c", "echo 'error: invalid peer certificate: UnknownIssuer' >&2; echo 'hint: set SSL_CERT_FILE' >&2; exit 1"]
eager = true
"#,
    );
    let serving = Serving::start(dir.path());
    let banner = &serving.printed;
    let line = |group: &str| {
        banner
            .lines()
            .position(|line| line.starts_with(&format!("    - {group}: ")))
            .unwrap_or_else(|| panic!("no line for {group}:\n{banner}"))
    };
    let lines: Vec<&str> = banner.lines().collect();
    assert_eq!(
        lines[line("lazy")],
        "    - lazy: FAILED: `sh` ended before completing the MCP handshake; stderr: \
         ModuleNotFoundError: No module named mcp (tried again on first load)",
        "{banner}"
    );
    let eager = line("eager");
    assert_eq!(
        lines[eager],
        "    - eager: FAILED: MCP server 'eager' failed to start: `sh` ended before completing \
         the MCP handshake; stderr: error: invalid peer certificate: UnknownIssuer",
        "{banner}"
    );
    // Its next lines stay under its group.
    assert_eq!(
        lines[eager + 1],
        "        hint: set SSL_CERT_FILE",
        "{banner}"
    );
}

#[test]
fn an_upstream_name_with_a_space_is_refused_with_its_file_and_line() {
    let dir =
        project("[model]\nmodel = \"m\"\n\n[[upstream]]\nname = \"my server\"\ncommand = \"x\"\n");
    // On stdio with nothing on stdin, a gateway that starts ends at once.
    let output = run(
        dir.path(),
        &["serve", "--stdio", "--memory-store", "--no-builtins"],
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains(
            "toolgate.toml:4: upstream 'my server': the name \"my server\" has the character ' ': \
             an upstream's name may hold only letters, digits, `_`, `-` and `.`"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn routing_names_a_group_of_the_catalog_whatever_the_command() {
    let dir = project("[model]\nmodel = \"m\"\n\n[routing]\nrecovery_groups = [\"fils\"]\n");
    let expected = "toolgate.toml:5: [routing]: recovery_groups names group 'fils', which is \
                    not in the catalog. Known groups: ";
    // On stdio with nothing on stdin, a gateway that starts ends at once.
    let serve = ["serve", "--stdio", "--memory-store"].as_slice();
    let serve_route = [serve, &["--route"]].concat();
    // A server on this machine needs no key; the catalog is checked before
    // any request.
    let chat = [
        "chat",
        "--memory-store",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-m",
        "hi",
    ]
    .as_slice();
    let route = ["route", "what time is it"].as_slice();
    for args in [serve, &serve_route, chat, route] {
        let output = run(dir.path(), args);
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr(&output).contains(expected),
            "{args:?}\n{}",
            stderr(&output)
        );
    }
    // A setting that needs no catalog is checked as the file is read, by
    // every command.
    let dir = project("[routing]\n\nthresholds = { high = 0.2, medium = 0.9 }\n");
    let catalog = run(dir.path(), &["catalog", "--config", "toolgate.toml"]);
    assert!(
        stderr(&catalog).contains(
            "toolgate.toml:3: [routing]: thresholds must satisfy 0 <= medium <= high <= 1"
        ),
        "{}",
        stderr(&catalog)
    );
}

#[test]
fn an_address_in_use_suggests_another_with_listen() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let listen = address.to_string();
    let output = run(
        dir.path(),
        &[
            "serve",
            "--memory-store",
            "--no-builtins",
            "--listen",
            &listen,
        ],
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(&format!("listening on {listen}: ")),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "(another process listens there: stop it, or give another address with --listen \
             <addr>, e.g. --listen 127.0.0.1:{})",
            address.port() + 1
        )),
        "{message}"
    );
}

#[test]
fn chat_without_a_key_says_where_one_goes_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let output = command(dir.path(), &["chat", "--memory-store", "-m", "hi"])
        .env("TOOLGATE_MODEL", "gpt-test")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(
            "no API key for openai at https://api.openai.com/v1: set OPENAI_API_KEY (or \
             TOOLGATE_API_KEY), or name a key file or variable with `api_key_file` or \
             `api_key_env` under [model] in toolgate.toml"
        ),
        "{message}"
    );
    assert!(!message.contains("cannot reach"), "{message}");
}

#[tokio::test]
async fn a_local_server_needs_no_key_and_a_refusal_reads_as_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start().await.unwrap();
    server.push(error_reply(
        Wire::OpenAi,
        401,
        "Incorrect API key provided: none. You can find your API key at https://platform.openai.com/account/api-keys.",
    ));
    let base = format!("{}/v1", server.url());
    let mut chat = command(
        dir.path(),
        &["chat", "--memory-store", "--no-builtins", "-m", "hi"],
    );
    chat.env("TOOLGATE_MODEL", "scripted-model")
        .env("TOOLGATE_BASE_URL", &base);
    let output = tokio::task::spawn_blocking(move || chat.output().unwrap())
        .await
        .unwrap();
    let message = stderr(&output);
    assert!(!output.status.success());
    // The request was sent: a local server goes on without a key.
    assert_eq!(server.requests().len(), 1, "{message}");
    assert!(
        message.contains(
            "account/api-keys. Check the API key (no API key configured: set OPENAI_API_KEY or api_key_file)"
        ),
        "{message}"
    );
    assert!(!message.contains(".."), "{message}");
}

#[test]
fn embedding_tool_texts_reports_each_chunk_and_nothing_once_cached() {
    use std::sync::{Arc, Mutex};
    use toolgate_core::routing::Embeddings;
    use toolgate_tools::{LocalEmbeddings, Progress, Step};

    let model = super::support::peers().embed_model;
    let cache = tempfile::tempdir().unwrap();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&steps);
    let progress = Progress::new(move |step| {
        if let Step::Embedding { done, total } = step {
            heard.lock().unwrap().push((done, total));
        }
    });
    let texts: Vec<String> = (0..150).map(|n| format!("tool number {n}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embeddings = LocalEmbeddings::new(&model, cache.path()).with_progress(progress.clone());
    assert_eq!(embeddings.embed_texts(&texts).unwrap().len(), 150);
    assert_eq!(*steps.lock().unwrap(), [(64, 150), (128, 150), (150, 150)]);
    // Cached now: nothing to embed, nothing reported.
    let again = LocalEmbeddings::new(&model, cache.path()).with_progress(progress);
    assert_eq!(again.embed_texts(&texts).unwrap().len(), 150);
    assert_eq!(steps.lock().unwrap().len(), 3);
}

#[test]
fn progress_is_not_shown_when_stderr_is_not_a_terminal() {
    let model = super::support::peers().embed_model;
    let dir = project(
        "[[upstream]]\nname = \"eager\"\ncommand = \"sh\"\nargs = [\"-c\", \"exit 1\"]\neager = true\n",
    );
    let output = command(dir.path(), &["route", "what time is it"])
        .env("TOOLGATE_EMBED_MODEL", &model)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(!message.contains("starting upstream"), "{message}");
    assert!(!message.contains("embedding tool texts"), "{message}");
    assert!(!message.contains('\r'), "{message}");
}

#[test]
fn an_http_upstream_nothing_listens_at_is_said_in_plain_words_everywhere() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let cause = format!("connection refused at {url}");
    let upstream = format!("[[upstream]]\nname = \"search\"\nurl = \"{url}\"\n");
    // Started with the gateway: the banner and the status page say why not.
    let dir = project(&format!("{upstream}eager = true\n"));
    let serving = Serving::start(dir.path());
    let line = serving
        .printed
        .lines()
        .find(|line| line.starts_with("    - search: "))
        .unwrap_or_else(|| panic!("{}", serving.printed));
    assert_eq!(
        line,
        format!("    - search: FAILED: MCP server 'search' failed to start: {cause}")
    );
    let listening = super::gateways::listening_url(&serving.printed);
    let page = super::gateways::exchange(&listening, "GET / HTTP/1.1\r\n\r\n");
    assert!(
        page.contains(&format!("<td>{cause}; retried in ")),
        "{page}"
    );
    // Started on first load: the model reads it as the load's answer.
    let dir = project(&upstream);
    let mut gateway = super::gateways::StdioGateway::start(dir.path(), &["--no-builtins"]);
    gateway.request(
        1,
        "initialize",
        serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    gateway.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let loaded = gateway.request(
        2,
        "tools/call",
        serde_json::json!({"name": "load_tool_group", "arguments": {"group_name": "search"}}),
    );
    assert_eq!(loaded["result"]["isError"], true, "{loaded}");
    assert_eq!(
        loaded["result"]["content"][0]["text"],
        format!("MCP server 'search' failed to start: {cause}"),
        "{loaded}"
    );
}

#[test]
fn each_failed_upstream_is_warned_of_once_and_an_upstreams_stderr_is_no_warning() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let time = super::support::peers().venv_bin.join("mcp-server-time");
    // The first, lazy and missing, is started before each eager one after
    // it (for its tools' names): once.
    let dir = project(&format!(
        r#"
[[upstream]]
name = "git"
command = "toolgate-no-such-command"

[[upstream]]
name = "memory"
command = "sh"
args = ["-c", "echo 'Knowledge Graph MCP Server running on stdio' >&2; exec {}"]
eager = true

[[upstream]]
name = "search"
url = "http://127.0.0.1:{port}/mcp"
core = true
"#,
        time.display()
    ));
    let serving = Serving::start(dir.path());
    let logged: Vec<&str> = serving
        .printed
        .lines()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        // Without its time stamp.
        .map(|line| {
            line.split_once(' ')
                .map_or(line, |(_, rest)| rest)
                .trim_start()
        })
        .collect();
    assert_eq!(
        logged,
        [
            "WARN toolgate_mcp::upstream: MCP server failed to start: command \
             `toolgate-no-such-command` not found on PATH upstream=git"
                .to_owned(),
            format!(
                "WARN toolgate_mcp::upstream: MCP server failed to start: connection refused at \
                 http://127.0.0.1:{port}/mcp upstream=search"
            ),
        ],
        "{}",
        serving.printed
    );
    assert!(
        serving
            .printed
            .contains("    - memory: 2 tools (upstream, started)\n"),
        "{}",
        serving.printed
    );
}
