//! The outputs of docs/ that take a session to produce: `toolgate chat`
//! against a scripted model (commands.md), and the rate-limit error and the
//! audit line a named client's calls leave (team.md). See `doc_blocks.rs`
//! for how a block is compared.

use std::io::Write;
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};

use super::doc_blocks::{assert_shows, shown};

/// `output` of an interactive session as a terminal shows it: each prompt
/// `> ` (written on stderr, with no line end) followed by the line typed,
/// which stdin, not being a terminal, does not echo. The prompt left when
/// stdin ends is not shown.
fn transcript(output: &str, typed: &[&str]) -> String {
    let mut typed = typed.iter();
    let mut shown = String::new();
    let mut ended = false;
    for line in output.split_inclusive('\n') {
        let mut line = line;
        while let Some(after) = line.strip_prefix("> ") {
            match typed.next() {
                Some(input) => shown.push_str(&format!("> {input}\n")),
                None => ended = true,
            }
            line = after;
        }
        if !(ended && line.trim().is_empty()) {
            shown.push_str(line);
        }
    }
    shown
}

#[tokio::test]
async fn a_chat_session_reads_as_commands_md_shows() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    let project = home.join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "hello from notes\n").unwrap();
    // The model's turns; the provider's token counts are the page's.
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call("c1", "files_read", json!({"path": "notes.txt"}))
            .with_usage(1718, 18),
        ScriptedTurn::text("It says \"hello from notes\".").with_usage(1793, 9),
    ] {
        server.push(turn.reply(Wire::OpenAi, true));
    }
    // stdout and stderr in one file, in the order they were written.
    let log = home.join("session.log");
    let file = std::fs::File::create(&log).unwrap();
    let typed = ["what does notes.txt say?", "/tokens"];
    // The page's local server is the scripted one.
    let base_url = format!("{}/v1", server.url());
    let mut child = super::support::toolgate(&home)
        .current_dir(&project)
        .args(["chat", "--base-url", &base_url, "--model", "llama3.1"])
        .stdin(Stdio::piped())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in typed {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let output = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{output}");
    let session = transcript(&output, &typed);
    assert_shows(
        "chat-session",
        &format!(
            "$ toolgate chat --base-url http://localhost:11434/v1 --model llama3.1\n{session}"
        ),
    );
}

/// A client's calls through a gateway with a rate limit and an audit log:
/// the error of the call beyond the limit, and the audit line of a call.
#[tokio::test]
async fn the_rate_limit_error_and_the_audit_line_read_as_team_md_shows() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let dir = tempfile::tempdir().unwrap();
    let token = "tg_ci-bot-docs-0123456789";
    let hash = toolgate_mcp::TokenHash::of(token).to_hex();
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!(
            "[rate_limits.tools]\nweb = {{ calls = 30, per_seconds = 60 }}\n\n\
             [clients.ci-bot]\ntoken_sha256 = \"{hash}\"\n\n\
             [audit]\npath = \"audit.jsonl\"\n"
        ),
    )
    .unwrap();
    let mut command = super::support::toolgate(dir.path());
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--memory-store",
        "--files-root",
        ".",
    ]);
    let (mut gateway, _, url) =
        tokio::task::spawn_blocking(move || super::support::listening(&mut command))
            .await
            .unwrap();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let client = ().serve(transport).await.unwrap();
    let call = |name: &str, arguments: Value| {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        client.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
    };
    for group in ["time", "web"] {
        call("load_tool_group", json!({"group_name": group}))
            .await
            .unwrap();
    }
    call(
        "time_convert",
        json!({"time": "12:00", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"}),
    )
    .await
    .unwrap();
    // Thirty calls of web pass (each refused at once: a loopback address),
    // the next is beyond the limit.
    let fetch = json!({"action": "fetch", "url": "http://127.0.0.1:9/"});
    for _ in 0..30 {
        call("web", fetch.clone()).await.unwrap();
    }
    let refused = match call("web", fetch).await {
        Err(rmcp::ServiceError::McpError(error)) => serde_json::to_value(error).unwrap(),
        other => panic!("the 31st call was not refused: {other:?}"),
    };
    client.cancel().await.unwrap();
    let _ = gateway.kill();
    let _ = gateway.wait();

    // The seconds to wait depend on when the refused call came: checked,
    // then written as the page writes them. The page's id is its client's.
    let mut shown_error: Value = serde_json::from_str(&shown("rate-limit-error").text).unwrap();
    let wait = refused["data"]["retry_after_seconds"].as_f64().unwrap();
    assert!(wait > 0.0 && wait <= 2.0, "{refused}");
    let mut refused = refused;
    refused["data"]["retry_after_seconds"] =
        shown_error["error"]["data"]["retry_after_seconds"].clone();
    let message = refused["message"].as_str().unwrap().to_owned();
    let (before, _) = message.rsplit_once("retry in ").unwrap();
    let shown_message = shown_error["error"]["message"].as_str().unwrap().to_owned();
    let (_, shown_wait) = shown_message.rsplit_once("retry in ").unwrap();
    refused["message"] = json!(format!("{before}retry in {shown_wait}"));
    assert_eq!(refused, shown_error["error"].take());

    // The audit line of time_convert: its time, session, duration and the
    // hash of its arguments differ at each run; their forms are checked.
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let mut line: Value = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["tool"] == "time_convert")
        .unwrap_or_else(|| panic!("no audit line of time_convert:\n{audit}"));
    let shown_line: Value = serde_json::from_str(&shown("audit-line").text).unwrap();
    assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");
    assert!(line["duration_ms"].as_f64().unwrap() >= 0.0, "{line}");
    assert_eq!(
        line["arguments_sha256"].as_str().unwrap().len(),
        64,
        "{line}"
    );
    assert_eq!(line["session"].as_str().unwrap().len(), 36, "{line}");
    for varying in ["time", "session", "duration_ms", "arguments_sha256"] {
        line[varying] = shown_line[varying].clone();
    }
    assert_eq!(line, shown_line);
}
