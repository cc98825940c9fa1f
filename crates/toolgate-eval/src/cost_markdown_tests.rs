use pretty_assertions::assert_eq;

use super::*;
use crate::cost_choice::best;
use crate::fixtures::evaluation;

/// Each job's default with each agent, against the goals, then the
/// defaults chosen on every catalog and what they must hold. With a window
/// of 12,000 tokens the catalog's 2,000 are under 20% of it: `serve`'s
/// listing (1.25 round trips) costs less than every tool with the cache
/// but takes more than 0.5 round trips, so every tool is sent.
#[test]
fn the_summary_names_each_jobs_default() {
    let mut evaluations = [evaluation()];
    evaluations[0].context_window = 12_000;
    crate::choose_defaults(&mut evaluations);
    let summary = cost_summary(&evaluations);
    let rows: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("| tiny"))
        .collect();
    assert_eq!(
        rows[..2],
        [
            "| tiny | listing | serve | auto(20%) | all_tools |  | 100.0% | 100.0% | 100.0% | 0.00 | 100.0% | missed |",
            "| tiny | oracle | serve | auto(20%) | all_tools |  | 100.0% | 100.0% | 100.0% | 0.00 | 100.0% | missed |",
        ]
    );
    assert!(
        summary.contains("- `serve`: `auto(20%)`, every tool under 2400 tokens (20% of a 12000-token window), else `listing` (conversation)"),
        "{summary}"
    );
    assert!(
        summary.contains("## What each default must hold"),
        "{summary}"
    );
    assert!(
        summary.contains("| tiny | listing | serve | auto(20%) | all_tools |"),
        "{summary}"
    );
    // The catalog's own table marks the default and says what it sends.
    let mut out = String::new();
    cost_section(&mut out, &evaluations[0]);
    assert!(
        out.contains("| auto(20%) -> all_tools **default** | serve |  | listing |"),
        "{out}"
    );
    assert!(
        out.contains("`serve`: `auto(20%)` sends every tool (2000 tokens, under 2400)"),
        "{out}"
    );
}

/// Within the round-trip goal, the cheaper row under Anthropic's cache wins
/// over one with fewer round trips.
#[test]
fn within_the_round_trip_goal_the_cheapest_wins() {
    let mut e = evaluation();
    let mut cheaper = e.task_costs[2].clone();
    cheaper.policy = "tool_router(2 tools)".to_owned();
    cheaper.cached_share = vec![0.5, 0.5];
    cheaper.extra_round_trips = 0.4;
    let mut fewer = e.task_costs[2].clone();
    fewer.policy = "tool_router(3 tools)".to_owned();
    fewer.extra_round_trips = 0.1;
    e.task_costs.extend([fewer, cheaper]);
    let chosen = best(&e, Job::Chat, "oracle").map(|r| r.policy.as_str());
    assert_eq!(chosen, Some("tool_router(2 tools)"));
}

/// A row played in a listing form the hosts do not choose for the catalog
/// is a comparison: however cheap, it is never a job's policy.
#[test]
fn a_row_in_a_form_the_hosts_do_not_choose_is_never_chosen() {
    let mut e = evaluation();
    let mut names = e.task_costs[2].clone();
    names.policy = "tool_router(2 tools)".to_owned();
    names.cached_share = vec![0.1, 0.1];
    names.variant = Some("names listing".to_owned());
    e.task_costs.push(names);
    let chosen = best(&e, Job::Chat, "oracle").map(|r| r.policy.as_str());
    assert_eq!(chosen, Some("tool_router(1 tool)"));
    let mut out = String::new();
    cost_section(&mut out, &e);
    assert!(
        out.contains("| tool_router(2 tools) [names listing] | chat | tool list | oracle |"),
        "{out}"
    );
}

/// With several catalogs, each one's default is chosen on the others:
/// here the other catalog makes the 2-tool router the cheaper, and that is
/// what the default defers to on this one, though its own figures favour
/// another.
#[test]
fn with_several_catalogs_the_choice_is_made_on_the_others() {
    let with = |cheaper: &str| {
        let mut e = evaluation();
        // Every share of this window is under the catalog's 2,000 tokens.
        e.context_window = 1_000;
        for (name, share) in [("tool_router(2 tools)", 0.7), ("tool_router(3 tools)", 0.7)] {
            let mut row = e.task_costs[2].clone();
            row.policy = name.to_owned();
            row.agent = Some("listing");
            row.cached_share = vec![if name == cheaper { 0.3 } else { share }, 0.5];
            e.task_costs.push(row);
        }
        e
    };
    let mut left = with("tool_router(3 tools)");
    left.dataset = "left".to_owned();
    let mut right = with("tool_router(2 tools)");
    right.dataset = "right".to_owned();
    let mut evaluations = [left, right];
    crate::choose_defaults(&mut evaluations);
    let summary = cost_summary(&evaluations);
    let table = summary
        .split("## What each default must hold")
        .next()
        .unwrap();
    let chat: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("| listing | chat |"))
        .collect();
    assert_eq!(
        chat,
        [
            "| left | listing | chat | auto(20%) | tool_router(2 tools) | tool list | 17.5% | 70.0% | 50.0% | 0.50 | 100.0% | missed |",
            "| right | listing | chat | auto(20%) | tool_router(3 tools) | tool list | 17.5% | 70.0% | 50.0% | 0.50 | 100.0% | missed |",
        ]
    );
}

/// The window assumed is said once per catalog, and a row with tasks whose
/// prompts pass it is marked.
#[test]
fn rows_that_do_not_fit_in_the_context_window_are_marked() {
    let mut e = evaluation();
    e.context_window = 2000;
    e.task_costs[0].fits = false;
    e.task_costs[0].over_window = 1.0;
    e.task_costs[2].fits = false;
    e.task_costs[2].over_window = 0.25;
    let mut out = String::new();
    cost_section(&mut out, &e);
    assert!(
        out.contains("Context window assumed: 2000 tokens; every schema ("),
        "{out}"
    );
    assert!(
        out.contains("do not fit: no task is done with all tools"),
        "{out}"
    );
    assert!(
        out.contains("| all_tools (does not fit) | baseline |"),
        "{out}"
    );
    assert!(
        out.contains("| tool_router(1 tool) (does not fit: 25.0% of tasks) | chat |"),
        "{out}"
    );
}
