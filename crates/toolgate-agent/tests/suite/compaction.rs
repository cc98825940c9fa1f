//! Compaction through the agent loop: what the request after a compaction
//! carries, the tool list a compacted and restored conversation sends (on
//! SQLite and PostgreSQL), and a failed summary (or one that would not
//! shrink the conversation) leaving the conversation as it was.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{AgentOptions, CompactError, Compaction, TurnEvent};
use toolgate_core::{COMPACTION_PROMPT, GroupId, MessageKind};
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire, error_reply};
use toolgate_store::{
    AgentStore, ConversationId, ConversationStore, PostgresOptions, PostgresStore, SqliteStore,
};

use super::support::{Setup, TestHost, WIRES, agent_with, tool_names, tool_results, user_texts};

fn load(id: &str, group: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "load_tool_group", json!({ "group_name": group }))
}

fn unload(id: &str, group: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "unload_tool_group", json!({ "group_name": group }))
}

/// A user message far past the threshold of [`compacting`] on its own.
fn long_text() -> String {
    "Here is the report to file, word for word. ".repeat(600)
}

/// Compaction above 3,000 tokens: a short first turn stays far below it
/// (the listing, three core tools and two PDF tools), a second turn with
/// [`long_text`] far above.
fn compacting() -> AgentOptions {
    AgentOptions {
        compaction: Compaction::AboveTokens(3_000),
        ..AgentOptions::default()
    }
}

#[tokio::test]
async fn the_request_after_a_compaction_carries_the_summary_and_not_the_old_messages() {
    for (wire, stream) in WIRES {
        let setup = Setup::with_options(
            wire,
            stream,
            vec![
                load("c1", "pdf"),
                ScriptedTurn::tool_call("c2", "pdf_info", json!({"path": "a.pdf"})),
                ScriptedTurn::text("It has 3 pages."),
                ScriptedTurn::text("The user read a.pdf (3 pages); the pdf group is loaded."),
                ScriptedTurn::text("Filed."),
            ],
            compacting(),
        )
        .await;
        let conversation = ConversationId::new("c");
        let (_, first) = setup.send(&conversation, "how long is a.pdf?").await;
        assert!(
            !first
                .iter()
                .any(|event| matches!(event, TurnEvent::Compacted(_))),
            "{wire:?} stream={stream}"
        );
        let long = long_text();
        let (outcome, events) = setup.send(&conversation, &long).await;
        assert_eq!(outcome.text, "Filed.");

        let requests = setup.server.requests();
        assert_eq!(requests.len(), 5, "{wire:?} stream={stream}");
        // The summary request: the whole conversation, then the prompt, with
        // the tools the conversation had.
        let summary_request = &requests[3];
        let asked = user_texts(summary_request, wire);
        assert_eq!(
            asked.first().map(String::as_str),
            Some("how long is a.pdf?")
        );
        assert_eq!(asked.last().map(String::as_str), Some(COMPACTION_PROMPT));
        assert_eq!(tool_results(summary_request, wire).len(), 2);
        assert_eq!(
            tool_names(summary_request, wire),
            tool_names(&requests[2], wire)
        );
        // After it: the summary and the new message, no earlier message or
        // result, and the same tools.
        let after = &requests[4];
        assert_eq!(
            user_texts(after, wire),
            vec![
                "Summary of the conversation so far:\n\
                 The user read a.pdf (3 pages); the pdf group is loaded."
                    .to_owned(),
                long.clone(),
            ],
            "{wire:?} stream={stream}"
        );
        assert_eq!(tool_results(after, wire), Vec::<String>::new());
        assert_eq!(tool_names(after, wire), tool_names(&requests[2], wire));

        let compacted = events
            .iter()
            .find_map(|event| match event {
                TurnEvent::Compacted(compacted) => Some(compacted),
                _ => None,
            })
            .expect("a compaction event");
        assert_eq!(compacted.loaded_groups, [GroupId::new("pdf").unwrap()]);
        assert!(compacted.tokens_after < compacted.tokens_before);
        let stored = setup.agent.store().messages(&conversation).await.unwrap();
        let kinds: Vec<MessageKind> = stored.iter().map(|m| m.message.kind).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == MessageKind::Compaction)
                .count(),
            1
        );
        // The record covers the first turn; the new message comes after it.
        assert_eq!(
            &kinds[kinds.len() - 3..],
            [
                MessageKind::Compaction,
                MessageKind::User,
                MessageKind::Assistant
            ]
        );
    }
}

/// The script both conversations follow: a first turn that loads `pdf` and
/// `slow` and unloads `slow`, a second that loads `config`, a third that
/// only answers. The compacting one is compacted on request between the
/// first and second turn (its summary is the extra reply).
async fn run_script<S: ConversationStore + AgentStore>(
    store: Arc<S>,
    reopen: impl Fn() -> Arc<S>,
    conversation: &ConversationId,
    compact: bool,
) -> (Vec<String>, Vec<GroupId>) {
    let wire = Wire::OpenAi;
    let host = TestHost::new().await;
    let server = ScriptedServer::start().await.unwrap();
    let mut script = vec![
        load("a1", "pdf"),
        load("a2", "slow"),
        unload("a3", "slow"),
        ScriptedTurn::text("Loaded."),
    ];
    if compact {
        script.push(ScriptedTurn::text("PDF tools are loaded."));
    }
    script.extend([
        load("b1", "config"),
        ScriptedTurn::text("Config too."),
        ScriptedTurn::text("Still here."),
    ]);
    for turn in script {
        server.push(turn.reply(wire, false));
    }
    let agent = agent_with(&server, wire, false, &host, store, AgentOptions::default());
    let cancel = CancellationToken::new();
    let mut ignore = |_: TurnEvent| {};
    agent
        .send(conversation, "load pdf", &mut ignore, &cancel)
        .await
        .unwrap();
    if compact {
        let compacted = agent.compact(conversation, &cancel).await.unwrap();
        assert_eq!(compacted.loaded_groups, [GroupId::new("pdf").unwrap()]);
    }
    agent
        .send(conversation, "load config", &mut ignore, &cancel)
        .await
        .unwrap();
    drop(agent);
    // A restart: a new agent over the store opened again.
    let agent = agent_with(
        &server,
        wire,
        false,
        &host,
        reopen(),
        AgentOptions::default(),
    );
    let loaded = agent.loaded_groups(conversation).await.unwrap();
    agent
        .send(conversation, "anything else?", &mut ignore, &cancel)
        .await
        .unwrap();
    let requests = server.requests();
    let last = requests.last().unwrap();
    if compact {
        let texts = user_texts(last, wire);
        assert_eq!(
            texts[0],
            "Summary of the conversation so far:\nPDF tools are loaded."
        );
        assert!(!texts.contains(&"load pdf".to_owned()), "{texts:?}");
    }
    (tool_names(last, wire), loaded)
}

/// A compacted conversation, restored by a new agent, sends the tool list
/// of the same conversation never compacted.
async fn compacted_and_restored_sends_the_same_tools<S: ConversationStore + AgentStore>(
    open: impl Fn() -> Arc<S>,
    prefix: &str,
) {
    let plain = ConversationId::new(format!("{prefix}-plain"));
    let compacted = ConversationId::new(format!("{prefix}-compacted"));
    let (plain_tools, plain_loaded) = run_script(open(), &open, &plain, false).await;
    let (compacted_tools, compacted_loaded) = run_script(open(), &open, &compacted, true).await;
    let groups = |names: &[&str]| {
        names
            .iter()
            .map(|n| GroupId::new(*n).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(plain_loaded, groups(&["pdf", "config"]));
    assert_eq!(compacted_loaded, plain_loaded);
    assert!(plain_tools.contains(&"pdf_info".to_owned()));
    assert!(plain_tools.contains(&"config_setting_17".to_owned()));
    assert!(!plain_tools.contains(&"slow_wait".to_owned()));
    assert_eq!(compacted_tools, plain_tools);
    let store = open();
    let records = store
        .messages(&compacted)
        .await
        .unwrap()
        .iter()
        .filter(|m| m.message.kind == MessageKind::Compaction)
        .count();
    assert_eq!(records, 1);
}

#[tokio::test]
async fn a_compacted_and_restored_conversation_sends_the_same_tools_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    compacted_and_restored_sends_the_same_tools(
        || Arc::new(SqliteStore::open(&path).unwrap()),
        "sqlite",
    )
    .await;
}

#[tokio::test]
async fn a_compacted_and_restored_conversation_sends_the_same_tools_on_postgres() {
    // The server `scripts/test` starts (`scripts/with-postgres`); missing is
    // a failure, not a skip. Conversation ids of their own keep this test
    // apart from others on the same database.
    let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test, or \
             `.peers/venv/bin/python scripts/with-postgres cargo test ...`"
        )
    });
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let prefix = format!(
        "agent-compaction-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    );
    let store = Arc::new(
        PostgresStore::connect(&PostgresOptions::new(url))
            .await
            .unwrap(),
    );
    compacted_and_restored_sends_the_same_tools(|| Arc::clone(&store), &prefix).await;
}

/// A compacting agent's conversation `c` in which the model loaded `pdf`.
async fn pdf_loaded(wire: Wire, stream: bool) -> (Setup, ConversationId) {
    let setup = Setup::with_options(
        wire,
        stream,
        vec![load("c1", "pdf"), ScriptedTurn::text("Loaded.")],
        compacting(),
    )
    .await;
    let conversation = ConversationId::new("c");
    setup.send(&conversation, "load pdf").await;
    (setup, conversation)
}

#[tokio::test]
async fn a_failed_summary_leaves_the_conversation_as_it_was_and_the_turn_goes_on() {
    for (wire, stream) in WIRES {
        let (setup, conversation) = pdf_loaded(wire, stream).await;
        let store = setup.agent.store();
        let before = store.messages(&conversation).await.unwrap();
        let cancel = CancellationToken::new();

        // On request: the provider refuses, then the model calls a tool
        // instead of summarizing.
        setup
            .server
            .push(error_reply(wire, 400, "prompt is too long"));
        let refused = setup.agent.compact(&conversation, &cancel).await;
        assert!(
            matches!(refused, Err(CompactError::Model(_))),
            "{refused:?}"
        );
        setup.server.push(load("c2", "config").reply(wire, stream));
        let no_summary = setup.agent.compact(&conversation, &cancel).await;
        assert!(
            matches!(no_summary, Err(CompactError::NoSummary)),
            "{no_summary:?}"
        );
        assert_eq!(store.messages(&conversation).await.unwrap(), before);

        // Due in a turn: the failure is reported, the turn goes on uncompacted.
        setup
            .server
            .push(error_reply(wire, 400, "prompt is too long"));
        setup
            .server
            .push(ScriptedTurn::text("Filed.").reply(wire, stream));
        let long = long_text();
        let (outcome, events) = setup.send(&conversation, &long).await;
        assert_eq!(outcome.text, "Filed.");
        assert!(
            events
                .iter()
                .any(|event| matches!(event, TurnEvent::CompactionFailed { .. })),
            "{wire:?} stream={stream}"
        );
        let after = store.messages(&conversation).await.unwrap();
        assert_eq!(after[..before.len()], before[..]);
        assert!(
            after
                .iter()
                .all(|m| m.message.kind != MessageKind::Compaction)
        );
        let last_request = setup.server.requests().pop().unwrap();
        assert_eq!(
            user_texts(&last_request, wire),
            vec!["load pdf".to_owned(), long]
        );
    }
}

/// The reasons of the turn's `CompactionFailed` events.
fn compaction_failures(events: &[TurnEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::CompactionFailed { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_summary_longer_than_the_conversation_is_refused_and_the_turn_goes_on() {
    // A model that answers the summary request with far more than it was
    // asked to summarize (about 24,000 tokens for a conversation of about
    // 1,000) would make every later call larger.
    let huge = "The user loaded the pdf group and asked nothing else. ".repeat(2_000);
    for (wire, stream) in WIRES {
        let (setup, conversation) = pdf_loaded(wire, stream).await;
        let store = setup.agent.store();
        let before = store.messages(&conversation).await.unwrap();
        let cancel = CancellationToken::new();

        // On request: refused, with what it would have made of the
        // conversation.
        setup
            .server
            .push(ScriptedTurn::text(&huge).reply(wire, stream));
        let refused = setup.agent.compact(&conversation, &cancel).await;
        let Err(CompactError::NotSmaller {
            before: tokens_before,
            after: tokens_after,
        }) = refused
        else {
            panic!("{refused:?}");
        };
        assert!(tokens_after > 20 * tokens_before, "{refused:?}");
        assert_eq!(
            CompactError::NotSmaller {
                before: tokens_before,
                after: tokens_after,
            }
            .to_string(),
            format!(
                "the summary would not make the conversation smaller \
                 ({tokens_before} tokens before, {tokens_after} after)"
            )
        );
        assert_eq!(store.messages(&conversation).await.unwrap(), before);

        // Due in a turn: refused and reported; the turn goes on with the
        // conversation as it was.
        setup
            .server
            .push(ScriptedTurn::text(&huge).reply(wire, stream));
        setup
            .server
            .push(ScriptedTurn::text("Filed.").reply(wire, stream));
        let long = long_text();
        let (outcome, events) = setup.send(&conversation, &long).await;
        assert_eq!(outcome.text, "Filed.");
        let failures = compaction_failures(&events);
        assert_eq!(failures.len(), 1, "{wire:?} stream={stream}");
        assert!(
            failures[0].starts_with("the summary would not make the conversation smaller ("),
            "{failures:?}"
        );
        assert!(
            !events
                .iter()
                .any(|event| matches!(event, TurnEvent::Compacted(_)))
        );
        let after = store.messages(&conversation).await.unwrap();
        assert_eq!(after[..before.len()], before[..]);
        assert!(
            after
                .iter()
                .all(|m| m.message.kind != MessageKind::Compaction)
        );
        let last_request = setup.server.requests().pop().unwrap();
        assert_eq!(
            user_texts(&last_request, wire),
            vec!["load pdf".to_owned(), long]
        );
    }
}

#[tokio::test]
async fn a_summary_past_the_threshold_is_refused_though_shorter() {
    let wire = Wire::OpenAi;
    // Shorter than the conversation it replaces ([`long_text`] and an
    // answer), but past the threshold of 3,000 tokens on its own: the next
    // call would compact again.
    let summary = "The user sent a long report to file, word for word. ".repeat(300);
    let setup = Setup::with_options(
        wire,
        false,
        vec![
            ScriptedTurn::text("Noted."),
            ScriptedTurn::text(&summary),
            ScriptedTurn::text("Filed."),
        ],
        compacting(),
    )
    .await;
    let conversation = ConversationId::new("c");
    let long = long_text();
    // The first turn does not compact: the model had not answered yet.
    let (_, events) = setup.send(&conversation, &long).await;
    assert_eq!(compaction_failures(&events), Vec::<String>::new());
    let (outcome, events) = setup.send(&conversation, "file it").await;
    assert_eq!(outcome.text, "Filed.");
    let failures = compaction_failures(&events);
    assert_eq!(failures.len(), 1, "{events:?}");
    assert!(
        failures[0].starts_with("the summary is too long: the conversation would be ")
            && failures[0].ends_with(" tokens with it, past the compaction threshold of 3000"),
        "{failures:?}"
    );
    let stored = setup.agent.store().messages(&conversation).await.unwrap();
    assert!(
        stored
            .iter()
            .all(|m| m.message.kind != MessageKind::Compaction)
    );
    let last_request = setup.server.requests().pop().unwrap();
    assert_eq!(
        user_texts(&last_request, wire),
        vec![long, "file it".to_owned()]
    );
}

#[tokio::test]
async fn nothing_is_compacted_twice_or_from_nothing() {
    let setup = Setup::new(
        Wire::OpenAi,
        false,
        vec![
            ScriptedTurn::text("Hi Ada."),
            ScriptedTurn::text("Ada said hi."),
        ],
    )
    .await;
    let conversation = ConversationId::new("c");
    let cancel = CancellationToken::new();
    let empty = setup.agent.compact(&conversation, &cancel).await;
    assert!(
        matches!(empty, Err(CompactError::NothingToCompact)),
        "{empty:?}"
    );
    // Long enough that the summary, under its heading, is shorter.
    setup
        .send(
            &conversation,
            "hello, I am Ada, from Lyon, and I would like some help with my tax report",
        )
        .await;
    setup.agent.compact(&conversation, &cancel).await.unwrap();
    let again = setup.agent.compact(&conversation, &cancel).await;
    assert!(
        matches!(again, Err(CompactError::NothingToCompact)),
        "{again:?}"
    );
    assert_eq!(setup.server.requests().len(), 2);
}
