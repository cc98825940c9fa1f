//! The router in the agent loop: routed groups pre-loaded and
//! recorded, a low-confidence turn shown the whole catalog, and no progress
//! escalating to it.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_agent::TurnEvent;
use toolgate_core::routing::{LearnedRecovery, OnlineCalibration, Recalibration, Tier, Visible};
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
            .starts_with("CRM: ")
    );
}

/// With `tools_per_group = 1`, a routed group arrives with its best tool
/// only; the model reads how many more it has, a call to another of its
/// tools names the group to load, and a new agent over the same store
/// restores exactly that.
#[tokio::test]
async fn a_group_routed_partly_arrives_with_its_best_tool_and_a_restart_restores_it() {
    use std::sync::Arc;

    use toolgate_agent::AgentOptions;
    use toolgate_core::routing::{Router, RoutingConfig};
    use toolgate_core::{ActiveToolSet, GroupSelection, ToolName};
    use toolgate_llm::scripted::ScriptedServer;
    use toolgate_store::MemoryStore;

    use super::support::{TestHost, agent_with, system_prompt, tool_names, user_texts};

    let query = "page count and metadata of the PDF r.pdf";
    let partial_text = "Loaded 1 of 2 tools from group 'PDF Tools' (load_tool_group 'pdf' loads the other 1):\n\
                        - pdf_info: Page count and metadata of a PDF";
    for (wire, stream) in WIRES {
        let host = TestHost::new().await;
        let router = {
            let catalog = host.catalog();
            let config = RoutingConfig {
                tools_per_group: Some(1),
                ..RoutingConfig::default()
            };
            Router::lexical(&catalog, config.validate(&catalog).unwrap())
        };
        let options = AgentOptions {
            router: Some(Arc::new(router)),
            ..AgentOptions::default()
        };
        let store = Arc::new(MemoryStore::new());
        let server = ScriptedServer::start().await.unwrap();
        for turn in [
            ScriptedTurn::tool_call("a", "pdf_info", json!({"path": "r.pdf"})),
            ScriptedTurn::tool_call("b", "pdf_merge", json!({"path": "r.pdf"})),
            ScriptedTurn::text("Done."),
            ScriptedTurn::tool_call("c", "load_tool_group", json!({"group_name": "pdf"})),
            ScriptedTurn::text("Still 3 pages."),
        ] {
            server.push(turn.reply(wire, stream));
        }
        let first = agent_with(
            &server,
            wire,
            stream,
            &host,
            Arc::clone(&store),
            options.clone(),
        );
        let mut events = Vec::new();
        first
            .send(&id(), query, &mut |e| events.push(e), &Default::default())
            .await
            .unwrap();
        let decision = routed(&events);
        assert_eq!(decision.routed, vec![GroupId::new("pdf").unwrap()]);

        let requests = server.requests();
        let mut expected = core_tools();
        expected.push("pdf_info".to_owned());
        assert_eq!(
            tool_names(&requests[0], wire),
            expected,
            "only the group's best tool"
        );
        assert_eq!(
            user_texts(&requests[0], wire),
            [query, partial_text],
            "the model reads that the group has more"
        );
        assert_eq!(
            tool_results(&requests[2], wire),
            [
                r#"pdf_info ran with {"path":"r.pdf"}"#,
                "Tool 'pdf_merge' is not available for this agent. It belongs to tool group 'pdf'; call load_tool_group with group_name 'pdf' and tools [\"pdf_merge\"] first (without tools it loads the whole group)."
            ]
        );
        assert_eq!(host.called(), ["pdf_info"]);

        // A new agent over the same store: the same set, in the same order.
        let second = agent_with(&server, wire, stream, &host, Arc::clone(&store), options);
        let restored = second.active_set(&id()).await.unwrap();
        let mut live = ActiveToolSet::new();
        live.load_tools(
            &host.catalog(),
            "pdf",
            &[ToolName::new("pdf_info").unwrap()],
        )
        .unwrap();
        assert_eq!(restored, live);
        let pdf_info = ToolName::new("pdf_info").unwrap();
        assert_eq!(
            restored.selection("pdf"),
            Some(GroupSelection::Tools(vec![&pdf_info]))
        );
        second
            .send(
                &id(),
                "and the page count again?",
                &mut |_| {},
                &Default::default(),
            )
            .await
            .unwrap();
        let requests = server.requests();
        assert_eq!(
            tool_names(&requests[3], wire),
            expected,
            "routed again: the same"
        );
        assert_eq!(
            user_texts(&requests[3], wire),
            [query, partial_text, "and the page count again?"]
        );
        // load_tool_group loads the rest, after what the model has seen.
        let mut whole = expected.clone();
        whole.push("pdf_merge".to_owned());
        assert_eq!(tool_names(&requests[4], wire), whole);
        assert_eq!(
            tool_results(&requests[4], wire).last().unwrap(),
            "Loaded 2 tools from group 'PDF Tools':\n\
             - pdf_info: Page count and metadata of a PDF\n\
             - pdf_merge: Merge PDF files"
        );
        assert_eq!(
            second.active_set(&id()).await.unwrap().selection("pdf"),
            Some(GroupSelection::Whole)
        );
        assert_eq!(
            system_prompt(&requests[4], wire),
            system_prompt(&requests[0], wire),
            "the group listing never shows what is loaded"
        );
    }
}

#[tokio::test]
async fn each_routed_turns_outcome_teaches_the_online_calibration() {
    let (setup, router) = Setup::routed_by(
        Wire::OpenAi,
        false,
        vec![
            // Routed to pdf; the turn needed a config tool.
            ScriptedTurn::tool_call("a", "config_setting_3", json!({})),
            ScriptedTurn::tool_call("b", "config_setting_3", json!({})),
            ScriptedTurn::text("Done."),
            // Routed to pdf again; pdf was enough.
            ScriptedTurn::tool_call("c", "pdf_info", json!({"path": "r.pdf"})),
            ScriptedTurn::text("3 pages."),
            // No tool used: no outcome.
            ScriptedTurn::text("Bye."),
        ],
        |router| router.with_online_calibration(OnlineCalibration::new(1.0)),
    )
    .await;
    let query = "page count of the PDF r.pdf";
    let (_, events) = setup.send(&id(), query).await;
    let first = routed(&events).clone();
    assert_eq!(first.routed, vec![GroupId::new("pdf").unwrap()]);
    assert_eq!(
        first.confidence, first.fitted_confidence,
        "nothing learned yet"
    );
    let (recalibration, outcomes) = router.online_calibration().unwrap();
    assert_eq!(outcomes, 1);
    assert_ne!(recalibration, Recalibration::IDENTITY);

    // A new conversation: no earlier turn to read as context.
    let (_, events) = setup.send(&ConversationId::new("d"), query).await;
    let second = routed(&events);
    assert!(
        second.confidence < second.fitted_confidence,
        "a miss lowers what a decision is stated at: {second:?}"
    );
    assert_eq!(router.online_calibration().unwrap().1, 2);

    setup.send(&id(), "thanks").await;
    assert_eq!(router.online_calibration().unwrap().1, 2);
}

#[tokio::test]
async fn a_group_routed_turns_keep_missing_is_shown_on_the_next_ones() {
    let needs_config = || {
        [
            ScriptedTurn::tool_call("a", "config_setting_3", json!({})),
            ScriptedTurn::tool_call("b", "config_setting_3", json!({})),
            ScriptedTurn::text("Done."),
        ]
    };
    let mut script: Vec<ScriptedTurn> = needs_config().into_iter().collect();
    script.extend(needs_config());
    script.push(ScriptedTurn::text("3 pages."));
    let (setup, router) = Setup::routed_by(Wire::OpenAi, false, script, |router| {
        router.with_learned_recovery(LearnedRecovery::default())
    })
    .await;
    let query = "page count of the PDF r.pdf";
    let (pdf, config) = (
        GroupId::new("pdf").unwrap(),
        GroupId::new("config").unwrap(),
    );
    for (turn, conversation) in ["d1", "d2"].into_iter().enumerate() {
        let (_, events) = setup.send(&ConversationId::new(conversation), query).await;
        let decision = routed(&events);
        assert_eq!(decision.routed, std::slice::from_ref(&pdf));
        assert_eq!(decision.visible, Visible::Groups(vec![pdf.clone()]));
        assert_eq!(
            router.learned_recovery(),
            Some((
                if turn == 0 {
                    vec![]
                } else {
                    vec![config.clone()]
                },
                turn + 1
            )),
            "one miss is chance, two are learned"
        );
    }
    let (_, events) = setup.send(&ConversationId::new("d3"), query).await;
    let decision = routed(&events);
    assert_eq!(decision.tier, Tier::High);
    assert_eq!(
        decision.routed,
        std::slice::from_ref(&pdf),
        "the ranking is its own"
    );
    assert_eq!(decision.visible, Visible::Groups(vec![pdf, config]));
}

/// Sends the turn about a PDF's page count through `agent`, its events in
/// order.
async fn send_pdf_turn(
    agent: &toolgate_agent::Agent<toolgate_store::MemoryStore>,
) -> Vec<TurnEvent> {
    let mut events = Vec::new();
    agent
        .send(
            &id(),
            "page count and metadata of the PDF r.pdf",
            &mut |e| events.push(e),
            &Default::default(),
        )
        .await
        .unwrap();
    events
}

/// Scripts a call outside the routed group, which escalates the turn to
/// the whole catalog, then an answer.
fn script_escalation(server: &toolgate_llm::scripted::ScriptedServer, wire: Wire) {
    for turn in [
        ScriptedTurn::tool_call("a", "config_setting_3", json!({})),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(wire, true));
    }
}

/// An agent over `host`'s tools routed by default settings, its model
/// (scripted by `server`) taking at most `limit` tools.
fn routed_within(
    host: &super::support::TestHost,
    server: &toolgate_llm::scripted::ScriptedServer,
    wire: Wire,
    limit: usize,
) -> toolgate_agent::Agent<toolgate_store::MemoryStore> {
    routed_configured(host, server, wire, |config| {
        config.max_tools = Some(limit);
    })
}

/// An agent over `host`'s tools routed by default settings, its model
/// (scripted by `server`) configured as `adjust` leaves it.
fn routed_configured(
    host: &super::support::TestHost,
    server: &toolgate_llm::scripted::ScriptedServer,
    wire: Wire,
    adjust: impl FnOnce(&mut toolgate_llm::ProviderConfig),
) -> toolgate_agent::Agent<toolgate_store::MemoryStore> {
    use std::sync::Arc;

    use toolgate_agent::{Agent, AgentOptions};
    use toolgate_core::routing::{Router, RoutingConfig};
    use toolgate_core::{Encoding, TokenCounter};

    let router = {
        let catalog = host.catalog();
        Router::lexical(
            &catalog,
            RoutingConfig::default().validate(&catalog).unwrap(),
        )
    };
    Agent::new(
        super::support::model_configured(server, wire, true, adjust),
        Arc::clone(&host.toolbox),
        Arc::new(toolgate_store::MemoryStore::new()),
        AgentOptions {
            router: Some(Arc::new(router)),
            ..AgentOptions::default()
        },
        Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap()),
    )
}

#[tokio::test]
async fn a_catalog_larger_than_the_model_takes_is_sent_likeliest_groups_first() {
    use toolgate_llm::scripted::ScriptedServer;

    use super::support::{TestHost, tool_names};

    const LIMIT: usize = 10;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let host = TestHost::new().await;
        let server = ScriptedServer::start().await.unwrap();
        script_escalation(&server, wire);
        let agent = routed_within(&host, &server, wire, LIMIT);
        let events = send_pdf_turn(&agent).await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, TurnEvent::Escalated { .. }))
        );
        let decision = routed(&events);
        assert_eq!(decision.routed, [GroupId::new("pdf").unwrap()]);
        assert!(host.catalog().tools().count() > LIMIT);

        // The loaded tools as they were, then the other groups' tools in
        // the router's ranking, up to what the model takes.
        let escalated = tool_names(&server.requests()[1], wire);
        assert_eq!(escalated.len(), LIMIT, "{escalated:?}");
        let mut loaded = core_tools();
        loaded.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
        assert_eq!(escalated[..5], loaded[..]);
        let catalog = host.catalog();
        let next: Vec<String> = decision.ranked[1..]
            .iter()
            .flat_map(|(group, _)| catalog.group_tools(group.as_str()))
            .take(LIMIT - 5)
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(escalated[5..], next[..]);
    }
}

#[tokio::test]
async fn a_routed_group_the_model_cannot_take_is_left_out() {
    use toolgate_core::{Encoding, TokenCounter};
    use toolgate_llm::ProviderConfig;
    use toolgate_llm::scripted::ScriptedServer;

    use super::support::{TestHost, tool_names};

    let mut with_pdf = core_tools();
    with_pdf.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let tokens = {
        let host = TestHost::new().await;
        let catalog = host.catalog();
        with_pdf
            .iter()
            .map(|name| counter.tool(catalog.tool(name).unwrap().definition))
            .sum::<usize>()
    };
    // The core tools and the pdf group's two make five, of `tokens`.
    type Limits = fn(&mut ProviderConfig, usize);
    let tools: Limits = |config, limit| config.max_tools = Some(limit);
    let schema_tokens: Limits = |config, limit| config.max_tool_tokens = Some(limit);
    for (set, limit, expected) in [
        (tools, 5, &with_pdf),
        (tools, 4, &core_tools()),
        (schema_tokens, tokens, &with_pdf),
        (schema_tokens, tokens - 1, &core_tools()),
    ] {
        let host = TestHost::new().await;
        let server = ScriptedServer::start().await.unwrap();
        server.push(ScriptedTurn::text("Done.").reply(Wire::OpenAi, true));
        let agent = routed_configured(&host, &server, Wire::OpenAi, |config| set(config, limit));
        let events = send_pdf_turn(&agent).await;
        assert_eq!(routed(&events).routed, [GroupId::new("pdf").unwrap()]);
        assert_eq!(
            &tool_names(&server.requests()[0], Wire::OpenAi),
            expected,
            "limit {limit}"
        );
        // Only a load that happened is recorded: the next turn restores
        // what the model saw.
        let stored = agent.store().messages(&id()).await.unwrap();
        let recorded = stored
            .iter()
            .any(|m| m.message.tool_name.as_deref() == Some("load_tool_group"));
        assert_eq!(recorded, expected.len() == 5, "limit {limit}");
    }
}

#[tokio::test]
async fn a_catalog_costlier_than_the_model_takes_is_sent_within_its_token_limit() {
    use toolgate_core::{Encoding, TokenCounter};
    use toolgate_llm::scripted::ScriptedServer;

    use super::support::{TestHost, tool_names};

    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let host = TestHost::new().await;
        let tokens = |names: &[String]| -> Vec<usize> {
            let catalog = host.catalog();
            names
                .iter()
                .map(|name| counter.tool(catalog.tool(name).unwrap().definition))
                .collect()
        };
        let mut loaded = core_tools();
        loaded.extend(["pdf_info".to_owned(), "pdf_merge".to_owned()]);
        // Room for the loaded tools and about a dozen more.
        let limit = tokens(&loaded).iter().sum::<usize>() + 12 * tokens(&loaded)[4];
        let server = ScriptedServer::start().await.unwrap();
        script_escalation(&server, wire);
        let agent = routed_configured(&host, &server, wire, |config| {
            config.max_tools = None;
            config.max_tool_tokens = Some(limit);
        });
        let events = send_pdf_turn(&agent).await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, TurnEvent::Escalated { .. }))
        );

        // The loaded tools first, then as many others as the tokens allow.
        let escalated = tool_names(&server.requests()[1], wire);
        assert_eq!(escalated[..loaded.len()], loaded[..]);
        let sent: usize = tokens(&escalated).iter().sum();
        assert!(sent <= limit, "{sent} tokens sent, {limit} allowed");
        let unsent: Vec<String> = host
            .catalog()
            .tools()
            .map(|tool| tool.definition.name.to_string())
            .filter(|name| !escalated.contains(name))
            .collect();
        let cheapest = tokens(&unsent).into_iter().min().unwrap();
        assert!(sent + cheapest > limit, "room was left for {unsent:?}");
    }
}
