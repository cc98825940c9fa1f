//! Long conversations in `toolgate chat`, against a scripted provider:
//! compaction (`[agent] compact_at` of `[model] context_window`, what the
//! request after a compaction carries, `/compact`, and a process killed
//! during a compaction, which leaves the conversation untouched or
//! compacted, never half) and `[tools] max_loaded_tokens`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::support::{run, text};
use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{COMPACTION_PROMPT, Message, MessageKind};
use toolgate_llm::scripted::{Recorded, Reply, ScriptedServer, ScriptedTurn, Wire};
use toolgate_store::{ConversationId, ConversationStore, SqliteStore};

/// Compaction past half of a 4,000-token window: a short turn stays far
/// below it, [`long_text`] alone far above.
const COMPACTING: &str = "[model]\ncontext_window = 4000\n\n[agent]\ncompact_at = 0.5\n";

/// `toolgate chat` in `dir` (its SQLite store there) against `server`,
/// speaking OpenAI's wire, without the built-in tools.
fn chat(server: &ScriptedServer, dir: &Path, args: &[&str]) -> Command {
    super::chat::chat(server, Wire::OpenAi, dir, args)
}

/// A project directory with a `pdf` group and `settings` as its
/// `toolgate.toml`.
fn project(settings: &str) -> tempfile::TempDir {
    let dir = super::chat::project();
    std::fs::write(dir.path().join("toolgate.toml"), settings).unwrap();
    dir
}

/// A message far past [`COMPACTING`]'s threshold on its own.
fn long_text() -> String {
    "Here is the report to file, word for word. ".repeat(600)
}

fn reply(turn: ScriptedTurn) -> Reply {
    turn.reply(Wire::OpenAi, true)
}

/// The first turn of each test: `pdf` loaded, then an answer.
fn push_first_turn(server: &ScriptedServer) {
    server.push(reply(ScriptedTurn::tool_call(
        "c1",
        "load_tool_group",
        json!({"group_name": "pdf"}),
    )));
    server.push(reply(ScriptedTurn::text("PDF tools loaded.")));
}

fn tool_names(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Each message of a request as `role:text`, a tool call as
/// `assistant:call:name`.
fn messages(request: &Recorded) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            match m["tool_calls"].as_array() {
                Some(calls) => format!(
                    "{role}:call:{}",
                    calls[0]["function"]["name"].as_str().unwrap()
                ),
                None => format!("{role}:{}", m["content"].as_str().unwrap_or_default()),
            }
        })
        .collect()
}

async fn stored(dir: &Path, conversation: &str) -> Vec<Message> {
    let store = SqliteStore::open(dir.join("conversations.db")).unwrap();
    store
        .messages(&ConversationId::new(conversation))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

#[tokio::test]
async fn a_conversation_past_compact_at_is_compacted_and_the_next_request_carries_the_summary() {
    let dir = project(COMPACTING);
    let server = ScriptedServer::start().await.unwrap();
    push_first_turn(&server);
    let first = run(
        chat(
            &server,
            dir.path(),
            &["--conversation", "k", "-m", "load pdf"],
        ),
        "",
    )
    .await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(!text(&first.stderr).contains("compacted"));

    server.push(reply(ScriptedTurn::text(
        "The user had the PDF tools loaded.",
    )));
    server.push(reply(ScriptedTurn::text("Filed.")));
    let long = long_text();
    let second = run(
        chat(&server, dir.path(), &["--conversation", "k", "-m", &long]),
        "",
    )
    .await;
    let stderr = text(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert_eq!(text(&second.stdout), "Filed.\n");
    assert!(
        stderr.contains("  ⇣ conversation compacted: ") && stderr.contains("still loaded: pdf"),
        "{stderr}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        messages(&requests[2]),
        [
            "user:load pdf".to_owned(),
            "assistant:call:load_tool_group".to_owned(),
            format!(
                "tool:{}",
                requests[2].body["messages"][3]["content"].as_str().unwrap()
            ),
            "assistant:PDF tools loaded.".to_owned(),
            format!("user:{COMPACTION_PROMPT}"),
        ]
    );
    assert_eq!(
        messages(&requests[3]),
        [
            "user:Summary of the conversation so far:\nThe user had the PDF tools loaded."
                .to_owned(),
            format!("user:{long}"),
        ]
    );
    assert_eq!(
        tool_names(&requests[3]),
        ["load_tool_group", "unload_tool_group", "pdf_info"]
    );
}

#[tokio::test]
async fn slash_compact_compacts_on_request_and_keeps_the_loaded_groups() {
    // Off by itself: only the command compacts.
    let dir = project("[agent]\ncompact_at = 0\n");
    let server = ScriptedServer::start().await.unwrap();
    push_first_turn(&server);
    server.push(reply(ScriptedTurn::text("PDF tools are loaded.")));
    server.push(reply(ScriptedTurn::text("Still here.")));
    let output = run(
        chat(&server, dir.path(), &["--conversation", "i"]),
        "load pdf\n/compact\n/compact\nanything?\n/exit\n",
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("/compact"), "{stderr}");
    assert!(
        stderr.contains("  ⇣ conversation compacted: ") && stderr.contains("still loaded: pdf"),
        "{stderr}"
    );
    assert!(stderr.contains("Nothing to compact yet."), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        messages(&requests[3]),
        [
            "user:Summary of the conversation so far:\nPDF tools are loaded.",
            "user:anything?"
        ]
    );
    assert_eq!(tool_names(&requests[3]), tool_names(&requests[1]));
}

#[tokio::test]
async fn a_process_killed_during_a_compaction_leaves_the_conversation_untouched_or_compacted() {
    let dir = project(COMPACTING);
    let server = ScriptedServer::start().await.unwrap();
    push_first_turn(&server);
    let first = run(
        chat(
            &server,
            dir.path(),
            &["--conversation", "k", "-m", "load pdf"],
        ),
        "",
    )
    .await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    let before = stored(dir.path(), "k").await;
    let long = long_text();

    // Killed while the summary is written: untouched.
    server.push(Reply::hang());
    let mut child = chat(&server, dir.path(), &["--conversation", "k", "-m", &long])
        .spawn()
        .unwrap();
    let requests = tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(3))
        .await
        .unwrap();
    assert_eq!(
        messages(&requests[2]).last().unwrap(),
        &format!("user:{COMPACTION_PROMPT}")
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(stored(dir.path(), "k").await, before);

    // Killed after the summary, during the turn's model call: compacted,
    // with the new message after the record.
    server.push(reply(ScriptedTurn::text(
        "The user had the PDF tools loaded.",
    )));
    server.push(Reply::hang());
    let mut child = chat(&server, dir.path(), &["--conversation", "k", "-m", &long])
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(5))
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let after = stored(dir.path(), "k").await;
    assert_eq!(after[..before.len()], before[..]);
    let kinds: Vec<MessageKind> = after[before.len()..].iter().map(|m| m.kind).collect();
    assert_eq!(kinds, [MessageKind::Compaction, MessageKind::User]);

    // Resumed: from the summary, with the groups it had.
    server.push(reply(ScriptedTurn::text("Filed.")));
    let resumed = run(
        chat(&server, dir.path(), &["--conversation", "k"]),
        "/resume\n/exit\n",
    )
    .await;
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let requests = server.requests();
    let last = requests.last().unwrap();
    assert_eq!(
        messages(last),
        [
            "user:Summary of the conversation so far:\nThe user had the PDF tools loaded."
                .to_owned(),
            format!("user:{long}"),
        ]
    );
    assert_eq!(
        tool_names(last),
        ["load_tool_group", "unload_tool_group", "pdf_info"]
    );
}

#[tokio::test]
async fn compact_at_outside_0_and_1_is_refused_with_its_line() {
    let dir = project("[agent]\nname = \"a\"\ncompact_at = 1.5\n");
    let server = ScriptedServer::start().await.unwrap();
    let output = run(chat(&server, dir.path(), &["-m", "hi"]), "").await;
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "toolgate.toml:3: [agent]: `compact_at` is a share of the context window, \
             from 0 (off) to 1, not 1.5"
        ),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn max_loaded_tokens_unloads_what_a_load_needs_and_says_so() {
    let dir = project("[tools]\nmax_loaded_tokens = 1\n");
    std::fs::write(
        dir.path().join("tools/notes.json"),
        json!([
            {"_meta": true, "display_name": "Notes", "description": "Keep notes"},
            {"name": "notes_add", "description": "Add a note",
             "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}
        ])
        .to_string(),
    )
    .unwrap();
    let server = ScriptedServer::start().await.unwrap();
    push_first_turn(&server);
    server.push(reply(ScriptedTurn::tool_call(
        "c2",
        "load_tool_group",
        json!({"group_name": "notes"}),
    )));
    server.push(reply(ScriptedTurn::text("Notes loaded.")));
    let first = run(
        chat(
            &server,
            dir.path(),
            &["--conversation", "b", "-m", "load pdf"],
        ),
        "",
    )
    .await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    let second = run(
        chat(
            &server,
            dir.path(),
            &["--conversation", "b", "-m", "load notes"],
        ),
        "",
    )
    .await;
    let stderr = text(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(
        stderr.contains("  ⇣ unloaded to stay within [tools] max_loaded_tokens: pdf\n"),
        "{stderr}"
    );
    let requests = server.requests();
    let last = requests.last().unwrap();
    assert_eq!(
        tool_names(last),
        ["load_tool_group", "unload_tool_group", "notes_add"]
    );
    let answer = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(
        answer.contains(
            "\n\nUnloaded 'pdf' (least recently used first) to keep the loaded tools within \
             their budget of 1 tokens; load_tool_group loads a group again. Group 'notes' alone \
             has "
        ) && answer
            .ends_with("tokens of tools, over the budget of 1: it is the only group loaded."),
        "{answer}"
    );
}

#[tokio::test]
async fn max_loaded_tokens_of_0_is_refused_with_its_line() {
    let dir = project("[tools]\ntimeout_seconds = 30\nmax_loaded_tokens = 0\n");
    let server = ScriptedServer::start().await.unwrap();
    let output = run(chat(&server, dir.path(), &["-m", "hi"]), "").await;
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "toolgate.toml:3: [tools]: `max_loaded_tokens` must be at least 1 (leave it out for \
             no bound)"
        ),
        "{stderr}"
    );
}
