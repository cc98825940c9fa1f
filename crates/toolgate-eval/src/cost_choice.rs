//! Choosing by what a task costs: the rule every such choice follows
//! ([`cheapest`]), the goals it is read against, and the policy of a job it
//! picks over several catalogs ([`choose`]). The cost summary, the jobs'
//! defaults and the router's settings all choose with it.

use crate::episode::Placement;
use crate::report::{Evaluation, Job, TaskCost};

/// Most billed tokens the best policy of a job may cost, as a share of
/// all-tools', uncached.
pub const GOAL_UNCACHED: f64 = 0.25;

/// The same with prompt caching.
pub const GOAL_CACHED: f64 = 0.60;

/// Most extra round trips per task, on average.
pub const GOAL_ROUND_TRIPS: f64 = 0.5;

/// Extra round trips per task, on average, that two choices may differ by
/// and still count as taking as many, where none is within
/// [`GOAL_ROUND_TRIPS`]: a fifth of the tasks waiting one more model call,
/// the margin a `serve` default is allowed beside tool search. At 0.05 the
/// rule chose a search loading 36 schemas an answer over one loading the
/// best 10 across groups for 0.07-0.12 fewer round trips at 4-6 times the
/// bill (toolbench_stable, seal_tools).
pub const ROUND_TRIP_TIE: f64 = 0.2;

/// The cheapest of `items` by the rule every choice by what a task costs
/// follows. `cost` gives an item's bill with Anthropic's cache (a share of
/// all-tools') and its extra round trips, or nothing for an item never
/// costed, which is chosen only when none was. Among those within
/// [`GOAL_ROUND_TRIPS`] on average, the cheapest; where none is, the
/// cheapest of those within [`ROUND_TRIP_TIE`] of the fewest round trips.
/// `tie` orders items that cost the same (`Less`: the first is better),
/// and decides alone where nothing was costed.
pub(crate) fn cheapest<T>(
    items: &[T],
    cost: impl Fn(&T) -> Option<(f64, f64)>,
    tie: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Option<usize> {
    let costed: Vec<(usize, f64, f64)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| cost(item).map(|(cached, trips)| (i, cached, trips)))
        .collect();
    let better = |a: usize, b: usize| tie(&items[a], &items[b]);
    if costed.is_empty() {
        return (0..items.len()).reduce(|best, i| if better(i, best).is_lt() { i } else { best });
    }
    let fewest = costed.iter().map(|c| c.2).fold(f64::INFINITY, f64::min);
    let limit = if fewest <= GOAL_ROUND_TRIPS {
        GOAL_ROUND_TRIPS
    } else {
        fewest + ROUND_TRIP_TIE
    };
    costed
        .into_iter()
        .filter(|c| c.2 <= limit)
        .reduce(
            |best, c| match c.1.total_cmp(&best.1).then_with(|| better(c.0, best.0)) {
                std::cmp::Ordering::Less => c,
                _ => best,
            },
        )
        .map(|c| c.0)
}

/// A policy as the cost tables name it: its name and where its schemas go.
pub(crate) type Key<'e> = (&'e str, Option<Placement>);

/// The policy of `job` played by `agent` that does best over `chosen_on`
/// by its mean cost there ([`cheapest`]), among those the job runs (no
/// variant, no `auto` row).
pub(crate) fn choose<'e>(chosen_on: &[&'e Evaluation], job: Job, agent: &str) -> Option<Key<'e>> {
    let first = chosen_on.first()?;
    let keys: Vec<Key<'e>> = first
        .task_costs
        .iter()
        .filter(|r| {
            r.job == job && r.agent == Some(agent) && r.variant.is_none() && r.sends.is_none()
        })
        .map(|r| (r.policy.as_str(), r.placement))
        .collect();
    let means: Vec<(Key<'e>, f64, f64)> = keys
        .into_iter()
        .filter_map(|key| {
            let rows: Vec<&TaskCost> = chosen_on
                .iter()
                .map(|e| row_of(e, key, agent))
                .collect::<Option<_>>()?;
            let (cached, trips) = mean_cost(rows);
            Some((key, cached, trips))
        })
        .collect();
    cheapest(
        &means,
        |m| Some((m.1, m.2)),
        |_, _| std::cmp::Ordering::Equal,
    )
    .map(|i| means[i].0)
}

/// The mean of `rows`' bills with Anthropic's cache (a share of
/// all-tools') and of their extra round trips: what [`cheapest`] reads of a
/// choice made over several catalogs.
pub(crate) fn mean_cost<'r>(rows: impl IntoIterator<Item = &'r TaskCost>) -> (f64, f64) {
    let (mut n, mut cached, mut trips) = (0.0, 0.0, 0.0);
    for row in rows {
        n += 1.0;
        cached += row.cached_share.first().copied().unwrap_or(f64::INFINITY);
        trips += row.extra_round_trips;
    }
    let n = f64::max(n, 1.0);
    (cached / n, trips / n)
}

/// The row of `e` for `key` played by `agent`.
pub(crate) fn row_of<'e>(e: &'e Evaluation, key: Key<'_>, agent: &str) -> Option<&'e TaskCost> {
    e.task_costs.iter().find(|r| {
        r.policy == key.0 && r.placement == key.1 && r.agent == Some(agent) && r.variant.is_none()
    })
}

/// The best row of `e` for `job` played by `agent` ([`choose`] on `e`
/// alone).
pub(crate) fn best<'e>(e: &'e Evaluation, job: Job, agent: &str) -> Option<&'e TaskCost> {
    choose(&[e], job, agent).and_then(|key| row_of(e, key, agent))
}
