//! A model's `load_tool_group` naming the tools it needs: only those join
//! the requests' tool list, the answer says how many the group has besides,
//! and the next turn, restored from history, lists the same.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::AgentOptions;
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn};
use toolgate_store::{ConversationId, MemoryStore};

use super::support::{
    TestHost, agent_over, agent_with, group_tokens, model_configured, tool_names, tool_results,
    with,
};

#[tokio::test]
async fn a_load_of_named_tools_lists_those_alone_and_restores_as_them() {
    for (wire, stream) in super::support::WIRES {
        let host = TestHost::new().await;
        let server = ScriptedServer::start().await.unwrap();
        for turn in [
            ScriptedTurn::tool_call(
                "c1",
                "load_tool_group",
                json!({"group_name": "pdf", "tools": ["pdf_merge"]}),
            ),
            ScriptedTurn::tool_call("c2", "pdf_info", json!({"path": "a.pdf"})),
            ScriptedTurn::text("Merged."),
            ScriptedTurn::text("Still merged."),
        ] {
            server.push(turn.reply(wire, stream));
        }
        let store = Arc::new(MemoryStore::new());
        let agent = agent_with(&server, wire, stream, &host, store, AgentOptions::default());
        let conversation = ConversationId::new("c");
        let cancel = CancellationToken::new();
        agent
            .send(&conversation, "merge a.pdf", &mut |_| {}, &cancel)
            .await
            .unwrap();
        let requests = server.requests();
        assert_eq!(
            tool_results(&requests[1], wire),
            [
                "Loaded 1 of 2 tools from group 'PDF Tools' (load_tool_group 'pdf' loads the \
              other 1):\n- pdf_merge: Merge PDF files"
            ]
        );
        assert_eq!(tool_names(&requests[1], wire), with(&["pdf_merge"]));
        // The tool it did not name is not loaded: the hint names it.
        assert!(
            tool_results(&requests[2], wire)[1].contains(
                "call load_tool_group with group_name 'pdf' and tools [\"pdf_info\"] first"
            ),
            "{:?}",
            tool_results(&requests[2], wire)
        );
        agent
            .send(&conversation, "and now?", &mut |_| {}, &cancel)
            .await
            .unwrap();
        assert_eq!(
            tool_names(&server.requests()[3], wire),
            with(&["pdf_merge"]),
            "the next turn restores the named tool alone"
        );
    }
}

#[tokio::test]
async fn the_budget_unloads_a_named_tool_not_its_whole_group() {
    use toolgate_agent::TurnEvent;
    use toolgate_core::{GroupId, LoadBudget, ToolName};
    let wire = super::support::WIRES[0].0;
    let host = TestHost::new().await;
    let tokens = |group: &str| group_tokens(&host, group);
    // Room for config whole and not for pdf_merge beside it.
    let budget = tokens("config");
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call(
            "c1",
            "load_tool_group",
            json!({"group_name": "pdf", "tools": ["pdf_merge"]}),
        ),
        ScriptedTurn::tool_call("c2", "load_tool_group", json!({"group_name": "config"})),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(wire, false));
    }
    let options = AgentOptions {
        load_budget: LoadBudget::Tokens(budget),
        ..AgentOptions::default()
    };
    let agent = agent_with(
        &server,
        wire,
        false,
        &host,
        Arc::new(MemoryStore::new()),
        options,
    );
    let mut events = Vec::new();
    agent
        .send(
            &ConversationId::new("c"),
            "work",
            &mut |e| events.push(e),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let unloaded: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::BudgetUnloaded { groups, tools } => Some((groups.clone(), tools.clone())),
            _ => None,
        })
        .collect();
    let pdf = GroupId::new("pdf").unwrap();
    assert_eq!(
        unloaded,
        [(vec![], vec![(pdf, ToolName::new("pdf_merge").unwrap())])]
    );
    let answer = tool_results(&server.requests()[2], wire).pop().unwrap();
    assert!(
        answer.ends_with(&format!(
            "\n\nUnloaded 'pdf_merge' of 'pdf' (least recently used first) to keep the loaded \
             tools within their budget of {budget} tokens; load_tool_group loads a group again."
        )),
        "{answer}"
    );
    assert_eq!(
        tool_names(&server.requests()[2], wire),
        with(&[])
            .into_iter()
            .chain(
                host.catalog()
                    .group_tools("config")
                    .map(|tool| tool.name.to_string())
            )
            .collect::<Vec<_>>()
    );
}

/// A load naming a tool the group lacks loads the group whole, says which
/// name was not there, and makes room for the whole group under the budget
/// (counting it as the named tools alone would have let it pass the budget).
#[tokio::test]
async fn a_load_naming_a_tool_the_group_lacks_loads_it_whole_within_the_budget() {
    use toolgate_agent::TurnEvent;
    use toolgate_core::{GroupId, LoadBudget};
    let wire = super::support::WIRES[0].0;
    let host = TestHost::new().await;
    let tokens = |group: &str| group_tokens(&host, group);
    // Room for config whole, and for pdf whole only without it.
    let budget = tokens("config").max(tokens("pdf"));
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "config"})),
        ScriptedTurn::tool_call(
            "c2",
            "load_tool_group",
            json!({"group_name": "pdf", "tools": ["pdf_compress"]}),
        ),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(wire, false));
    }
    let options = AgentOptions {
        load_budget: LoadBudget::Tokens(budget),
        ..AgentOptions::default()
    };
    let store = Arc::new(MemoryStore::new());
    let agent = agent_with(&server, wire, false, &host, store, options);
    let mut events = Vec::new();
    agent
        .send(
            &ConversationId::new("c"),
            "compress a.pdf",
            &mut |e| events.push(e),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let requests = server.requests();
    let answer = tool_results(&requests[2], wire).pop().unwrap();
    assert!(
        answer.starts_with(
            "Tool group 'PDF Tools' has no tool named 'pdf_compress', so the whole group is \
             loaded.\nLoaded 2 tools from group 'PDF Tools':"
        ),
        "{answer}"
    );
    assert_eq!(
        tool_names(&requests[2], wire),
        with(&["pdf_info", "pdf_merge"])
    );
    let unloaded: Vec<Vec<GroupId>> = events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::BudgetUnloaded { groups, .. } => Some(groups.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(unloaded, [vec![GroupId::new("config").unwrap()]]);
}

#[tokio::test]
async fn a_load_past_a_quarter_of_the_models_window_is_refused_and_named_tools_load() {
    let wire = super::support::WIRES[0].0;
    let host = TestHost::new().await;
    let pdf = group_tokens(&host, "pdf");
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call("c1", "load_tool_group", json!({"group_name": "pdf"})),
        ScriptedTurn::tool_call(
            "c2",
            "load_tool_group",
            json!({"group_name": "pdf", "tools": ["pdf_info"]}),
        ),
        ScriptedTurn::text("Loaded."),
    ] {
        server.push(turn.reply(wire, false));
    }
    // A window whose quarter is one token short of the pdf group.
    let model = model_configured(&server, wire, false, |config| {
        config.context_window = 4 * (pdf - 1);
    });
    let agent = agent_over(
        model,
        &host,
        Arc::new(MemoryStore::new()),
        AgentOptions::default(),
    );
    agent
        .send(
            &ConversationId::new("c"),
            "read a.pdf",
            &mut |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let requests = server.requests();
    let refused = &tool_results(&requests[1], wire)[0];
    assert!(
        refused.starts_with(&format!(
            "Nothing was loaded: group 'pdf' would hold {pdf} tokens of tool schemas"
        )),
        "{refused}"
    );
    assert!(
        refused.ends_with("Its 2 tools: pdf_info, pdf_merge."),
        "{refused}"
    );
    assert_eq!(tool_names(&requests[1], wire), with(&[]), "nothing loaded");
    assert_eq!(tool_names(&requests[2], wire), with(&["pdf_info"]));
}
