use super::*;
use crate::fixtures::{naming_model as fitted, router_setting as setting};

/// The fixture catalog with `queries`, loaded (the folder lives as long as
/// the first half).
fn dataset(queries: &[serde_json::Value]) -> (tempfile::TempDir, Dataset) {
    let root = tempfile::tempdir().unwrap();
    crate::fixtures::write_dataset(root.path(), queries);
    let dataset = Dataset::load(root.path()).unwrap();
    (root, dataset)
}

#[test]
fn a_replay_learning_recovery_shows_a_group_once_earlier_turns_missed_it_twice() {
    use serde_json::json;
    use toolgate_core::Encoding;

    // Every turn names mail and also needs the weather.
    let queries: Vec<serde_json::Value> = (0..4)
        .map(|id| {
            json!({"id": id, "query": "send a mail", "tools": ["mail_send", "weather_forecast"],
                   "groups": ["mail", "weather"], "split": "test"})
        })
        .collect();
    let (_root, dataset) = dataset(&queries);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let report: Vec<&Query> = dataset.queries.iter().collect();
    let fitted = fitted();
    let setting = setting(0.5);
    let visible = |decisions: &[Decision]| -> Vec<usize> {
        decisions
            .iter()
            .map(|d| match &d.visible {
                Visible::Groups(groups) => groups.len(),
                Visible::Catalog => usize::MAX,
            })
            .collect()
    };

    let (_, plain) = prepared.route(setting, &fitted, &report);
    assert_eq!(visible(&plain), [1, 1, 1, 1], "mail alone: {plain:?}");
    // Learning: the first two turns miss the weather. The third relies on
    // it too, but two misses in two turns brought the confidence below the
    // tiers, so it opens the whole catalog; it held with the weather, so
    // the fourth is restricted again, the weather shown beside mail. The
    // routed groups stay the ranking's own.
    let (seen, learned) = prepared.route_learned(setting, &fitted, &report);
    assert_eq!(visible(&learned), [1, 1, usize::MAX, 2]);
    let weather = GroupId::new("weather").unwrap();
    assert_eq!(learned[2].learned, std::slice::from_ref(&weather));
    assert!(
        learned
            .iter()
            .zip(&plain)
            .all(|(l, p)| l.routed == p.routed)
    );
    assert!(learned[3].confidence > learned[2].confidence);
    assert!(seen[3].tokens > seen[1].tokens);
}

/// Routes a turn that names two groups (so both score within any share of
/// the best) under `setting`: the groups routed, the tokens the turn saw and
/// every tool's tokens.
fn route_two_group_turn(setting: RouterSetting) -> (usize, usize, usize) {
    use serde_json::json;
    use toolgate_core::Encoding;

    let queries = [
        json!({"id": 0, "query": "send a mail with the weather forecast",
        "tools": ["mail_send", "weather_forecast"], "groups": ["mail", "weather"],
        "split": "test"}),
    ];
    let (_root, dataset) = dataset(&queries);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let report: Vec<&Query> = dataset.queries.iter().collect();
    let (seen, decisions) = prepared.route(setting, &fitted(), &report);
    (
        decisions[0].routed.len(),
        seen[0].tokens,
        prepared.costs.all_tools,
    )
}

#[test]
fn a_setting_routes_at_most_its_max_groups() {
    // Only the cap can keep one of the two groups out.
    let routed = |max_groups: usize| {
        route_two_group_turn(RouterSetting {
            max_groups,
            ..setting(0.2)
        })
        .0
    };
    assert_eq!(routed(1), 1);
    assert_eq!(routed(20), 2);
}

#[test]
fn a_setting_keeps_each_turn_within_its_token_share() {
    let seen = |share: Option<f64>| {
        route_two_group_turn(RouterSetting {
            max_token_share: share,
            ..setting(0.2)
        })
    };
    let (all, all_tokens, every_tool) = seen(None);
    let every_tool = every_tool as f64;
    assert_eq!(all, 2);
    // A share that holds the listing and the best group's tool, not both.
    let (one, one_tokens, _) = seen(Some((all_tokens - 1) as f64 / every_tool));
    assert_eq!(one, 1);
    assert!(one_tokens < all_tokens);
    assert_eq!(seen(Some(all_tokens as f64 / every_tool)).0, 2);
}

#[test]
fn a_fit_on_other_catalogs_is_restated_by_the_self_test_and_an_own_fit_is_not() {
    use serde_json::json;
    use toolgate_core::Encoding;

    let queries = [
        json!({"id": 0, "query": "send a mail", "tools": ["mail_send"],
                           "groups": ["mail"], "split": "test"}),
    ];
    let (_root, dataset) = dataset(&queries);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let report: Vec<&Query> = dataset.queries.iter().collect();
    let setting = setting(0.5);

    let own = fitted();
    assert_eq!(prepared.self_test(setting, &own), None);
    let (_, decisions) = prepared.route(setting, &own, &report);
    assert_eq!(decisions[0].confidence, decisions[0].fitted_confidence);

    let across = Fitted {
        self_test: true,
        ..fitted()
    };
    let test = prepared.self_test(setting, &across).unwrap();
    // The mail group's two tools probe it (the forecast tool has none to
    // carry its group once left out), and both find it.
    assert_eq!((test.probes, test.held), (2, 2));
    let (_, decisions) = prepared.route(setting, &across, &report);
    assert_eq!(
        decisions[0].confidence,
        test.recalibration.apply(decisions[0].fitted_confidence)
    );
    assert_ne!(
        test.recalibration,
        toolgate_core::routing::Recalibration::IDENTITY
    );
}

/// A tool search asked with the request ranks its words alone; read with
/// the turns before it, as a router reads them, the earlier turn's words
/// count too.
#[test]
fn a_tool_search_ranks_the_request_alone_or_with_the_earlier_turns() {
    use serde_json::json;
    use toolgate_core::Encoding;

    let queries = [
        json!({"id": 1, "query": "the weather forecast", "conversation_id": "c", "turn": 0,
               "split": "test"}),
        json!({"id": 2, "query": "now mail it", "tools": ["mail_send"], "groups": ["mail"],
               "conversation_id": "c", "turn": 1, "split": "test"}),
    ];
    let (_root, dataset) = dataset(&queries);
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let query = dataset
        .queries
        .iter()
        .find(|q| q.text == "now mail it")
        .unwrap();
    assert_eq!(query.earlier_turns(), ["the weather forecast"]);
    let best = |reads| prepared.tool_ranking(Fusion::Lexical, query, reads)[..2].to_vec();
    // Alone, "mail" finds the mail tools; with the earlier turn, the
    // forecast scores too.
    assert!(best(Reads::Request).iter().all(|t| t.starts_with("mail_")));
    assert!(best(Reads::EarlierTurns).contains(&"weather_forecast"));
}
