//! What each job's default must hold on every catalog it is reported on,
//! against the best tool search (of 3, 5 or 10 tools, chosen as a job's
//! policy is, on the same catalogs) and against every measured policy:
//!
//! - `serve` above its threshold: at most [`MAX_TIMES_SEARCH`] tool
//!   search's bill, uncached and with Anthropic's cache (busy), at most its
//!   round trips + [`SERVE_EXTRA_TRIPS`], at least its tasks done;
//! - `chat` above its threshold: at most [`MAX_TIMES_SEARCH`] tool search's
//!   bill, at most [`GOAL_ROUND_TRIPS`] extra round trips;
//! - below the threshold: all-tools' figures exactly;
//! - no measured policy (a row the job could run, no variant) cheaper
//!   uncached and with the cache, with fewer round trips and more tasks
//!   done, all at once; `chat`'s routers read the user's turn before the
//!   model's first call, which a gateway never sees, so they beat no
//!   `serve` default.

use std::fmt::Write as _;

use crate::cost_choice::{GOAL_ROUND_TRIPS, choose, row_of};
use crate::defaults::others;
use crate::episode::Placement;
use crate::report::{Evaluation, Job, JobDefault, TaskCost};
use crate::task_cost::IDEAL_ROUTER;

/// How many times tool search's bill a default may cost.
pub const MAX_TIMES_SEARCH: f64 = 2.0;

/// Extra round trips `serve`'s default may take beyond tool search's.
pub const SERVE_EXTRA_TRIPS: f64 = 0.2;

/// Figures that differ by less than this are the same.
const SAME: f64 = 1e-9;

/// One default checked on one catalog with one agent.
struct Check<'e> {
    default: &'e JobDefault,
    row: &'e TaskCost,
    search: Option<&'e TaskCost>,
    /// Rows that beat it on cost, round trips and tasks done at once.
    beaten_by: Vec<String>,
    /// What fails, empty when it holds.
    fails: Vec<String>,
}

impl<'e> Check<'e> {
    fn new(
        e: &'e Evaluation,
        default: &'e JobDefault,
        row: &'e TaskCost,
        search: Option<&'e TaskCost>,
    ) -> Self {
        let beaten_by: Vec<String> = e
            .task_costs
            .iter()
            .filter(|r| r.agent.is_none_or(|a| Some(a) == row.agent))
            .filter(|r| r.variant.is_none() && r.sends.is_none())
            // The ideal router reads the task's answer: no host can run it.
            .filter(|r| r.policy != IDEAL_ROUTER)
            .filter(|r| runnable_by(default.job, r))
            .filter(|r| beats(r, row))
            .map(name)
            .collect();
        let mut fails = Vec::new();
        if default.sends_all_tools {
            let all_tools = e.task_costs.iter().find(|r| r.policy == "all_tools");
            if all_tools.is_none_or(|a| !same_figures(a, row)) {
                fails.push("not all-tools' figures".to_owned());
            }
        } else if let Some(search) = search {
            let (uncached, cached) = times(row, search);
            if uncached > MAX_TIMES_SEARCH + SAME {
                fails.push(format!("{uncached:.1}x uncached"));
            }
            if cached > MAX_TIMES_SEARCH + SAME {
                fails.push(format!("{cached:.1}x cached"));
            }
            match default.job {
                Job::Serve => {
                    if row.extra_round_trips > search.extra_round_trips + SERVE_EXTRA_TRIPS + SAME {
                        fails.push(format!(
                            "{:+.2} round trips",
                            row.extra_round_trips - search.extra_round_trips
                        ));
                    }
                    if row.done + SAME < search.done {
                        fails.push(format!(
                            "{:.1} points fewer tasks done",
                            (search.done - row.done) * 100.0
                        ));
                    }
                }
                Job::Chat if row.extra_round_trips > GOAL_ROUND_TRIPS + SAME => {
                    fails.push(format!("{:.2} round trips", row.extra_round_trips));
                }
                Job::Chat | Job::Baseline | Job::Peer => {}
            }
        } else {
            fails.push("no tool search to compare".to_owned());
        }
        if default.job == Job::Serve && !beaten_by.is_empty() {
            fails.push("beaten".to_owned());
        }
        Self {
            default,
            row,
            search,
            beaten_by,
            fails,
        }
    }
}

/// Whether `job` could run `r` instead of its default: `chat` any row; a
/// gateway not `chat`'s routers, which read the user's turn before the
/// model's first call, and the gateway never sees it.
fn runnable_by(job: Job, r: &TaskCost) -> bool {
    job != Job::Serve || r.job != Job::Chat
}

/// `a`'s bill over `b`'s, uncached and with Anthropic's cache.
fn times(a: &TaskCost, b: &TaskCost) -> (f64, f64) {
    let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::INFINITY };
    let cached = |r: &TaskCost| r.cached.first().copied().unwrap_or(0.0);
    (ratio(a.uncached, b.uncached), ratio(cached(a), cached(b)))
}

/// `r` costs less uncached and with Anthropic's cache than `d`, takes fewer
/// round trips and finishes more tasks.
fn beats(r: &TaskCost, d: &TaskCost) -> bool {
    let cached = |r: &TaskCost| r.cached.first().copied().unwrap_or(f64::INFINITY);
    r.uncached + SAME < d.uncached
        && cached(r) + SAME < cached(d)
        && r.extra_round_trips + SAME < d.extra_round_trips
        && r.done > d.done + SAME
}

/// The figures a task-cost row reports, alike.
fn same_figures(a: &TaskCost, b: &TaskCost) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= SAME;
    close(a.uncached, b.uncached)
        && a.cached.len() == b.cached.len()
        && a.cached.iter().zip(&b.cached).all(|(x, y)| close(*x, *y))
        && close(a.extra_round_trips, b.extra_round_trips)
        && close(a.done, b.done)
}

/// A row as the tables name it, with where its schemas go.
fn name(row: &TaskCost) -> String {
    match row.placement {
        Some(placement) => format!("{} ({})", row.policy, placement.label()),
        None => row.policy.clone(),
    }
}

/// The must-holds of every job's default on every catalog, as markdown.
pub(crate) fn must_holds(evaluations: &[Evaluation]) -> String {
    let mut out = format!(
        "## What each default must hold\n\nOn each catalog, each job's default against the best tool search chosen as a job's policy is (on the same catalogs), with each agent: `serve` above its threshold at most {MAX_TIMES_SEARCH}x tool search's bill uncached and with Anthropic's cache, at most its round trips + {SERVE_EXTRA_TRIPS}, at least its tasks done, and beaten by no measured policy; `chat` above its threshold at most {MAX_TIMES_SEARCH}x its bill, at most {GOAL_ROUND_TRIPS} extra round trips; below the threshold, all-tools' figures exactly. \"Beaten by\": the rows the job could run (no variant; all-tools and tool search, not the ideal router, and for `serve` not `chat`'s routers, which read the user's turn a gateway never sees) that cost less uncached and with Anthropic's cache, take fewer round trips and finish more tasks, all at once.\n\n| catalog | agent | job | default | sends | uncached, x tool search | Anthropic, x tool search | round trips (tool search) | done (tool search) | beaten on all three by | holds |\n|---|---|---|---|---|---:|---:|---:|---:|---|---|\n"
    );
    let mut held = 0;
    let mut checked = 0;
    for (index, e) in evaluations.iter().enumerate() {
        let others = others(evaluations, index);
        for agent in ["listing", "oracle"] {
            let search = choose(&others, Job::Peer, agent).and_then(|key| row_of(e, key, agent));
            for default in &e.defaults {
                let Some(row) = e
                    .task_costs
                    .iter()
                    .find(|r| r.default && r.job == default.job && r.agent == Some(agent))
                else {
                    continue;
                };
                let check = Check::new(e, default, row, search);
                checked += 1;
                if check.fails.is_empty() {
                    held += 1;
                }
                check_row(&mut out, e, agent, &check);
            }
        }
    }
    let _ = writeln!(out, "\nHolds on {held} of {checked}.\n");
    out
}

fn check_row(out: &mut String, e: &Evaluation, agent: &str, check: &Check<'_>) {
    let row = check.row;
    let sends = row.sends.as_deref().unwrap_or("");
    let placement = row
        .placement
        .map_or(String::new(), |p: Placement| format!(" ({})", p.label()));
    let (times_uncached, times_cached, trips, done) = match check.search {
        Some(search) => {
            let (uncached, cached) = times(row, search);
            (
                format!("{uncached:.2}x"),
                format!("{cached:.2}x"),
                format!(
                    "{:.2} ({:.2}, {})",
                    row.extra_round_trips, search.extra_round_trips, search.policy
                ),
                format!("{:.1}% ({:.1}%)", row.done * 100.0, search.done * 100.0),
            )
        }
        None => (
            "-".to_owned(),
            "-".to_owned(),
            format!("{:.2}", row.extra_round_trips),
            format!("{:.1}%", row.done * 100.0),
        ),
    };
    let beaten = if check.beaten_by.is_empty() {
        "-".to_owned()
    } else {
        check.beaten_by.join("; ")
    };
    let holds = if check.fails.is_empty() {
        "yes".to_owned()
    } else {
        format!("no: {}", check.fails.join(", "))
    };
    let _ = writeln!(
        out,
        "| {} | {agent} | {} | {} | {sends}{placement} | {times_uncached} | {times_cached} | {trips} | {done} | {beaten} | {holds} |",
        e.dataset,
        check.default.job.label(),
        row.policy,
    );
}

#[cfg(test)]
#[path = "must_hold_tests.rs"]
mod tests;
