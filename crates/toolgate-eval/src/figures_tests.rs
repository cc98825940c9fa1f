use std::collections::HashSet;

use pretty_assertions::assert_eq;
use toolgate_core::GroupId;
use toolgate_core::routing::Visible;

use super::*;

fn group(id: &str) -> GroupId {
    GroupId::new(id).unwrap()
}

fn query(index: usize, gold_groups: &[&str], gold_tools: &[&str]) -> Query {
    Query {
        id: index.to_string(),
        text: String::new(),
        context: Vec::new(),
        gold_tools: gold_tools.iter().map(|t| (*t).to_owned()).collect(),
        gold_groups: gold_groups.iter().map(|g| group(g)).collect(),
        tune: false,
        index,
    }
}

/// Queries needing one group each, and no tool.
fn one_group_each(groups: &[&str]) -> Vec<Query> {
    groups
        .iter()
        .enumerate()
        .map(|(index, group)| query(index, &[group], &[]))
        .collect()
}

fn seen(groups: &[&str], tools: &[&str], tokens: usize, micros: f64) -> Seen {
    Seen {
        groups: groups.iter().map(|g| group(g)).collect(),
        tools: tools
            .iter()
            .map(|t| (*t).to_owned())
            .collect::<HashSet<_>>(),
        tokens,
        micros,
        all: false,
    }
}

fn decision(confidence: f64, tier: Tier, routed: &[&str]) -> Decision {
    let routed: Vec<GroupId> = routed.iter().map(|g| group(g)).collect();
    Decision {
        intent: None,
        confidence,
        fitted_confidence: confidence,
        tier,
        routed: routed.clone(),
        visible: Visible::Groups(routed),
        ranked: Vec::new(),
        learned: Vec::new(),
        partial: Vec::new(),
        passed_over: Vec::new(),
        finders: Vec::new(),
    }
}

#[test]
fn recall_is_the_visible_share_of_gold_and_one_when_nothing_is_needed() {
    let gold = ["a", "b", "c", "d"];
    assert_eq!(recall(&gold, |g| *g == "a" || *g == "c"), 0.5);
    assert_eq!(recall(&gold, |_| false), 0.0);
    assert_eq!(recall::<&str>(&[], |_| false), 1.0);
}

#[test]
fn the_mean_of_nothing_is_zero() {
    assert_eq!(mean([1.0, 2.0, 4.5].into_iter()), 2.5);
    assert_eq!(mean(std::iter::empty()), 0.0);
}

#[test]
fn a_summary_weighs_each_query_the_same_and_skips_queries_without_gold_tools() {
    let queries = [
        query(0, &["mail", "calendar"], &["mail_send", "calendar_create"]),
        query(1, &["weather"], &[]),
        query(2, &["mail"], &["mail_search"]),
    ];
    let queries: Vec<&Query> = queries.iter().collect();
    let seen = [
        seen(&["mail"], &["mail_send"], 100, 3.0),
        seen(&["weather"], &[], 50, 1.0),
        seen(&["calendar"], &["calendar_create"], 150, 2.0),
    ];
    let report = summary("p".to_owned(), &queries, &seen, 1000.0);
    let figures = (
        report.policy.as_str(),
        report.group_recall,
        report.tool_recall,
        report.mean_visible_tokens,
        report.token_fraction,
        report.p50_decision_us,
        report.p95_decision_us,
    );
    // Group recall: (1/2 + 1 + 0) / 3; tool recall over the two queries that
    // name tools: (1/2 + 0) / 2.
    assert_eq!(figures, ("p", 0.5, 0.25, 100.0, 0.1, 2.0, 3.0));
}

#[test]
fn router_figures_count_tiers_escalations_and_the_high_tier() {
    let queries = one_group_each(&["mail", "weather", "calendar", "mail"]);
    let queries: Vec<&Query> = queries.iter().collect();
    let decisions = [
        decision(0.95, Tier::High, &["mail"]),
        decision(0.92, Tier::High, &["mail"]),
        decision(0.7, Tier::Medium, &["calendar"]),
        decision(0.2, Tier::Low, &[]),
    ];
    let seen = [
        seen(&["mail"], &[], 100, 0.0),
        seen(&["mail"], &[], 300, 0.0),
        seen(&["calendar"], &[], 200, 0.0),
        seen(&["mail", "weather", "calendar"], &[], 1000, 0.0),
    ];
    let base = summary("tiered_router".to_owned(), &queries, &seen, 1000.0);
    let report = router_figures(base, &decisions, &seen, &queries, 1000.0);
    let tiers = report.tiers.unwrap();
    let high = report.high_tier.unwrap();
    assert_eq!((tiers.high, tiers.medium, tiers.low), (0.5, 0.25, 0.25));
    // One of the three restricted decisions (the weather query) misses.
    assert_eq!(report.escalation_rate, Some(1.0 / 3.0));
    assert_eq!(
        (high.queries, high.group_recall, high.token_fraction),
        (2, 0.5, 0.2)
    );
    assert_eq!(high_tier(&decisions), [0, 1]);
}

#[test]
fn calibration_bands_hold_their_decisions_and_one_is_in_the_last_band() {
    let queries = one_group_each(&["mail", "weather", "mail"]);
    let queries: Vec<&Query> = queries.iter().collect();
    let decisions = [
        decision(1.0, Tier::High, &["mail"]),
        decision(0.96, Tier::High, &["mail"]),
        decision(0.55, Tier::Low, &["mail"]),
    ];
    let bands: Vec<(f64, f64, usize, f64, f64)> = bands(&decisions, &queries)
        .into_iter()
        .map(|b| (b.from, b.to, b.queries, b.mean_confidence, b.observed))
        .collect();
    assert_eq!(
        bands,
        [
            (0.0, 0.1, 0, 0.0, 0.0),
            (0.1, 0.2, 0, 0.0, 0.0),
            (0.2, 0.3, 0, 0.0, 0.0),
            (0.3, 0.4, 0, 0.0, 0.0),
            (0.4, 0.5, 0, 0.0, 0.0),
            (0.5, 0.6, 1, 0.55, 1.0),
            (0.6, 0.7, 0, 0.0, 0.0),
            (0.7, 0.8, 0, 0.0, 0.0),
            (0.8, 0.9, 0, 0.0, 0.0),
            (0.9, 1.0, 2, 0.98, 0.5),
        ]
    );
}

#[test]
fn a_decision_routing_as_many_groups_as_the_cap_counts_at_the_cap() {
    let decisions = [
        decision(0.9, Tier::High, &["a", "b"]),
        decision(0.9, Tier::High, &["a"]),
        decision(0.5, Tier::Low, &["a", "b", "c"]),
        decision(0.9, Tier::High, &[]),
    ];
    assert_eq!(share_at_cap(&decisions, 2), 0.5);
    assert_eq!(share_at_cap(&decisions, 4), 0.0);
    assert_eq!(share_at_cap(&[], 2), 0.0);
}
