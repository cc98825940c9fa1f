//! The checks of groups loaded on demand (toolgate-core's
//! `tests/suite/groups_on_demand.rs` makes them at library level) and
//! restored from history, through the agent loop, against each provider's
//! wire format, streaming and not: what every request to the model carried.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_agent::{TurnEnd, TurnEvent};
use toolgate_core::{GroupId, Message, ToolStatus};
use toolgate_llm::scripted::ScriptedTurn;
use toolgate_llm::{StreamEvent, Usage};
use toolgate_store::{ConversationId, ConversationStore};

use super::support::{
    Setup, WIRES, core_tools, count_prefixed, system_prompt, tool_results, user_texts,
};

fn conversation(name: &str) -> ConversationId {
    ConversationId::new(name)
}

fn load(id: &str, group: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "load_tool_group", json!({ "group_name": group }))
}

fn with(core: &[String], more: &[&str]) -> Vec<String> {
    core.iter()
        .cloned()
        .chain(more.iter().map(|s| (*s).to_owned()))
        .collect()
}

#[tokio::test]
async fn the_first_request_offers_core_tools_and_lists_every_group() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![ScriptedTurn::text("Hello!").with_usage(812, 3)],
        )
        .await;
        let (outcome, events) = setup.send(&conversation("c"), "hi").await;
        assert_eq!(outcome.text, "Hello!");
        assert_eq!(outcome.end, TurnEnd::Answered);

        // Only core tools on the first call.
        assert_eq!(
            setup.tools_per_request(),
            vec![core_tools()],
            "{wire:?} stream={stream}"
        );

        // The group listing follows the base prompt.
        let requests = setup.server.requests();
        let system = system_prompt(&requests[0], wire);
        let section = system.split("\n\n---\n\n").nth(1).unwrap();
        assert!(section.starts_with(
            "## Available Tool Groups\n\nUse `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\n"
        ));
        for line in [
            "- time: ",
            "- files: ",
            "- pdf: Read and merge PDF files",
            "- config: ",
            "- crm: ",
            "- slow: ",
        ] {
            assert!(section.contains(line), "{line} missing from {section}");
        }

        // 100+ tools registered, 3 sent; the report says so.
        let report = &outcome.calls[0];
        assert_eq!(report.tools_sent, 3);
        assert!(report.catalog_tools > 100, "{report:?}");
        assert!(
            report.tool_tokens * 10 < report.catalog_tokens,
            "{report:?}"
        );
        assert_eq!(
            report.usage,
            Some(Usage {
                input_tokens: 812,
                output_tokens: 3,
                cached_input_tokens: report.usage.and_then(|u| u.cached_input_tokens),
            })
        );

        // The text arrived as deltas, streaming or not.
        let streamed: String = events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::Model(StreamEvent::TextDelta(delta)) => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, "Hello!");
    }
}

#[tokio::test]
async fn a_load_expands_the_next_request_and_persists_into_the_next_turn() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                load("c1", "config"),
                ScriptedTurn::text("Config tools are ready."),
                // Turn 2: the model uses a loaded tool without reloading.
                ScriptedTurn::tool_call("c2", "config_setting_3", json!({"path": "a"})),
                ScriptedTurn::text("Done."),
            ],
        )
        .await;
        let id = conversation("c");
        let (first, _) = setup.send(&id, "load the config tools").await;
        assert_eq!(first.text, "Config tools are ready.");
        let (second, _) = setup.send(&id, "read setting 3").await;
        assert_eq!(second.text, "Done.");

        let tools = setup.tools_per_request();
        let core = core_tools();
        // The request after the load carries core + the 17 tools.
        assert_eq!(tools[0], core);
        assert_eq!(tools[1].len(), core.len() + 17, "{wire:?} stream={stream}");
        assert_eq!(tools[1][..core.len()], core[..]);
        assert_eq!(count_prefixed(&tools[1], "config_setting_"), 17);
        // Turn 2 starts with them, restored from history.
        assert_eq!(tools[2], tools[1]);
        assert_eq!(tools[3], tools[1]);

        let requests = setup.server.requests();
        let loaded = &tool_results(&requests[1], wire)[0];
        assert!(
            loaded.starts_with("Loaded 17 tools from group 'Config':\n- config_setting_1: "),
            "{loaded}"
        );
        assert_eq!(setup.host.called(), vec!["config_setting_3".to_owned()]);
        assert_eq!(
            setup.agent.loaded_groups(&id).await.unwrap(),
            vec![GroupId::new("config").unwrap()]
        );
    }
}

#[tokio::test]
async fn two_groups_load_together_in_call_order_and_a_reload_adds_nothing() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                // Two loads in one response.
                load("a", "pdf").and_tool_call(
                    "b",
                    "load_tool_group",
                    json!({"group_name": "config"}),
                ),
                // Loading pdf again.
                load("c", "pdf"),
                ScriptedTurn::text("Both loaded."),
            ],
        )
        .await;
        setup.send(&conversation("c"), "load pdf and config").await;
        let tools = setup.tools_per_request();
        let core = core_tools();
        let mut expected = with(&core, &["pdf_info", "pdf_merge"]);
        expected.extend((1..=17).map(|n| format!("config_setting_{n}")));
        assert_eq!(tools[1], expected, "{wire:?} stream={stream}");
        assert_eq!(tools[2], expected, "a reload duplicates nothing");

        let results = tool_results(&setup.server.requests()[2], wire);
        assert_eq!(results.len(), 3);
        assert_eq!(
            results[0], results[2],
            "a reload answers like the first load"
        );
        assert_eq!(
            results[0],
            "Loaded 2 tools from group 'PDF Tools':\n- pdf_info: Page count and metadata of a PDF\n- pdf_merge: Merge PDF files"
        );
    }
}

#[tokio::test]
async fn a_grouped_tool_is_blocked_before_its_load_and_runs_after_it() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                ScriptedTurn::tool_call("a", "pdf_info", json!({"path": "r.pdf"})),
                load("b", "pdf"),
                ScriptedTurn::tool_call("c", "pdf_info", json!({"path": "r.pdf"})),
                ScriptedTurn::text("The report has 3 pages."),
            ],
        )
        .await;
        let id = conversation("c");
        setup.send(&id, "how many pages in r.pdf?").await;
        let results = tool_results(&setup.server.requests()[3], wire);
        // The call fails and says how to fix it.
        assert_eq!(
            results[0],
            "Tool 'pdf_info' is not available for this agent. It belongs to tool group 'pdf'; \
             call load_tool_group with group_name 'pdf' and tools [\"pdf_info\"] first (without \
             tools it loads the whole group)."
        );
        // After the load it runs.
        assert_eq!(results[2], r#"pdf_info ran with {"path":"r.pdf"}"#);
        assert_eq!(
            setup.host.called(),
            vec!["pdf_info".to_owned()],
            "the blocked call never ran"
        );

        let stored = setup.agent.store().messages(&id).await.unwrap();
        let statuses: Vec<_> = stored
            .iter()
            .filter(|m| m.message.tool_name.as_deref() == Some("pdf_info"))
            .filter(|m| m.message.kind == toolgate_core::MessageKind::ToolCall)
            .map(|m| m.message.tool_status)
            .collect();
        assert_eq!(
            statuses,
            vec![Some(ToolStatus::Error), Some(ToolStatus::Success)]
        );
    }
}

#[tokio::test]
async fn an_unknown_group_is_an_error_listing_the_groups() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                load("a", "nonexistent"),
                ScriptedTurn::text("No such group."),
            ],
        )
        .await;
        setup.send(&conversation("c"), "load nonexistent").await;
        let results = tool_results(&setup.server.requests()[1], wire);
        assert!(
            results[0].starts_with("Tool group 'nonexistent' not found. Available groups: "),
            "{}",
            results[0]
        );
        for group in ["pdf", "config", "time", "files"] {
            assert!(results[0].contains(group), "{}", results[0]);
        }
        if wire == toolgate_llm::scripted::Wire::Anthropic {
            let body = &setup.server.requests()[1].body;
            let last = body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(last["content"][0]["is_error"], true);
        }
        assert_eq!(setup.tools_per_request()[1], core_tools());
    }
}

#[tokio::test]
async fn a_builtin_tool_runs_for_real() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                load("a", "files"),
                ScriptedTurn::tool_call("b", "files_read", json!({"path": "notes.txt"})),
                ScriptedTurn::text("It says hello."),
            ],
        )
        .await;
        let (_, events) = setup
            .send(&conversation("c"), "what do my notes say?")
            .await;
        let results = tool_results(&setup.server.requests()[2], wire);
        assert!(results[1].contains("hello from notes"), "{}", results[1]);
        let finished: Vec<(String, ToolStatus)> = events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::ToolFinished { name, status, .. } => Some((name.clone(), *status)),
                _ => None,
            })
            .collect();
        assert_eq!(
            finished,
            vec![
                ("load_tool_group".to_owned(), ToolStatus::Success),
                ("files_read".to_owned(), ToolStatus::Success)
            ]
        );
    }
}

#[tokio::test]
async fn a_failed_load_is_not_restored() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                load("a", super::support::BROKEN_GROUP),
                ScriptedTurn::text("It failed."),
                ScriptedTurn::text("Still no broken tools."),
            ],
        )
        .await;
        let id = conversation("c");
        setup.send(&id, "load broken").await;
        setup.send(&id, "again?").await;
        let results = tool_results(&setup.server.requests()[1], wire);
        assert_eq!(
            results[0],
            "MCP server 'broken' failed to start: cannot run 'broken-server'"
        );
        assert_eq!(setup.tools_per_request()[2], core_tools());
        assert!(setup.agent.loaded_groups(&id).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_new_conversation_starts_with_core_tools_only() {
    // What `/clear` does: a new conversation id.
    for (wire, stream) in WIRES {
        let setup = Setup::new(
            wire,
            stream,
            vec![
                load("a", "pdf"),
                ScriptedTurn::text("Loaded."),
                ScriptedTurn::text("Hi."),
            ],
        )
        .await;
        setup.send(&conversation("first"), "load pdf").await;
        setup.send(&conversation("second"), "hello").await;
        let tools = setup.tools_per_request();
        assert_eq!(tools[1].len(), core_tools().len() + 2);
        assert_eq!(tools[2], core_tools());
        let requests = setup.server.requests();
        assert_eq!(user_texts(&requests[2], wire), vec!["hello".to_owned()]);
    }
}

#[tokio::test]
async fn malformed_stored_input_is_skipped_and_the_rest_restored() {
    for (wire, stream) in WIRES {
        let setup = Setup::new(wire, stream, vec![ScriptedTurn::text("Hi again.")]).await;
        let id = conversation("c");
        let store = setup.agent.store();
        for message in [
            Message::user("earlier"),
            Message::tool_call("x", "load_tool_group", "{not json", ToolStatus::Success),
            Message::tool_result("x", "load_tool_group", "?", ToolStatus::Success),
            Message::tool_call(
                "y",
                "load_tool_group",
                r#"{"group_name":"pdf"}"#,
                ToolStatus::Success,
            ),
            Message::tool_result(
                "y",
                "load_tool_group",
                "Loaded 2 tools",
                ToolStatus::Success,
            ),
            Message::tool_call(
                "z",
                "load_tool_group",
                r#"{"group_name":"gone"}"#,
                ToolStatus::Success,
            ),
            Message::tool_result("z", "load_tool_group", "Loaded", ToolStatus::Success),
            Message::assistant("ok"),
        ] {
            store.append(&id, message).await.unwrap();
        }
        setup.send(&id, "hello").await;
        assert_eq!(
            setup.tools_per_request()[0],
            with(&core_tools(), &["pdf_info", "pdf_merge"])
        );
    }
}

#[tokio::test]
async fn every_step_is_stored_in_order() {
    let setup = Setup::new(
        toolgate_llm::scripted::Wire::OpenAi,
        true,
        vec![
            load("a", "time").and_text("Loading time tools."),
            ScriptedTurn::tool_call("b", "time_now", json!({"timezone": "UTC"})),
            ScriptedTurn::text("It is noon."),
        ],
    )
    .await;
    let id = conversation("c");
    setup.send(&id, "what time is it?").await;
    let stored: Vec<(String, Option<String>, Option<ToolStatus>)> = setup
        .agent
        .store()
        .messages(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| {
            (
                m.message.kind.as_str().to_owned(),
                m.message.tool_name,
                m.message.tool_status,
            )
        })
        .collect();
    let step = |kind: &str, tool: Option<&str>, status: Option<ToolStatus>| {
        (kind.to_owned(), tool.map(str::to_owned), status)
    };
    assert_eq!(
        stored,
        vec![
            step("user", None, None),
            step("assistant", None, None),
            step(
                "tool_call",
                Some("load_tool_group"),
                Some(ToolStatus::Success)
            ),
            // The change the load made, naming the call, before its result.
            step("system", Some("load_tool_group"), Some(ToolStatus::Success)),
            step(
                "tool_result",
                Some("load_tool_group"),
                Some(ToolStatus::Success)
            ),
            step("tool_call", Some("time_now"), Some(ToolStatus::Success)),
            step("tool_result", Some("time_now"), Some(ToolStatus::Success)),
            step("assistant", None, None),
        ]
    );
}
