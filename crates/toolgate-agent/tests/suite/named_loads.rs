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

use super::support::{TestHost, agent_with, core_tools, tool_names, tool_results};

fn with(more: &[&str]) -> Vec<String> {
    core_tools()
        .into_iter()
        .chain(more.iter().map(|s| (*s).to_owned()))
        .collect()
}

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
