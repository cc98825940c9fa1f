use pretty_assertions::assert_eq;

use super::*;
use crate::fixtures::{evaluation, task_cost};

/// A catalog of 50,000 schema tokens (over every threshold of a 1,000-token
/// window) whose `serve` policy `listing` costs `uncached` tokens and
/// `cached` with Anthropic's cache, with `trips` round trips and `done`
/// tasks done, beside a tool search of 500 and 200 tokens, 1.2 round trips,
/// 90% done (each for both agents).
fn catalog(name: &str, (uncached, cached): (f64, f64), (trips, done): (f64, f64)) -> Evaluation {
    let mut e = evaluation();
    e.dataset = name.to_owned();
    e.all_tools_tokens = 50_000;
    e.context_window = 1_000;
    e.task_costs.truncate(1);
    for agent in ["listing", "oracle"] {
        e.task_costs.push(task_cost(
            "listing",
            Job::Serve,
            Some(Placement::Conversation),
            Some(agent),
            (0.0, uncached, [cached, cached]),
            (trips, 0.0, done),
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

/// Each default's verdict on each catalog, with the listing agent.
fn verdicts(evaluations: &mut [Evaluation]) -> Vec<String> {
    crate::choose_defaults(evaluations);
    must_holds(evaluations)
        .lines()
        .filter(|l| l.contains("| listing | serve |"))
        .map(|l| {
            l.rsplit(" | ")
                .next()
                .unwrap_or("")
                .trim_end_matches(" |")
                .to_owned()
        })
        .collect()
}

#[test]
fn serve_holds_within_twice_tool_search_and_its_round_trips_and_tasks() {
    let holding = catalog("holding", (900.0, 390.0), (1.3, 0.95));
    let mut evaluations = [holding.clone(), holding];
    assert_eq!(verdicts(&mut evaluations), ["yes", "yes"]);
    // 2.4x cached, 0.6 more round trips, five points fewer tasks: the tool
    // search itself beats it on all three.
    let failing = catalog("failing", (900.0, 480.0), (1.8, 0.85));
    let mut evaluations = [failing.clone(), failing];
    assert_eq!(
        verdicts(&mut evaluations)[0],
        "no: 2.4x cached, +0.60 round trips, 5.0 points fewer tasks done, beaten"
    );
}

/// A measured policy cheaper both ways, with fewer round trips and more
/// tasks done, beats the default: it is named, and the default fails.
#[test]
fn a_policy_better_on_cost_round_trips_and_tasks_at_once_beats_the_default() {
    let mut e = catalog("beaten", (900.0, 390.0), (1.3, 0.95));
    e.task_costs.push(task_cost(
        "find_tool_groups",
        Job::Serve,
        Some(Placement::ToolList),
        Some("listing"),
        (0.0, 800.0, [350.0, 350.0]),
        (1.25, 0.0, 0.97),
    ));
    // The other catalog, where the search costs more, chooses the listing.
    let mut other = catalog("other", (900.0, 390.0), (1.3, 0.95));
    let mut dearer = e.task_costs.last().unwrap().clone();
    dearer.cached = vec![450.0, 450.0];
    dearer.cached_share = vec![0.9, 0.75];
    other.task_costs.push(dearer);
    let mut evaluations = [e, other];
    crate::choose_defaults(&mut evaluations);
    let report = must_holds(&evaluations);
    let line = report
        .lines()
        .find(|l| l.starts_with("| beaten | listing | serve |"))
        .unwrap();
    assert!(
        line.ends_with("| find_tool_groups (tool list) | no: beaten |"),
        "{line}"
    );
    assert!(report.contains("\nHolds on "), "{report}");
}

/// The ideal router reads each task's gold tools: cheaper, quicker and
/// always done, it is no policy a host could run instead, so it beats no
/// default.
#[test]
fn the_ideal_router_beats_no_default() {
    let mut holding = catalog("holding", (900.0, 390.0), (1.3, 0.95));
    holding.task_costs.push(task_cost(
        IDEAL_ROUTER,
        Job::Baseline,
        Some(Placement::ToolList),
        None,
        (0.0, 100.0, [50.0, 50.0]),
        (0.0, 0.0, 1.0),
    ));
    let mut evaluations = [holding.clone(), holding];
    assert_eq!(verdicts(&mut evaluations), ["yes", "yes"]);
}

/// `chat`'s routers read the user's turn before the model's first call,
/// which a gateway never sees: however well one does, it beats no `serve`
/// default.
#[test]
fn a_router_of_chat_beats_no_serve_default() {
    let mut holding = catalog("holding", (900.0, 390.0), (1.3, 0.95));
    holding.task_costs.push(task_cost(
        "tool_router(top 20 across groups)",
        Job::Chat,
        Some(Placement::ToolList),
        Some("listing"),
        (0.0, 600.0, [250.0, 250.0]),
        (0.4, 0.0, 0.99),
    ));
    let mut evaluations = [holding.clone(), holding];
    assert_eq!(verdicts(&mut evaluations), ["yes", "yes"]);
}
