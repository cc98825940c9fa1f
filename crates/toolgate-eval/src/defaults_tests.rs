use pretty_assertions::assert_eq;

use super::*;
use crate::episode::Placement;
use crate::fixtures::{evaluation, task_cost};

/// A catalog named `name` of `tokens` schema tokens whose `serve` policy
/// `listing` costs `cached` (a share of all-tools' with Anthropic's cache)
/// with `trips` extra round trips, for both agents, beside a tool search.
fn catalog(name: &str, tokens: usize, cached: f64, trips: f64) -> Evaluation {
    let mut e = evaluation();
    e.dataset = name.to_owned();
    e.all_tools_tokens = tokens;
    e.task_costs.truncate(1);
    for agent in ["listing", "oracle"] {
        e.task_costs.push(task_cost(
            "listing",
            Job::Serve,
            Some(Placement::Conversation),
            Some(agent),
            (0.0, 900.0, [cached * 500.0, cached * 600.0]),
            (trips, 0.0, 1.0),
        ));
        e.task_costs.push(task_cost(
            "tool_search@5",
            Job::Peer,
            Some(Placement::Conversation),
            Some(agent),
            (0.0, 500.0, [200.0, 220.0]),
            (1.2, 0.0, 0.9),
        ));
    }
    e
}

/// The defaults' rows of `e` for `job`: each `auto` row's policy, agent,
/// what it sends and whether it is the default.
fn auto_rows(e: &Evaluation, job: Job) -> Vec<(String, &'static str, String, bool)> {
    e.task_costs
        .iter()
        .filter(|r| r.job == job && r.sends.is_some())
        .map(|r| {
            (
                r.policy.clone(),
                r.agent.unwrap_or(""),
                r.sends.clone().unwrap_or_default(),
                r.default,
            )
        })
        .collect()
}

/// Where the deferred policy costs less than every tool, and the shares
/// make the same choices on the catalogs chosen on, the largest is chosen:
/// a small catalog under it gets every tool, a large one the deferred
/// policy.
#[test]
fn below_the_threshold_every_tool_is_sent_and_above_it_the_deferred_policy() {
    let mut evaluations = [
        catalog("small", 2_000, 0.6, 0.3),
        catalog("large", 50_000, 0.6, 0.3),
    ];
    choose_defaults(&mut evaluations);
    let [small, large] = &evaluations;
    let expected = |sends_all_tools: bool, chosen_on: &str| JobDefault {
        job: Job::Serve,
        deferred: "listing".to_owned(),
        placement: Some(Placement::Conversation),
        threshold_share: 0.20,
        threshold_tokens: 40_000,
        sends_all_tools,
        chosen_on: vec![chosen_on.to_owned()],
    };
    assert_eq!(small.defaults, [expected(true, "large")]);
    assert_eq!(large.defaults, [expected(false, "small")]);
    // Every share, both agents; the chosen one marked.
    let rows = auto_rows(large, Job::Serve);
    assert_eq!(rows.len(), THRESHOLD_SHARES.len() * 2);
    assert_eq!(
        rows[6..],
        [
            (
                "auto(15%)".to_owned(),
                "listing",
                "listing".to_owned(),
                false
            ),
            (
                "auto(15%)".to_owned(),
                "oracle",
                "listing".to_owned(),
                false
            ),
            (
                "auto(20%)".to_owned(),
                "listing",
                "listing".to_owned(),
                true
            ),
            ("auto(20%)".to_owned(), "oracle", "listing".to_owned(), true),
        ]
    );
    // 50,000 tokens are over 20% of 200,000: every share defers them.
    let sends: Vec<&str> = rows
        .iter()
        .filter(|r| r.1 == "listing")
        .map(|r| r.2.as_str())
        .collect();
    assert_eq!(sends, ["listing"; 5]);
    // Under the threshold, all-tools' figures exactly.
    let small_default = small
        .task_costs
        .iter()
        .find(|r| r.default && r.agent == Some("listing"))
        .unwrap();
    assert_eq!(small_default.sends.as_deref(), Some("all_tools"));
    assert_eq!(
        (small_default.uncached, small_default.extra_round_trips),
        (small.task_costs[0].uncached, 0.0)
    );
}

/// Where the deferred policy costs more than every tool, the share grows
/// until the catalogs it is chosen on get every tool; where it pays, it
/// stops below them.
#[test]
fn the_share_is_chosen_by_what_a_task_costs_on_the_other_catalogs() {
    let mut evaluations = [
        catalog("a", 20_000, 1.8, 1.4),
        catalog("b", 35_000, 0.6, 0.3),
        catalog("c", 300_000, 0.4, 1.4),
    ];
    choose_defaults(&mut evaluations);
    let shares: Vec<(f64, bool)> = evaluations
        .iter()
        .flat_map(|e| e.defaults.iter())
        .map(|d| (d.threshold_share, d.sends_all_tools))
        .collect();
    // a's fold (b, c): no share is within 0.5 round trips on average;
    // deferring b (0.85) is within 0.2 of sending it whole (0.7) and costs
    // less, so 15%, the largest that defers it; a is under it. b's fold
    // (a, c): every tool for a from 15%, 20% the largest of the two; b is
    // under it. c's fold (a, b): deferring b pays (0.6 of all-tools' bill
    // within 0.5 round trips), so 15%, which sends a whole and defers b; c
    // is far above it.
    assert_eq!(shares, [(0.15, true), (0.20, true), (0.15, false)]);
    assert_eq!(
        defaults_on_all(&evaluations)
            .iter()
            .map(|d| d.threshold_share)
            .collect::<Vec<_>>(),
        [0.20]
    );
}

#[test]
fn shares_read_as_percentages() {
    let names: Vec<String> = THRESHOLD_SHARES.iter().map(|s| auto_name(*s)).collect();
    assert_eq!(
        names,
        [
            "auto(2.5%)",
            "auto(5%)",
            "auto(10%)",
            "auto(15%)",
            "auto(20%)"
        ]
    );
}

/// The deferred policy is chosen on the catalogs it applies to: a small
/// catalog, sent whole at every share tried, does not choose it, even where
/// another policy takes fewer round trips on it.
#[test]
fn the_deferred_policy_is_chosen_on_the_catalogs_too_large_to_send_whole() {
    let with_search = |name: &str, tokens: usize, search_trips: f64| {
        let mut e = catalog(name, tokens, 0.6, 1.5);
        for agent in ["listing", "oracle"] {
            e.task_costs.push(task_cost(
                "find_tool_groups",
                Job::Serve,
                Some(Placement::Conversation),
                Some(agent),
                (0.0, 900.0, [0.9 * 500.0, 0.9 * 600.0]),
                (search_trips, 0.0, 1.0),
            ));
        }
        e
    };
    // On the small catalog the search saves a round trip; on the large
    // ones it costs more for as many.
    let small = with_search("small", 2_000, 0.5);
    let large = with_search("large", 50_000, 1.5);
    let larger = with_search("larger", 90_000, 1.5);
    let chosen = |on: &[&Evaluation]| job_default(on, on[0], Job::Serve).unwrap().deferred;
    assert_eq!(chosen(&[&large, &larger]), "listing");
    assert_eq!(chosen(&[&small, &large, &larger]), "listing");
    // Where every catalog is small, they choose it all the same.
    assert_eq!(chosen(&[&small]), "find_tool_groups");
}
