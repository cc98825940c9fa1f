use pretty_assertions::assert_eq;

use super::*;
use crate::fixtures::evaluation;

/// All-tools sits at 100% (y 87.3) with no round trip; the listing row at
/// 1.25 round trips (x 158), 22.5% uncached and 60% cached. Each listing-agent policy is a hollow point (uncached) and a filled one
/// (Anthropic's cache) at its round trips; all-tools and the best policy of
/// each job are labelled; the oracle's rows are left out.
#[test]
fn a_policy_is_two_points_at_its_round_trips() {
    let plot = cost_svg(&[evaluation()]);
    let points: Vec<&str> = plot
        .lines()
        .filter(|l| {
            l.starts_with("<circle") || l.starts_with("<text x=\"5") || l.contains("fill=\"#")
        })
        .filter(|l| !l.contains("text-anchor"))
        .collect();
    assert_eq!(
        points,
        [
            "<circle cx=\"48.0\" cy=\"87.3\" r=\"3\" fill=\"none\" stroke=\"#555\"/>",
            "<circle cx=\"48.0\" cy=\"87.3\" r=\"3\" fill=\"#555\"/>",
            "<text x=\"53.0\" y=\"82.3\" fill=\"#555\">all_tools</text>",
            "<circle cx=\"158.0\" cy=\"140.6\" r=\"3\" fill=\"none\" stroke=\"#2ca02c\"/>",
            "<circle cx=\"158.0\" cy=\"105.6\" r=\"3\" fill=\"#2ca02c\"/>",
            "<text x=\"163.0\" y=\"100.6\" fill=\"#2ca02c\">listing</text>",
        ]
    );
}

/// A row played in another listing form, or with another query, is a
/// comparison of the tables, not a policy the plot draws.
#[test]
fn rows_that_vary_what_no_host_chooses_are_not_drawn() {
    let plain = cost_svg(&[evaluation()]);
    let mut e = evaluation();
    let mut names = e.task_costs[1].clone();
    names.variant = Some("names listing".to_owned());
    names.extra_round_trips = 2.0;
    e.task_costs.push(names);
    assert_eq!(cost_svg(&[e]), plain);
}
