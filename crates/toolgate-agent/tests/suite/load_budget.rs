//! The load budget through the agent loop: a load past it unloads the
//! groups least recently called (not loaded), records each unload so a
//! restore has the same groups, and tells the model in the load's answer.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{AgentOptions, TurnEvent};
use toolgate_core::{GroupId, LoadBudget, MessageKind};
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};
use toolgate_store::{ConversationId, ConversationStore, MemoryStore};

use super::support::{TestHost, agent_with, group_tokens, tool_names, tool_results, with};

fn load(id: &str, group: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "load_tool_group", json!({ "group_name": group }))
}

fn config_tools() -> Vec<String> {
    (1..=17).map(|n| format!("config_setting_{n}")).collect()
}

#[tokio::test]
async fn a_load_past_the_budget_unloads_the_group_least_recently_called_and_says_so() {
    let wire = Wire::OpenAi;
    let host = TestHost::new().await;
    // Room for pdf, slow and config but one token: one of pdf and slow must
    // go. pdf was loaded first but called; slow was loaded after it and
    // never called, so slow goes.
    let budget =
        group_tokens(&host, "pdf") + group_tokens(&host, "slow") + group_tokens(&host, "config")
            - 1;
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        load("c1", "pdf"),
        load("c2", "slow"),
        ScriptedTurn::tool_call("c3", "pdf_info", json!({"path": "a.pdf"})),
        load("c4", "config"),
        ScriptedTurn::text("Done."),
        ScriptedTurn::text("Still done."),
    ] {
        server.push(turn.reply(wire, false));
    }
    let store = Arc::new(MemoryStore::new());
    let options = AgentOptions {
        load_budget: LoadBudget::Tokens(budget),
        ..AgentOptions::default()
    };
    let agent = agent_with(
        &server,
        wire,
        false,
        &host,
        Arc::clone(&store),
        options.clone(),
    );
    let conversation = ConversationId::new("c");
    let cancel = CancellationToken::new();
    let mut events = Vec::new();
    agent
        .send(&conversation, "work", &mut |e| events.push(e), &cancel)
        .await
        .unwrap();

    let unloads: Vec<&Vec<GroupId>> = events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::BudgetUnloaded { groups, .. } => Some(groups),
            _ => None,
        })
        .collect();
    assert_eq!(unloads, [&vec![GroupId::new("slow").unwrap()]]);
    let requests = server.requests();
    let config_answer = tool_results(&requests[4], wire).pop().unwrap();
    assert!(
        config_answer.starts_with("Loaded 17 tools from group 'Config':\n"),
        "{config_answer}"
    );
    assert!(
        config_answer.ends_with(&format!(
            "\n\nUnloaded 'slow' (least recently used first) to keep the loaded tools within \
             their budget of {budget} tokens; load_tool_group loads a group again."
        )),
        "{config_answer}"
    );
    let mut expected = with(&["pdf_info", "pdf_merge"]);
    expected.extend(config_tools());
    assert_eq!(tool_names(&requests[4], wire), expected);
    assert_eq!(
        agent.loaded_groups(&conversation).await.unwrap(),
        [
            GroupId::new("pdf").unwrap(),
            GroupId::new("config").unwrap()
        ]
    );
    // The unload is in history as the host's, which a restore replays.
    let stored = store.messages(&conversation).await.unwrap();
    let unloads: Vec<_> = stored
        .iter()
        .filter(|m| {
            m.message.kind == MessageKind::System
                && m.message.tool_name.as_deref() == Some("unload_tool_group")
        })
        .map(|m| m.message.tool_input.clone().unwrap())
        .collect();
    assert_eq!(unloads, [r#"{"group_name":"slow"}"#]);

    // A new agent over the same store (a restart) sends the same tools.
    drop(agent);
    let agent = agent_with(&server, wire, false, &host, Arc::clone(&store), options);
    agent
        .send(&conversation, "again", &mut |_| {}, &cancel)
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(tool_names(requests.last().unwrap(), wire), expected);
}

#[tokio::test]
async fn a_group_over_the_whole_budget_is_loaded_alone() {
    let wire = Wire::Anthropic;
    let host = TestHost::new().await;
    let budget = group_tokens(&host, "crm") / 2;
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        load("c1", "pdf"),
        load("c2", "crm"),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(wire, true));
    }
    let options = AgentOptions {
        load_budget: LoadBudget::Tokens(budget),
        ..AgentOptions::default()
    };
    let agent = agent_with(
        &server,
        wire,
        true,
        &host,
        Arc::new(MemoryStore::new()),
        options,
    );
    let conversation = ConversationId::new("c");
    agent
        .send(
            &conversation,
            "crm",
            &mut |_: TurnEvent| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let requests = server.requests();
    let answer = tool_results(&requests[2], wire).pop().unwrap();
    let crm = group_tokens(&host, "crm");
    assert!(
        answer.ends_with(&format!(
            "\n\nUnloaded 'pdf' (least recently used first) to keep the loaded tools within \
             their budget of {budget} tokens; load_tool_group loads a group again. Group 'crm' \
             alone has {crm} tokens of tools, over the budget of {budget}: it is the only group \
             loaded."
        )),
        "{answer}"
    );
    let names = tool_names(&requests[2], wire);
    assert_eq!(names.len(), 3 + 90);
    assert!(!names.contains(&"pdf_info".to_owned()));
    assert_eq!(
        agent.loaded_groups(&conversation).await.unwrap(),
        [GroupId::new("crm").unwrap()]
    );
}

#[tokio::test]
async fn without_a_budget_nothing_is_unloaded() {
    let wire = Wire::OpenAi;
    let host = TestHost::new().await;
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        load("c1", "pdf"),
        load("c2", "crm"),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(wire, false));
    }
    let agent = agent_with(
        &server,
        wire,
        false,
        &host,
        Arc::new(MemoryStore::new()),
        AgentOptions::default(),
    );
    let conversation = ConversationId::new("c");
    agent
        .send(&conversation, "crm", &mut |_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        agent.loaded_groups(&conversation).await.unwrap(),
        [GroupId::new("pdf").unwrap(), GroupId::new("crm").unwrap()]
    );
    let answer = tool_results(&server.requests()[2], wire).pop().unwrap();
    assert!(!answer.contains("Unloaded"), "{answer}");
}
