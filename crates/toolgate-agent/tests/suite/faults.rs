//! Faults: a provider that fails and recovers, refuses the key, cuts its
//! stream short; a tool that hangs; a turn cancelled or cut short by a dead
//! process. Nothing stored is ever lost.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{
    AgentError, AgentOptions, CANCELLED_RESULT, INTERRUPTED_RESULT, TurnEnd, TurnEvent,
};
use toolgate_core::{Message, MessageKind, ToolStatus};
use toolgate_llm::scripted::{ScriptedTurn, Wire, error_reply};
use toolgate_llm::{LlmError, StreamEvent};
use toolgate_store::{ConversationId, ConversationStore, SqliteStore};

use super::support::{Setup, TestHost, WIRES, agent_with, core_tools, tool_results, user_texts};

fn id() -> ConversationId {
    ConversationId::new("c")
}

async fn kinds(setup: &Setup) -> Vec<MessageKind> {
    setup
        .agent
        .store()
        .messages(&id())
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.kind)
        .collect()
}

#[tokio::test]
async fn a_server_error_is_retried_and_the_turn_succeeds() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(wire, stream, vec![]).await;
        setup.server.push(error_reply(wire, 500, "upstream hiccup"));
        setup
            .server
            .push(ScriptedTurn::text("Recovered.").reply(wire, stream));
        let (outcome, events) = setup.send(&id(), "hi").await;
        assert_eq!(outcome.text, "Recovered.");
        assert_eq!(setup.server.requests().len(), 2);
        let retries: Vec<&TurnEvent> = events
            .iter()
            .filter(|e| matches!(e, TurnEvent::Model(StreamEvent::Retrying { .. })))
            .collect();
        assert_eq!(retries.len(), 1, "{events:?}");
        assert_eq!(
            kinds(&setup).await,
            vec![MessageKind::User, MessageKind::Assistant]
        );
    }
}

#[tokio::test]
async fn a_refused_key_fails_the_turn_and_keeps_the_message() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(wire, stream, vec![]).await;
        setup
            .server
            .push(error_reply(wire, 401, "invalid x-api-key"));
        let error = setup
            .agent
            .send(
                &id(),
                "first question",
                &mut |_| {},
                &CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::Model(LlmError::Unauthorized { status: 401, .. })
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("invalid x-api-key"), "{error}");
        assert_eq!(setup.server.requests().len(), 1, "a 401 is not retried");
        assert_eq!(kinds(&setup).await, vec![MessageKind::User]);

        // Fixed: the next turn still carries the first question.
        setup
            .server
            .push(ScriptedTurn::text("Answer.").reply(wire, stream));
        setup.send(&id(), "second question").await;
        let requests = setup.server.requests();
        assert_eq!(
            user_texts(&requests[1], wire),
            vec!["first question".to_owned(), "second question".to_owned()]
        );
    }
}

#[tokio::test]
async fn a_truncated_stream_is_a_clear_error() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let setup = Setup::new(wire, true, vec![]).await;
        setup.server.push(
            ScriptedTurn::text("This answer never ends")
                .reply(wire, true)
                .truncate_after(2),
        );
        let error = setup
            .agent
            .send(&id(), "hi", &mut |_| {}, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, AgentError::Model(LlmError::TruncatedStream { .. })),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("ended before the answer was complete")
        );
        assert_eq!(kinds(&setup).await, vec![MessageKind::User]);
    }
}

/// The turn's tool timeout is the call's deadline when it is the shorter:
/// one deadline, the toolbox's, answers it.
#[tokio::test]
async fn a_hanging_tool_times_out_and_the_turn_goes_on() {
    for (wire, stream) in WIRES {
        let options = AgentOptions {
            tool_timeout: Duration::from_millis(200),
            ..AgentOptions::default()
        };
        let setup = Setup::with_options(
            wire,
            stream,
            vec![
                ScriptedTurn::tool_call("a", "load_tool_group", json!({"group_name": "slow"})),
                ScriptedTurn::tool_call("b", "slow_wait", json!({})).and_tool_call(
                    "c",
                    "echo",
                    json!({"text": "still here"}),
                ),
                ScriptedTurn::text("The slow tool timed out."),
            ],
            options,
        )
        .await;
        let (outcome, _) = setup.send(&id(), "wait for it").await;
        assert_eq!(outcome.text, "The slow tool timed out.");
        let results = tool_results(&setup.server.requests()[2], wire);
        assert_eq!(
            results[1..],
            [
                "Tool 'slow_wait' did not finish within 0.2s; the call was cancelled.".to_owned(),
                r#"echo ran with {"text":"still here"}"#.to_owned(),
            ]
        );
        assert_eq!(setup.host.cancelled(), 1, "the tool saw its cancel");
    }
}

#[tokio::test]
async fn a_cancelled_turn_stores_the_cancelled_calls() {
    let wire = Wire::Anthropic;
    let setup = Setup::new(
        wire,
        true,
        vec![
            ScriptedTurn::tool_call("a", "load_tool_group", json!({"group_name": "slow"})),
            ScriptedTurn::tool_call("b", "slow_wait", json!({})),
            ScriptedTurn::text("Next turn."),
        ],
    )
    .await;
    let cancel = CancellationToken::new();
    let error = setup
        .agent
        .send(
            &id(),
            "wait",
            &mut |event| {
                if matches!(&event, TurnEvent::ToolStarted { name, .. } if name == "slow_wait") {
                    cancel.cancel();
                }
            },
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, AgentError::Cancelled), "{error:?}");
    let stored = setup.agent.store().messages(&id()).await.unwrap();
    let last = &stored.last().unwrap().message;
    assert_eq!(last.kind, MessageKind::ToolResult);
    assert_eq!(last.content, CANCELLED_RESULT);
    assert_eq!(last.tool_status, Some(ToolStatus::Error));

    setup.send(&id(), "go on").await;
    let requests = setup.server.requests();
    assert_eq!(tool_results(&requests[2], wire)[1], CANCELLED_RESULT);
    // The load before the cancel stands.
    assert_eq!(
        super::support::tool_names(&requests[2], wire).len(),
        core_tools().len() + 1
    );
}

#[tokio::test]
async fn a_turn_cut_short_by_a_dead_process_resumes_with_nothing_lost() {
    // What a killed process leaves in the store: the user's message, a load
    // that finished, a call that never did.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        for message in [
            Message::user("load pdf and read r.pdf"),
            Message::tool_call(
                "a",
                "load_tool_group",
                r#"{"group_name":"pdf"}"#,
                ToolStatus::Success,
            ),
            Message::tool_result(
                "a",
                "load_tool_group",
                "Loaded 2 tools from group 'PDF Tools':",
                ToolStatus::Success,
            ),
            Message::tool_call("b", "pdf_info", r#"{"path":"r.pdf"}"#, ToolStatus::Pending),
        ] {
            store.append(&id(), message).await.unwrap();
        }
    }
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let copy = dir.path().join(format!("{wire:?}.db"));
        std::fs::copy(&path, &copy).unwrap();
        let server = toolgate_llm::scripted::ScriptedServer::start()
            .await
            .unwrap();
        server.push(ScriptedTurn::text("Sorry, let me retry that.").reply(wire, true));
        let store = Arc::new(SqliteStore::open(&copy).unwrap());
        let agent = agent_with(
            &server,
            wire,
            true,
            &*TestHost::new().await,
            Arc::clone(&store),
            AgentOptions::default(),
        );
        assert!(agent.is_unfinished(&id()).await.unwrap());
        let outcome = agent
            .resume(&id(), &mut |_| {}, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(outcome.end, TurnEnd::Answered);
        assert!(!agent.is_unfinished(&id()).await.unwrap());

        let request = &server.requests()[0];
        assert_eq!(
            user_texts(request, wire),
            vec!["load pdf and read r.pdf".to_owned()]
        );
        assert_eq!(
            tool_results(request, wire),
            vec![
                "Loaded 2 tools from group 'PDF Tools':".to_owned(),
                INTERRUPTED_RESULT.to_owned()
            ]
        );
        assert_eq!(
            super::support::tool_names(request, wire),
            super::support::tool_names(request, wire)
                .iter()
                .take(core_tools().len())
                .cloned()
                .chain(["pdf_info".to_owned(), "pdf_merge".to_owned()])
                .collect::<Vec<_>>()
        );
        let stored = store.messages(&id()).await.unwrap();
        let call = stored
            .iter()
            .find(|m| {
                m.message.tool_call_id.as_deref() == Some("b")
                    && m.message.kind == MessageKind::ToolCall
            })
            .unwrap();
        assert_eq!(call.message.tool_status, Some(ToolStatus::Error));
    }
}

#[tokio::test]
async fn a_turn_stops_at_the_model_call_limit() {
    let wire = Wire::OpenAi;
    let options = AgentOptions {
        max_model_calls: 2,
        ..AgentOptions::default()
    };
    let setup = Setup::with_options(
        wire,
        false,
        vec![
            ScriptedTurn::tool_call("a", "echo", json!({"text": "1"})),
            ScriptedTurn::tool_call("b", "echo", json!({"text": "2"})),
            ScriptedTurn::text("never asked for"),
        ],
        options,
    )
    .await;
    let (outcome, _) = setup.send(&id(), "loop").await;
    assert_eq!(outcome.end, TurnEnd::CallLimit);
    assert_eq!(setup.server.requests().len(), 2);
    assert_eq!(
        setup.host.called(),
        vec!["echo".to_owned(), "echo".to_owned()]
    );
    assert_eq!(kinds(&setup).await.last(), Some(&MessageKind::System));
}
