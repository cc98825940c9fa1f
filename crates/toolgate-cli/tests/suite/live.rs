//! `toolgate eval --live`: a dataset's conversations played through the
//! agent loop against a model at an endpoint (a scripted one here), each
//! task succeeding when every tool of its ground truth ran.

use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};

use super::replay::write_multi_turn;
use super::support::{run, text, toolgate};

#[tokio::test]
async fn eval_live_plays_each_task_against_the_endpoint_and_reports_its_success() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("multi");
    std::fs::create_dir(&data).unwrap();
    write_multi_turn(&data);
    let server = ScriptedServer::start().await.unwrap();
    // Conversation `a`: files_list and files_read, then mail_send, then
    // files_read again. The model does the first turn, and answers the
    // others without a call.
    let wire = Wire::OpenAi;
    for (name, arguments) in [
        ("load_tool_group", json!({"group_name": "files"})),
        ("files_list", json!({"x": "reports"})),
        ("files_read", json!({"x": "q1"})),
    ] {
        server.push(
            ScriptedTurn::tool_call("c", name, arguments)
                .with_usage(100, 10)
                .reply(wire, false),
        );
    }
    for answer in ["Read.", "Sent.", "Read again."] {
        server.push(
            ScriptedTurn::text(answer)
                .with_usage(100, 10)
                .reply(wire, false),
        );
    }
    let mut command = toolgate(dir.path());
    command
        .args([
            "eval",
            "--live",
            "multi",
            "--tasks",
            "1",
            "--policy",
            "tool-list",
        ])
        .args([
            "--provider",
            "openai",
            "--model",
            "scripted-model",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .args(["--json", "live.json"])
        .env("TOOLGATE_API_KEY", "test-key")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = run(command, "").await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "toolgate eval --live: openai scripted-model at {}/v1 (native tool calls, ",
            server.url()
        )),
        "{stderr}"
    );
    // Each task's outcome as it finishes, before the report.
    assert!(
        stderr.contains(
            "  chat, schemas in the tool list 1/1 a: not done (called load_tool_group, \
             files_list, files_read; needed files_list, files_read, mail_send), 6 model calls, "
        ),
        "{stderr}"
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("## multi: scripted-model played live\n\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| chat, schemas in the tool list | 1 | 0 (0%) | 0-79% | 600 (0) | 60 | 6.0 | "
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("- a: missing mail_send; ran load_tool_group, files_list, files_read\n"),
        "{stdout}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["load_tool_group", "unload_tool_group"]);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("live.json")).unwrap())
            .unwrap();
    let task = &json[0]["runs"][0]["tasks"][0];
    assert_eq!(
        (
            &task["conversation"],
            &task["turns"],
            &task["gold"],
            &task["succeeded"]
        ),
        (
            &json!("a"),
            &json!(3),
            &json!(["files_list", "files_read", "mail_send"]),
            &json!(false)
        )
    );
    assert_eq!(
        json[0]["runs"][0]["policy"],
        "chat, schemas in the tool list"
    );
}
