use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Embeddings, HybridScorer, RawEvidence, dot, leave_out, tool_text, tool_texts};
use crate::catalog::Catalog;
use crate::group::ToolGroup;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::routing::config::RoutingConfig;
use crate::routing::fusion::Fusion;
use crate::routing::router::Router;
use crate::routing::scorer::GroupScorer;
use crate::tool::ToolDefinition;

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (group, tools) in [
        (
            "mail",
            vec![
                ("send_message", "Send a message"),
                ("list_inbox", "List the inbox"),
            ],
        ),
        (
            "money",
            vec![("convert_currency", "Convert an amount between currencies")],
        ),
    ] {
        let tools = tools
            .into_iter()
            .map(|(name, text)| {
                let schema = json!({"type": "object", "properties": {"amountDue": {}}});
                let definition =
                    ToolDefinition::new(ToolName::new(name).unwrap(), text, schema).unwrap();
                (definition, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(group).unwrap(), group, "things"),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

/// Three tools on three axes; a turn about "cash" on the currency tool's.
/// Only the first `tools` tool vectors are given.
#[derive(Debug)]
struct Fixed {
    tools: usize,
}

impl Embeddings for Fixed {
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        assert_eq!(texts.len(), 3);
        let vectors = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.1, 1.0],
        ];
        Some(vectors.into_iter().take(self.tools).collect())
    }

    fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        text.contains("cash").then(|| vec![0.0, 0.0, 1.0])
    }
}

fn embeddings(tools: usize) -> Option<Arc<dyn Embeddings>> {
    Some(Arc::new(Fixed { tools }))
}

#[test]
fn a_paraphrase_no_word_matches_is_routed_by_its_meaning() {
    let catalog = catalog();
    let taxonomy = RoutingConfig::default().validate(&catalog).unwrap();
    let lexical = HybridScorer::new(&catalog, &taxonomy, None, Fusion::Rrf { k: 10.0 });
    assert!(!lexical.is_semantic());
    assert!(
        lexical
            .scores("how much cash is that in yen", &[])
            .iter()
            .all(|s| *s == 0.0)
    );

    let hybrid = HybridScorer::new(&catalog, &taxonomy, embeddings(3), Fusion::Rrf { k: 10.0 });
    assert!(hybrid.is_semantic());
    let router = Router::new(Box::new(hybrid), taxonomy);
    let decision = router.route("how much cash is that in yen", &[]);
    assert_eq!(decision.routed[0], GroupId::new("money").unwrap());
    assert_eq!(
        router.tool_scores("how much cash is that in yen", &[])[0]
            .tool
            .as_str(),
        "convert_currency"
    );
}

#[test]
fn vectors_that_do_not_match_the_tools_leave_the_scorer_lexical() {
    let catalog = catalog();
    let taxonomy = RoutingConfig::default().validate(&catalog).unwrap();
    let scorer = HybridScorer::new(&catalog, &taxonomy, embeddings(2), Fusion::Semantic);
    assert!(!scorer.is_semantic());
    let scores = scorer.scores("send a message", &[]);
    assert!(scores[0] > 0.0 && scores[1] == 0.0, "{scores:?}");
}

#[test]
fn a_tool_is_embedded_by_its_spaced_name_description_and_parameters() {
    let catalog = catalog();
    let texts = tool_texts(&catalog);
    let names: Vec<&str> = texts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["send_message", "list_inbox", "convert_currency"]);
    let tool = catalog.tool("convert_currency").unwrap().definition;
    assert_eq!(
        tool_text(tool),
        "convert currency: Convert an amount between currencies (amount due)"
    );
}

#[test]
fn the_router_toolgate_runs_sends_each_routed_groups_best_tool_by_default() {
    use super::{HYBRID_DEFAULTS, LEXICAL_DEFAULTS};
    use crate::routing::decision::PartialGroup;
    use crate::routing::router::Confidence;

    let catalog = catalog();
    let taxonomy = RoutingConfig::default().validate(&catalog).unwrap();
    let router = Router::hybrid(&catalog, taxonomy.clone(), embeddings(3));
    assert_eq!(
        router.confidence(),
        Confidence::PerGroup(HYBRID_DEFAULTS.model)
    );
    let decision = router.route("how much cash is that in yen", &[]);
    assert_eq!(
        decision.partial,
        [PartialGroup {
            group: GroupId::new("money").unwrap(),
            tools: vec![ToolName::new("convert_currency").unwrap()],
        }]
    );

    // Without the model: the lexical defaults, and a words-only match.
    let lexical = Router::hybrid(&catalog, taxonomy, None);
    assert_eq!(
        lexical.confidence(),
        Confidence::PerGroup(LEXICAL_DEFAULTS.model)
    );
    let decision = lexical.route("send a message to the team", &[]);
    assert_eq!(decision.routed[0], GroupId::new("mail").unwrap());
    assert_eq!(
        decision.partial[0].tools,
        [ToolName::new("send_message").unwrap()]
    );

    // tools_per_group = 0 asks for whole groups.
    let whole = RoutingConfig {
        tools_per_group: Some(0),
        ..RoutingConfig::default()
    };
    let router = Router::hybrid(&catalog, whole.validate(&catalog).unwrap(), embeddings(3));
    assert_eq!(
        router.route("how much cash is that in yen", &[]).partial,
        []
    );
}

#[test]
fn the_router_toolgate_runs_keeps_turns_within_the_default_budget_but_search_does_not() {
    use crate::routing::DEFAULT_MAX_TOKEN_SHARE;

    let catalog = catalog();
    // Every group within reach of the best, so that only a budget stops.
    let taxonomy = RoutingConfig {
        route_above: Some(0.01),
        ..RoutingConfig::default()
    }
    .validate(&catalog)
    .unwrap();
    let query = "send a message and convert the currencies";
    let router = Router::hybrid(&catalog, taxonomy.clone(), None);
    assert_eq!(
        router.taxonomy().max_token_share,
        Some(DEFAULT_MAX_TOKEN_SHARE)
    );
    // Two small groups: the listing alone is over 15% of their tokens, so
    // only the best group fits; search, without a budget, names both.
    let search = Router::hybrid_search(&catalog, taxonomy, None);
    assert_eq!(search.taxonomy().max_token_share, None);
    assert_eq!(search.route(query, &[]).routed.len(), 2);
    assert_eq!(router.route(query, &[]).routed.len(), 1);
}

#[test]
fn the_dot_product_counts_every_component_of_any_length() {
    // Lengths below, at and past the partial sums, and the model's 384.
    for length in [0, 1, 15, 16, 17, 33, 384] {
        let a: Vec<f32> = (0..length).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..length).map(|i| (i % 5) as f32 * 0.5).collect();
        let expected: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        let got = f64::from(dot(&a, &b));
        assert!(
            (got - expected).abs() < 1e-3,
            "length {length}: {got} against {expected}"
        );
    }
}

#[test]
fn leaving_a_tool_out_clears_both_kinds_of_its_evidence() {
    let mut raw = RawEvidence {
        lexical: vec![1.0, 2.0],
        semantic: Some(vec![0.5, 0.7]),
        documents: vec![3.0],
    };
    leave_out(&mut raw, 1);
    assert_eq!(raw.lexical, [1.0, 0.0]);
    assert_eq!(raw.semantic, Some(vec![0.5, 0.0]));
    assert_eq!(raw.documents, [3.0]);
    leave_out(&mut raw, 7);
    assert_eq!(raw.lexical, [1.0, 0.0]);
}
