use toolgate_core::routing::Fusion;

use super::*;

fn setting(route_above: f64) -> RouterSetting {
    RouterSetting {
        fusion: Fusion::Lexical,
        route_above,
        tools_per_group: 1,
        max_groups: 20,
        max_token_share: None,
        id_finders: false,
    }
}

fn measured(worst_recall: f64, token_fraction: f64, most_tokens: f64) -> Measured {
    Measured {
        worst_recall,
        mean_recall: worst_recall,
        token_fraction,
        most_tokens,
        cost: None,
    }
}

fn costed(worst_recall: f64, cached_share: f64, extra_round_trips: f64) -> Measured {
    Measured {
        cost: Some(RouterCost {
            cached_share,
            extra_round_trips,
        }),
        ..measured(worst_recall, 0.08, 0.12)
    }
}

#[test]
fn among_settings_keeping_the_floor_the_cheapest_task_wins_not_the_highest_recall() {
    let safer = (setting(0.1), costed(0.99, 1.40, 0.45));
    let cheaper = (setting(0.3), costed(0.96, 0.90, 0.30));
    // Below the floor: never costed, never chosen while one keeps it.
    let below = (setting(0.6), measured(0.90, 0.02, 0.03));
    let chosen = best([safer, below, cheaper]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.3));
}

#[test]
fn a_cheaper_task_over_the_round_trip_goal_loses_to_one_within_it() {
    let slow = (setting(0.1), costed(0.97, 0.50, 0.80));
    let quick = (setting(0.2), costed(0.97, 0.90, 0.40));
    let chosen = best([slow, quick]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.2));
    // None within it: the fewest round trips.
    let slower = (setting(0.3), costed(0.97, 0.40, 1.20));
    let chosen = best([slower, slow]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.1));
}

#[test]
fn each_dataset_holds_a_setting_to_the_goal_or_near_the_best_recall_reached_there() {
    // Two datasets; per setting, its (recall, token share) on each.
    let figures = vec![
        vec![(0.99, 0.08), (0.93, 0.12)],
        vec![(0.96, 0.05), (0.925, 0.10)],
        vec![(0.94, 0.04), (0.93, 0.06)],
        // Over the budget: its recall sets no floor.
        vec![(1.0, 0.20), (0.99, 0.30)],
    ];
    let measured: Vec<Measured> = figures.iter().map(|f| Measured::over(f, 2)).collect();
    let floors = recall_floors(&figures, &measured);
    // The first dataset reaches the goal; on the second the best within
    // the budget is 0.93.
    assert_eq!(floors[0], RECALL_FLOOR);
    assert!(
        (floors[1] - (0.93 - RECALL_SLACK)).abs() < 1e-12,
        "{floors:?}"
    );
    let kept: Vec<bool> = figures.iter().map(|f| keeps(f, &floors)).collect();
    assert_eq!(kept, [true, true, false, true]);
}

#[test]
fn a_setting_over_the_goal_on_one_dataset_loses_to_one_within_it_on_each() {
    // Cheap on average, but 27% of the tokens on one small catalog.
    let lopsided = (setting(0.2), measured(0.99, 0.08, 0.27));
    let even = (setting(0.5), measured(0.95, 0.06, 0.12));
    let chosen = best([lopsided, even]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.5));
}

#[test]
fn within_both_budgets_the_higher_worst_recall_wins() {
    let safer = (setting(0.3), measured(0.97, 0.09, 0.14));
    let cheaper = (setting(0.6), measured(0.93, 0.03, 0.05));
    let chosen = best([cheaper, safer]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.3));
}

#[test]
fn when_none_is_within_budget_the_cheapest_on_its_costliest_dataset_wins() {
    let a = (setting(0.2), measured(0.99, 0.12, 0.30));
    let b = (setting(0.4), measured(0.90, 0.13, 0.20));
    let chosen = best([a, b]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.4));
}

/// A model routing a group whose tools the turn names.
fn fitted() -> Fitted {
    Fitted {
        model: PerGroup {
            weight: 5.0,
            bias: -2.0,
            rank: 0.0,
        },
        calibration: None,
        self_test: false,
    }
}

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

/// A catalog of 24 groups of three tools each (`{noun}_create`,
/// `{noun}_delete`, `{noun}_list`) and one turn per group needing two of
/// its tools.
fn two_tools_a_turn(dir: &std::path::Path) -> Dataset {
    use serde_json::json;
    const NOUNS: [&str; 24] = [
        "invoice",
        "ticket",
        "playlist",
        "calendar",
        "contact",
        "repository",
        "bucket",
        "cluster",
        "printer",
        "recipe",
        "garden",
        "vehicle",
        "patient",
        "course",
        "warehouse",
        "flight",
        "hotel",
        "podcast",
        "photo",
        "budget",
        "contract",
        "sensor",
        "router",
        "tenant",
    ];
    let mut tools = Vec::new();
    let mut queries = Vec::new();
    for (id, noun) in NOUNS.iter().enumerate() {
        for verb in ["create", "delete", "list"] {
            // Schemas large beside the listing's line, as real ones are.
            let properties: serde_json::Map<String, serde_json::Value> = (0..8)
                .map(|field| {
                    let description = format!(
                        "field {field} of the {noun} to {verb}: free text as the service stores it, up to 200 characters"
                    );
                    (format!("field_{field}"), json!({"type": "string", "description": description}))
                })
                .collect();
            tools.push(
                json!({"name": format!("{noun}_{verb}"), "group": noun,
                       "description": format!("{verb} a {noun} record"),
                       "parameters": {"type": "object", "properties": properties}})
                .to_string(),
            );
        }
        queries.push(
            json!({"id": id, "query": format!("create a {noun} named draft, then delete the old {noun}"),
                   "tools": [format!("{noun}_create"), format!("{noun}_delete")],
                   "groups": [noun], "split": "test"})
            .to_string(),
        );
    }
    std::fs::write(dir.join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("queries.jsonl"), queries.join("\n") + "\n").unwrap();
    Dataset::load(dir).unwrap()
}

#[test]
fn the_settings_keeping_the_floor_are_chosen_by_what_a_task_costs_not_by_fewest_tokens() {
    use toolgate_core::Encoding;

    let dir = tempfile::tempdir().unwrap();
    let dataset = two_tools_a_turn(dir.path());
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    // Sure of the group the turn names and of no other, so every turn is
    // restricted to it.
    let sure = Fitted {
        model: PerGroup {
            weight: 30.0,
            bias: -20.0,
            rank: 0.0,
        },
        ..fitted()
    };
    let fitted = [(Fusion::Lexical, sure)];
    let sets = [ChoiceSet::new(&prepared, &fitted, false, &counter)];
    let candidates: Vec<RouterSetting> = [1, 2, 0]
        .map(|tools_per_group| RouterSetting {
            tools_per_group,
            max_token_share: Some(DEFAULT_MAX_TOKEN_SHARE),
            ..setting(0.5)
        })
        .to_vec();
    let measured = measure_on(&candidates, &sets);
    // Every one routes the turn's own group, within the budget: all keep
    // the floor and are costed.
    assert!(
        measured
            .iter()
            .all(|m| m.worst_recall == 1.0 && m.cost.is_some()),
        "{measured:?}"
    );
    let trips: Vec<f64> = measured
        .iter()
        .map(|m| m.cost.unwrap().extra_round_trips)
        .collect();
    // One tool a group leaves the second tool to a load: a round trip
    // every task. Two, or the whole group, none.
    assert_eq!(trips, [1.0, 0.0, 0.0], "{measured:?}");
    // By recall alone the fewest tokens would win: one tool.
    let uncosted = candidates
        .iter()
        .copied()
        .zip(measured.iter().map(|m| Measured { cost: None, ..*m }));
    assert_eq!(best(uncosted).map(|(s, _)| s.tools_per_group), Some(1));
    let (chosen, figures) = choose(&candidates, &sets).unwrap();
    assert_ne!(chosen.tools_per_group, 1, "{figures:?}");
    let cheapest = measured
        .iter()
        .map(|m| m.cost.unwrap().cached_share)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(figures.cost.unwrap().cached_share, cheapest);
}
