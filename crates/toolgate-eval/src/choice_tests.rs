use serde_json::json;
use toolgate_core::Encoding;
use toolgate_core::TokenCounter;
use toolgate_core::routing::{PerGroup, RoutingConfig};

use super::*;
use crate::dataset::Dataset;
use crate::fixtures::{naming_model, router_setting as setting};

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
fn round_trips_within_the_tie_count_as_the_same_and_the_cheaper_wins() {
    use crate::cost_choice::ROUND_TRIP_TIE;
    let fewest = (setting(0.1), costed(0.97, 1.20, 1.05));
    let cheaper = (
        setting(0.2),
        costed(0.97, 1.10, 1.05 + ROUND_TRIP_TIE / 2.0),
    );
    let chosen = best([fewest, cheaper]).map(|(s, _)| s.route_above);
    assert_eq!(chosen, Some(0.2));
    // Beyond the tie, fewer round trips win over a cheaper bill.
    let slower = (
        setting(0.3),
        costed(0.97, 0.60, 1.05 + ROUND_TRIP_TIE * 2.0),
    );
    let chosen = best([fewest, slower]).map(|(s, _)| s.route_above);
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
fn what_was_considered_names_the_dataset_where_more_tools_fall_short() {
    let with = |tools_per_group, route_above| RouterSetting {
        tools_per_group,
        ..setting(route_above)
    };
    let settings = vec![with(1, 0.3), with(3, 0.3), with(3, 0.5)];
    // Per setting, its (recall, token share) on `large` then `small`.
    let figures = vec![
        vec![(0.99, 0.05), (0.96, 0.10)],
        vec![(0.99, 0.07), (0.90, 0.12)],
        vec![(0.97, 0.06), (0.88, 0.18)],
    ];
    let mut measured: Vec<Measured> = figures.iter().map(|f| Measured::over(f, 2)).collect();
    measured[0].cost = Some(RouterCost {
        cached_share: 1.2,
        extra_round_trips: 0.6,
    });
    let trials = Trials {
        settings,
        floors: recall_floors(&figures, &measured),
        measured,
        figures,
        datasets: vec!["large".to_owned(), "small".to_owned()],
    };
    let (chosen, _) = trials.best().unwrap();
    let considered = trials.considered(Some(chosen));
    let three = considered.iter().find(|c| c.tools_per_group == 3).unwrap();
    // The better of the two with three tools by recall, short of the floor
    // on `small` alone.
    assert_eq!(three.route_above, 0.3);
    assert!(!three.chosen && three.task_cost.is_none());
    let short: Vec<(&str, f64)> = three
        .short
        .iter()
        .map(|s| (s.dataset.as_str(), s.recall))
        .collect();
    assert_eq!(short, [("small", 0.90)]);
    assert_eq!(three.shortfalls(), "small: recall 0.900 < 0.950");
    // Printed with the decimals that tell a near miss from its floor.
    let near = Shortfall {
        recall: 0.9329,
        floor: 0.93304,
        ..three.short[0].clone()
    };
    assert_eq!(near.to_string(), "small: recall 0.9329 < 0.9330");
    let one = considered.iter().find(|c| c.tools_per_group == 1).unwrap();
    assert!(one.chosen && one.short.is_empty() && one.task_cost.is_some());
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

/// A catalog of 24 groups of three tools each (`{noun}_create`,
/// `{noun}_delete`, `{noun}_list`) and one turn per group needing two of
/// its tools.
fn two_tools_a_turn(dir: &std::path::Path) -> Dataset {
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
        ..naming_model()
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
    let trials = measure_on(&candidates, &sets);
    let measured = &trials.measured;
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
    let (chosen, figures, considered) = choose(&candidates, &sets).unwrap();
    assert_ne!(chosen.tools_per_group, 1, "{figures:?}");
    // What the choice was between: the three tried, none short of the
    // floor, the chosen one marked.
    let tried: Vec<(usize, bool)> = considered
        .iter()
        .map(|c| (c.tools_per_group, c.chosen))
        .collect();
    assert_eq!(
        tried,
        [0, 1, 2].map(|tools| (tools, tools == chosen.tools_per_group)),
    );
    assert!(
        considered.iter().all(|c| c.short.is_empty()),
        "{considered:?}"
    );
    let cheapest = measured
        .iter()
        .map(|m| m.cost.unwrap().cached_share)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(figures.cost.unwrap().cached_share, cheapest);
}

const WORDS: [&str; 7] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
];

/// Seven groups of two tools each (`alpha_find`, `alpha_list`, ...), whose
/// schemas cost what real ones do (a one-line answer is a small share of
/// them), and one query per group count: the first needs every group, each
/// later one a group fewer. A query names its groups and shares no word
/// with the others.
fn seven_groups(dir: &std::path::Path) -> Dataset {
    let properties: serde_json::Map<String, serde_json::Value> = (0..12)
        .map(|i| {
            let description = format!(
                "Option {i} of the request: a filter, a sort order or a page, as the service \
                 documents it, passed through unchanged when given"
            );
            (
                format!("option_{i}"),
                json!({"type": "string", "description": description}),
            )
        })
        .collect();
    let tools: Vec<String> = WORDS
        .iter()
        .flat_map(|word| {
            ["find", "list"].map(|verb| {
                json!({"name": format!("{word}_{verb}"), "group": word,
                       "description": format!("{verb} {word} records"),
                       "parameters": {"type": "object", "properties": properties}})
                .to_string()
            })
        })
        .collect();
    std::fs::write(dir.join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    let queries: Vec<String> = (0..3)
        .map(|fewer| {
            let needed = &WORDS[..WORDS.len() - fewer];
            json!({"id": fewer, "query": needed.join(" and "),
                   "groups": needed, "split": "test"})
            .to_string()
        })
        .collect();
    std::fs::write(dir.join("queries.jsonl"), queries.join("\n") + "\n").unwrap();
    Dataset::load(dir).unwrap()
}

#[test]
fn the_search_lists_as_many_groups_as_the_turns_need_among_those_offered() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = seven_groups(dir.path());
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let set = ChoiceSet::new(&prepared, &[], false, &counter);
    let queries = set.queries();
    let listed = |groups: usize| {
        find_listing(&prepared, &prepared.taxonomy, groups, &counter, &queries)
            .iter()
            .map(|seen| seen.groups.len())
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(5), [5, 5, 5]);
    assert_eq!(listed(8), [7, 6, 5], "no group the turn does not match");

    // Five groups hold 5/7, 5/6 and 5/5 of the turns' groups; eight hold
    // them all, and twelve no more for the same tokens: the fewer wins.
    let (chosen, measured) = choose_search_groups(&[set], &counter).unwrap();
    assert_eq!(chosen, 8);
    assert_eq!(measured.worst_recall, 1.0);
}
