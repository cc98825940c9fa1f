//! The router in the agent loop (seed 004): routed groups pre-loaded and
//! recorded, a low-confidence turn shown the whole catalog, and no progress
//! escalating to it.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_agent::TurnEvent;
use toolgate_core::routing::Tier;
use toolgate_core::{GroupId, MessageKind};
use toolgate_llm::scripted::{ScriptedTurn, Wire};
use toolgate_store::{ConversationId, ConversationStore};

use super::support::{Setup, WIRES, core_tools, tool_results};

fn id() -> ConversationId {
    ConversationId::new("c")
}

fn routed(events: &[TurnEvent]) -> &toolgate_core::routing::Decision {
    events
        .iter()
        .find_map(|e| match e {
            TurnEvent::Routed(decision) => Some(decision),
            _ => None,
        })
        .unwrap()
}

fn all_tools(setup: &Setup) -> usize {
    setup.host.catalog().tools().count()
}

#[tokio::test]
async fn a_confident_route_preloads_its_group_without_a_model_round_trip() {
    for (wire, stream) in WIRES {
        let setup = Setup::routed(
            wire,
            stream,
            vec![
                ScriptedTurn::tool_call("a", "pdf_info", json!({"path": "r.pdf"})),
                ScriptedTurn::text("3 pages."),
                ScriptedTurn::text("Still here."),
            ],
        )
        .await;
        let (_, events) = setup
            .send(&id(), "page count and metadata of the PDF r.pdf")
            .await;
        let decision = routed(&events);
        assert_eq!(decision.tier, Tier::High, "{decision:?}");
        assert_eq!(decision.routed, vec![GroupId::new("pdf").unwrap()]);

        let mut expected = core_tools();
        expected.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
        let tools = setup.tools_per_request();
        assert_eq!(
            tools[0], expected,
            "the first call already has the routed group"
        );
        assert_eq!(
            tool_results(&setup.server.requests()[1], wire),
            [r#"pdf_info ran with {"path":"r.pdf"}"#]
        );

        // Recorded as a host event, so the next turn restores it.
        let stored = setup.agent.store().messages(&id()).await.unwrap();
        assert!(stored.iter().any(|m| m.message.kind == MessageKind::System
            && m.message.tool_name.as_deref() == Some("load_tool_group")));
        setup.send(&id(), "thanks, bye").await;
        assert_eq!(setup.tools_per_request()[2][..expected.len()], expected[..]);
    }
}

#[tokio::test]
async fn a_turn_that_matches_nothing_sees_the_whole_catalog() {
    let setup = Setup::routed(Wire::OpenAi, true, vec![ScriptedTurn::text("Hello!")]).await;
    let (_, events) = setup.send(&id(), "zzxq vvbn").await;
    assert_eq!(routed(&events).tier, Tier::Low);
    assert_eq!(setup.tools_per_request()[0].len(), all_tools(&setup));
    assert!(
        setup.agent.loaded_groups(&id()).await.unwrap().is_empty(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn a_call_outside_the_visible_set_escalates_to_the_whole_catalog() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let setup = Setup::routed(
            wire,
            true,
            vec![
                ScriptedTurn::tool_call("a", "config_setting_3", json!({})),
                ScriptedTurn::tool_call("b", "config_setting_3", json!({})),
                ScriptedTurn::text("Done."),
            ],
        )
        .await;
        let (_, events) = setup.send(&id(), "page count of the PDF r.pdf").await;
        assert!(events.iter().any(|e| matches!(e, TurnEvent::Escalated { reason } if reason.contains("outside the visible set"))));
        let tools = setup.tools_per_request();
        assert!(tools[0].len() < 10, "{:?}", tools[0]);
        assert_eq!(
            tools[1].len(),
            all_tools(&setup),
            "escalated for the rest of the turn"
        );
        let results = tool_results(&setup.server.requests()[2], wire);
        assert!(
            results[0].starts_with("Tool 'config_setting_3' is not available"),
            "{}",
            results[0]
        );
        assert_eq!(results[1], "config_setting_3 ran with {}");
    }
}

#[tokio::test]
async fn repeated_failures_escalate_to_the_whole_catalog() {
    let setup = Setup::routed(
        Wire::Anthropic,
        false,
        vec![
            ScriptedTurn::tool_call("a", "files_read", json!({"path": "missing.txt"})),
            ScriptedTurn::tool_call("b", "files_read", json!({"path": "gone.txt"})),
            ScriptedTurn::text("Could not read them."),
        ],
    )
    .await;
    let (_, events) = setup
        .send(&id(), "read the file notes from the files root")
        .await;
    assert_eq!(routed(&events).routed[0], GroupId::new("files").unwrap());
    let tools = setup.tools_per_request();
    assert_eq!(tools[0], tools[1], "one failure is not yet no progress");
    assert_eq!(tools[2].len(), all_tools(&setup));
    assert!(events.iter().any(
        |e| matches!(e, TurnEvent::Escalated { reason } if reason == "2 tool calls failed in a row")
    ));
}

#[tokio::test]
async fn embeddings_route_a_turn_that_shares_no_word_with_its_group() {
    use std::sync::Arc;

    use toolgate_agent::{AgentOptions, SemanticRouting};
    use toolgate_core::routing::{Router, RoutingConfig};
    use toolgate_llm::scripted::{ScriptedServer, embeddings_reply};
    use toolgate_llm::{EmbeddingsClient, ProviderConfig, ProviderKind};

    let host = super::support::TestHost::new().await;
    let router = {
        let catalog = host.catalog();
        Router::lexical(
            &catalog,
            RoutingConfig::default().validate(&catalog).unwrap(),
        )
    };
    // One direction per group; the turn points at `crm`.
    let groups = router.groups().to_vec();
    let crm = groups.iter().position(|g| g.as_str() == "crm").unwrap();
    let one_hot = |i: usize| {
        (0..groups.len())
            .map(|j| if i == j { 1.0 } else { 0.0 })
            .collect::<Vec<f32>>()
    };
    let embeddings = ScriptedServer::start().await.unwrap();
    embeddings.push(embeddings_reply(
        &(0..groups.len()).map(one_hot).collect::<Vec<_>>(),
    ));
    embeddings.push(embeddings_reply(&[one_hot(crm)]));
    let client = EmbeddingsClient::new(ProviderConfig::new(
        ProviderKind::OpenAi,
        format!("{}/v1", embeddings.url()),
        "embedder",
    ))
    .unwrap();
    let semantic = SemanticRouting::new(client, &router, &host.toolbox, 0.5)
        .await
        .unwrap();
    let options = AgentOptions {
        router: Some(Arc::new(router)),
        semantic: Some(Arc::new(semantic)),
        ..AgentOptions::default()
    };
    let setup = Setup::with_host_for_tests(
        Wire::OpenAi,
        true,
        vec![ScriptedTurn::text("On it.")],
        options,
        host,
    )
    .await;
    let (_, events) = setup.send(&id(), "zzxq vvbn").await;
    let decision = routed(&events);
    assert_eq!(
        decision.routed[0],
        GroupId::new("crm").unwrap(),
        "{decision:?}"
    );
    assert_eq!(decision.tier, Tier::High);
    assert_eq!(setup.tools_per_request()[0].len(), core_tools().len() + 90);
    let asked = embeddings.requests();
    assert_eq!(asked[1].body["input"], json!(["zzxq vvbn"]));
    assert!(
        asked[0].body["input"][crm]
            .as_str()
            .unwrap()
            .starts_with("Crm: ")
    );
}
