//! `[tools] loaded_schemas = "conversation"` through the agent loop, on
//! each provider's wire format: a load leaves the request's `tools` (and
//! system prompt) byte for byte as they were, so the provider's cached
//! prefix holds; the load's result carries the schemas, and the loaded
//! tools run through `call_tool` or by name, in this turn, the next, and
//! after a restore from the stored history. The router's pre-loads go in the
//! conversation too: a message after the user's request carries their
//! schemas, and the tool list stays the same from turn to turn.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions};
use toolgate_core::routing::{Router, RoutingConfig};
use toolgate_core::{ActiveToolSet, GroupId, LoadedSchemas, MetaTool};
use toolgate_llm::scripted::{Recorded, ScriptedServer, ScriptedTurn, Wire};
use toolgate_store::{ConversationId, MemoryStore};

use super::support::{
    Setup, TestHost, WIRES, agent_with, core_tools, system_prompt, tool_names, tool_results,
    user_texts,
};

/// What `load_tool_group` of `pdf` answers when the schemas go in the
/// conversation.
const PDF_LOADED: &str = "Loaded 2 tools from group 'PDF Tools'. They are not added to your \
tool list: call one with call_tool, as {\"name\": \"<tool name>\", \"arguments\": {<its \
arguments>}}. Their schemas, one JSON object per tool:\n\
{\"name\":\"pdf_info\",\"description\":\"Page count and metadata of a PDF\",\"input_schema\":\
{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}\n\
{\"name\":\"pdf_merge\",\"description\":\"Merge PDF files\",\"input_schema\":\
{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}";

fn conversation_options() -> AgentOptions {
    AgentOptions {
        loaded_schemas: LoadedSchemas::Conversation,
        ..AgentOptions::default()
    }
}

/// The request's `tools` array exactly as it was sent.
fn tools_json(request: &Recorded) -> String {
    serde_json::to_string(&request.body["tools"]).unwrap()
}

/// Sends `text` in `conversation`: the answer.
async fn send(agent: &Agent<MemoryStore>, conversation: &ConversationId, text: &str) -> String {
    let cancel = CancellationToken::new();
    let outcome = agent.send(conversation, text, &mut |_| {}, &cancel).await;
    outcome.unwrap().text
}

/// The core tools of a host that offers `call_tool`, in catalog order.
fn core_with_call_tool() -> Vec<String> {
    let mut core = core_tools();
    core.insert(2, "call_tool".to_owned());
    core
}

#[tokio::test]
async fn a_load_leaves_the_tools_sent_as_they_were_and_answers_with_the_schemas() {
    for (wire, stream) in WIRES {
        let host = TestHost::offering(&[MetaTool::CallTool]).await;
        let turns = vec![
            ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"})),
            ScriptedTurn::tool_call(
                "c2",
                "call_tool",
                json!({"name": "pdf_info", "arguments": {"path": "r.pdf"}}),
            ),
            // A call by name runs too, though the tool is not listed.
            ScriptedTurn::tool_call("c3", "pdf_merge", json!({"path": "a.pdf"})),
            ScriptedTurn::text("Done."),
            // The next turn: still loaded, still not listed.
            ScriptedTurn::tool_call(
                "c4",
                "call_tool",
                json!({"name": "pdf_info", "arguments": {"path": "s.pdf"}}),
            ),
            ScriptedTurn::text("Again."),
            // After a restore from the stored history.
            ScriptedTurn::tool_call("c5", "pdf_info", json!({"path": "t.pdf"})),
            ScriptedTurn::text("Restored."),
        ];
        let server = ScriptedServer::start().await.unwrap();
        for turn in turns {
            server.push(turn.reply(wire, stream));
        }
        let store = Arc::new(MemoryStore::new());
        let agent = || {
            let store = Arc::clone(&store);
            agent_with(&server, wire, stream, &host, store, conversation_options())
        };
        let id = ConversationId::new("c");
        let running = agent();
        assert_eq!(
            send(&running, &id, "how many pages has r.pdf?").await,
            "Done."
        );
        assert_eq!(send(&running, &id, "and s.pdf?").await, "Again.");
        // Another agent over the same store: a restarted process.
        assert_eq!(send(&agent(), &id, "and t.pdf?").await, "Restored.");

        let requests = server.requests();
        assert_eq!(requests.len(), 8, "{wire:?} stream={stream}");
        assert_eq!(tool_names(&requests[0], wire), core_with_call_tool());
        let (tools, system) = (tools_json(&requests[0]), system_prompt(&requests[0], wire));
        for (call, request) in requests.iter().enumerate() {
            assert_eq!(
                tools_json(request),
                tools,
                "call {call}, {wire:?} stream={stream}"
            );
            assert_eq!(system_prompt(request, wire), system, "call {call}");
        }
        let results = tool_results(&requests[7], wire);
        assert_eq!(
            results,
            [
                PDF_LOADED,
                r#"pdf_info ran with {"path":"r.pdf"}"#,
                r#"pdf_merge ran with {"path":"a.pdf"}"#,
                r#"pdf_info ran with {"path":"s.pdf"}"#,
                r#"pdf_info ran with {"path":"t.pdf"}"#,
            ]
        );
        assert_eq!(
            host.called(),
            ["pdf_info", "pdf_merge", "pdf_info", "pdf_info"]
        );
    }
}

#[tokio::test]
async fn a_tool_of_a_group_not_loaded_is_still_not_available() {
    let host = TestHost::offering(&[MetaTool::CallTool]).await;
    let turns = vec![
        ScriptedTurn::tool_call(
            "c1",
            "call_tool",
            json!({"name": "pdf_info", "arguments": {"path": "r.pdf"}}),
        )
        .and_tool_call("c2", "pdf_merge", json!({})),
        ScriptedTurn::text("Not yet."),
    ];
    let setup =
        Setup::with_host_for_tests(Wire::Anthropic, false, turns, conversation_options(), host)
            .await;
    setup
        .send(&ConversationId::new("c"), "pages of r.pdf?")
        .await;
    let not_available = |tool: &str| {
        format!(
            "Tool '{tool}' is not available for this agent. It belongs to tool group 'pdf'; \
             call load_tool_group with group_name 'pdf' and tools [\"{tool}\"] first (without \
             tools it loads the whole group)."
        )
    };
    assert_eq!(
        tool_results(&setup.server.requests()[1], Wire::Anthropic),
        [not_available("pdf_info"), not_available("pdf_merge")]
    );
    assert!(setup.host.called().is_empty());
}

/// A lexical router over `host`'s catalog, as `config` sets it.
fn router(host: &TestHost, config: RoutingConfig) -> Arc<Router> {
    let catalog = host.catalog();
    let taxonomy = config.validate(&catalog).unwrap();
    Arc::new(Router::lexical(&catalog, taxonomy))
}

/// The messages of a request, its system prompt included on OpenAI's wire.
fn messages(request: &Recorded) -> &[Value] {
    request.body["messages"].as_array().unwrap()
}

/// What a conversation-mode load of `group` answers on `host`.
fn loaded_answer(host: &TestHost, group: &str) -> String {
    let catalog = host.catalog();
    let loaded = ActiveToolSet::new().load(&catalog, group).unwrap();
    loaded.answer(LoadedSchemas::Conversation).to_string()
}

/// Two routed turns route different groups: the tool list sent is the same
/// on every call, each routed group's schemas are a message after the
/// user's request, its tools run through `call_tool` and by name, and an
/// agent restarted over the same store sends the same tools and the same
/// messages.
#[tokio::test]
async fn routed_groups_go_in_the_conversation_and_the_tools_sent_never_change() {
    let pdf_query = "page count and metadata of the PDF r.pdf";
    let files_query = "read the file notes from the files root";
    let again_query = "page count and metadata of the PDF t.pdf";
    for (wire, stream) in WIRES {
        let host = TestHost::offering(&[MetaTool::CallTool]).await;
        let options = AgentOptions {
            router: Some(router(&host, RoutingConfig::default())),
            ..conversation_options()
        };
        let turns = vec![
            ScriptedTurn::tool_call(
                "c1",
                "call_tool",
                json!({"name": "pdf_info", "arguments": {"path": "r.pdf"}}),
            ),
            ScriptedTurn::tool_call("c2", "pdf_merge", json!({"path": "a.pdf"})),
            ScriptedTurn::text("Done."),
            ScriptedTurn::tool_call(
                "c3",
                "call_tool",
                json!({"name": "files_read", "arguments": {"path": "notes.txt"}}),
            ),
            ScriptedTurn::text("Read."),
            // After a restart: routed to pdf again, loaded already.
            ScriptedTurn::tool_call("c4", "pdf_info", json!({"path": "t.pdf"})),
            ScriptedTurn::text("Restored."),
        ];
        let server = ScriptedServer::start().await.unwrap();
        for turn in turns {
            server.push(turn.reply(wire, stream));
        }
        let store = Arc::new(MemoryStore::new());
        let agent = || {
            let store = Arc::clone(&store);
            agent_with(&server, wire, stream, &host, store, options.clone())
        };
        let id = ConversationId::new("c");
        let running = agent();
        assert_eq!(send(&running, &id, pdf_query).await, "Done.");
        assert_eq!(send(&running, &id, files_query).await, "Read.");
        // Another agent over the same store: a restarted process.
        assert_eq!(send(&agent(), &id, again_query).await, "Restored.");

        let requests = server.requests();
        assert_eq!(requests.len(), 7, "{wire:?} stream={stream}");
        assert_eq!(tool_names(&requests[0], wire), core_with_call_tool());
        let (tools, system) = (tools_json(&requests[0]), system_prompt(&requests[0], wire));
        for (call, request) in requests.iter().enumerate() {
            assert_eq!(
                tools_json(request),
                tools,
                "call {call}, {wire:?} stream={stream}"
            );
            assert_eq!(system_prompt(request, wire), system, "call {call}");
        }
        // Each turn's routed group follows its request, once.
        let files_loaded = loaded_answer(&host, "files");
        assert_eq!(user_texts(&requests[0], wire), [pdf_query, PDF_LOADED]);
        assert_eq!(
            user_texts(&requests[3], wire),
            [pdf_query, PDF_LOADED, files_query, &files_loaded]
        );
        assert_eq!(
            user_texts(&requests[5], wire),
            [
                pdf_query,
                PDF_LOADED,
                files_query,
                &files_loaded,
                again_query
            ]
        );
        // The restart changed no message the model had read.
        let before = messages(&requests[4]);
        assert_eq!(
            messages(&requests[5])[..before.len()],
            *before,
            "{wire:?} stream={stream}"
        );
        let results = tool_results(&requests[6], wire);
        assert_eq!(results.len(), 4, "{results:?}");
        assert_eq!(results[0], r#"pdf_info ran with {"path":"r.pdf"}"#);
        assert_eq!(results[1], r#"pdf_merge ran with {"path":"a.pdf"}"#);
        assert!(results[2].contains("hello from notes"), "{}", results[2]);
        assert_eq!(results[3], r#"pdf_info ran with {"path":"t.pdf"}"#);
        assert_eq!(host.called(), ["pdf_info", "pdf_merge", "pdf_info"]);
    }
}

/// A group routed with its best tool only: the model reads that tool's
/// schema and how many more the group has, calls it through `call_tool`,
/// and `load_tool_group` loads the rest, the tools sent never changing.
#[tokio::test]
async fn a_group_routed_partly_goes_in_the_conversation_with_its_best_tool() {
    let query = "page count and metadata of the PDF r.pdf";
    let partial = "Loaded 1 of 2 tools from group 'PDF Tools' (load_tool_group 'pdf' loads the \
other 1). They are not added to your tool list: call one with call_tool, as {\"name\": \
\"<tool name>\", \"arguments\": {<its arguments>}}. Their schemas, one JSON object per tool:\n\
{\"name\":\"pdf_info\",\"description\":\"Page count and metadata of a PDF\",\"input_schema\":\
{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}";
    for (wire, stream) in WIRES {
        let host = TestHost::offering(&[MetaTool::CallTool]).await;
        let config = RoutingConfig {
            tools_per_group: Some(1),
            ..RoutingConfig::default()
        };
        let options = AgentOptions {
            router: Some(router(&host, config)),
            ..conversation_options()
        };
        let turns = vec![
            ScriptedTurn::tool_call(
                "c1",
                "call_tool",
                json!({"name": "pdf_info", "arguments": {"path": "r.pdf"}}),
            ),
            ScriptedTurn::tool_call("c2", "load_tool_group", json!({"group_name": "pdf"})),
            ScriptedTurn::tool_call("c3", "pdf_merge", json!({"path": "a.pdf"})),
            ScriptedTurn::text("Done."),
        ];
        let setup = Setup::with_host_for_tests(wire, stream, turns, options, host).await;
        setup.send(&ConversationId::new("c"), query).await;

        let requests = setup.server.requests();
        assert_eq!(requests.len(), 4, "{wire:?} stream={stream}");
        for request in &requests {
            assert_eq!(tool_names(request, wire), core_with_call_tool());
        }
        assert_eq!(user_texts(&requests[0], wire), [query, partial]);
        assert_eq!(
            tool_results(&requests[3], wire),
            [
                r#"pdf_info ran with {"path":"r.pdf"}"#,
                PDF_LOADED,
                r#"pdf_merge ran with {"path":"a.pdf"}"#,
            ]
        );
        assert_eq!(setup.host.called(), ["pdf_info", "pdf_merge"]);
    }
}

/// The model's load of a group the router loaded answers with its schemas
/// again: the group is in the conversation, not the tool list.
#[tokio::test]
async fn loading_a_routed_group_again_answers_with_its_schemas() {
    let host = TestHost::offering(&[MetaTool::CallTool]).await;
    let options = AgentOptions {
        router: Some(router(&host, RoutingConfig::default())),
        ..conversation_options()
    };
    let turns = vec![
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"})),
        ScriptedTurn::text("Loaded."),
    ];
    let setup = Setup::with_host_for_tests(Wire::OpenAi, false, turns, options, host).await;
    setup
        .send(
            &ConversationId::new("c"),
            "page count and metadata of the PDF r.pdf",
        )
        .await;
    assert_eq!(
        tool_results(&setup.server.requests()[1], Wire::OpenAi),
        [PDF_LOADED]
    );
}

#[tokio::test]
async fn in_the_tool_list_a_load_adds_its_tools_to_the_next_call() {
    let host = TestHost::offering(&[MetaTool::CallTool]).await;
    let turns = vec![
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"})),
        ScriptedTurn::text("Loaded."),
    ];
    let setup =
        Setup::with_host_for_tests(Wire::OpenAi, true, turns, AgentOptions::default(), host).await;
    setup.send(&ConversationId::new("c"), "load pdf").await;
    let mut expected = core_with_call_tool();
    expected.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
    assert_eq!(setup.tools_per_request(), [core_with_call_tool(), expected]);
    let loaded = &tool_results(&setup.server.requests()[1], Wire::OpenAi)[0];
    assert!(
        loaded.starts_with("Loaded 2 tools from group 'PDF Tools':\n- pdf_info: "),
        "{loaded}"
    );
}

/// A compaction keeps what it always did: its record lists the groups loaded
/// then, the routed ones included, and the requests after it list them as
/// tools; the routed group's message, before the record, is summarized.
#[tokio::test]
async fn a_compaction_lists_the_routed_groups_it_summarized() {
    let pdf_query = "page count and metadata of the PDF r.pdf";
    let files_query = "read the file notes from the files root";
    let summary = "The user asked the page count of r.pdf: 3 pages.";
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let host = TestHost::offering(&[MetaTool::CallTool]).await;
        let options = AgentOptions {
            router: Some(router(&host, RoutingConfig::default())),
            ..conversation_options()
        };
        let turns = vec![
            ScriptedTurn::text("3 pages."),
            ScriptedTurn::text(summary),
            ScriptedTurn::text("Read."),
        ];
        let setup = Setup::with_host_for_tests(wire, false, turns, options, host).await;
        let id = ConversationId::new("c");
        setup.send(&id, pdf_query).await;
        let compacted = setup.agent.compact(&id, &CancellationToken::new()).await;
        assert_eq!(
            compacted.unwrap().loaded_groups,
            [GroupId::new("pdf").unwrap()]
        );
        setup.send(&id, files_query).await;

        let requests = setup.server.requests();
        assert_eq!(requests.len(), 3, "{wire:?}");
        // The summary is asked with the tools and messages the turn had.
        assert_eq!(tools_json(&requests[1]), tools_json(&requests[0]));
        assert_eq!(user_texts(&requests[1], wire)[..2], [pdf_query, PDF_LOADED]);
        let mut listed = core_with_call_tool();
        listed.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
        assert_eq!(tool_names(&requests[2], wire), listed, "{wire:?}");
        assert_eq!(
            user_texts(&requests[2], wire),
            [
                format!("Summary of the conversation so far:\n{summary}"),
                files_query.to_owned(),
                loaded_answer(&setup.host, "files"),
            ]
        );
    }
}
