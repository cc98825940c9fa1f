//! Sending every tool: a catalog under the share of the model's context
//! window is sent whole (every tool but the meta-tools, no group listing),
//! its tools called at once; one over it is deferred as before.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_agent::AgentOptions;
use toolgate_core::{Deferral, Mode, TOOL_GROUPS_HEADING};
use toolgate_llm::scripted::ScriptedTurn;
use toolgate_store::ConversationId;

use super::support::{Setup, WIRES, core_tools, system_prompt, tool_names, tool_results};

fn deferring(share: f64) -> AgentOptions {
    AgentOptions {
        deferral: Deferral::Auto { share },
        ..AgentOptions::default()
    }
}

#[tokio::test]
async fn a_small_catalog_is_sent_whole_and_its_tools_run_at_once() {
    for (wire, stream) in WIRES {
        let setup = Setup::with_options(
            wire,
            stream,
            vec![
                ScriptedTurn::tool_call("c1", "pdf_info", json!({"path": "a.pdf"})),
                ScriptedTurn::tool_call("c2", "load_tool_group", json!({"group_name": "pdf"})),
                ScriptedTurn::text("Done."),
            ],
            deferring(0.5),
        )
        .await;
        let delivery = setup.agent.delivery();
        assert_eq!(delivery.mode, Mode::Whole, "{delivery}");
        setup
            .send(&ConversationId::new("c"), "pages of a.pdf?")
            .await;
        let requests = setup.server.requests();
        let sent = tool_names(&requests[0], wire);
        assert_eq!(sent.len(), delivery.tools);
        assert!(sent.contains(&"pdf_info".to_owned()), "{sent:?}");
        assert!(!sent.contains(&"load_tool_group".to_owned()), "{sent:?}");
        assert!(!system_prompt(&requests[0], wire).contains(TOOL_GROUPS_HEADING));
        assert_eq!(
            tool_results(&requests[2], wire),
            [
                r#"pdf_info ran with {"path":"a.pdf"}"#,
                "Tool 'load_tool_group' is not available for this agent."
            ]
        );
        // The same tools on every call.
        assert_eq!(tool_names(&requests[2], wire), sent);
    }
}

#[tokio::test]
async fn a_catalog_over_the_share_is_deferred() {
    let (wire, stream) = WIRES[0];
    let setup = Setup::with_options(
        wire,
        stream,
        vec![ScriptedTurn::text("Hello.")],
        deferring(0.0001),
    )
    .await;
    let delivery = setup.agent.delivery();
    assert_eq!(delivery.mode, Mode::Deferred, "{delivery}");
    assert!(
        delivery.to_string().ends_with("-token window), deferred"),
        "{delivery}"
    );
    setup.send(&ConversationId::new("c"), "hi").await;
    assert_eq!(tool_names(&setup.server.requests()[0], wire), core_tools());
}
