//! Each job's default, chosen by what a task costs on the catalogs it is
//! not reported on, and the `auto` policy it ships as: every tool sent,
//! with no meta-tool, where the catalog's schemas are under a share of the
//! model's context window, else the job's deferred policy.
//!
//! The choice is made in two steps, each by the rule every choice by cost
//! follows ([`cheapest`]), on the listing agent (the proxy for a model):
//! first the deferred policy of each job among its rows, on the catalogs
//! too large to be sent whole at any share tried ([`deferring`]), then the share
//! among [`THRESHOLD_SHARES`], each share's `auto` rows on those catalogs
//! made with that deferred policy. The chosen `auto` rows are marked
//! `default` on the catalog they are reported on, for both agents.

use crate::cost_choice::{Key, cheapest, choose, mean_cost, row_of};
use crate::report::{Evaluation, Job, JobDefault, TaskCost};

/// Shares of the context window below which `auto` sends every tool, tried:
/// up to a fifth. Every tool costs no round trip, so the rule that chooses
/// by cost (round trips first) would take the largest share offered; the
/// cost model prices neither the window the tools take from the task nor
/// how a model chooses among many tools, so the shares stop where the
/// tools would take more than a fifth of it (hosts that defer tools switch
/// at a tenth).
pub const THRESHOLD_SHARES: [f64; 5] = [0.025, 0.05, 0.10, 0.15, 0.20];

/// The jobs a default is chosen for.
pub(crate) const JOBS: [Job; 2] = [Job::Chat, Job::Serve];

/// The agent the choice is made on: the proxy for a model.
const CHOSEN_BY: &str = "listing";

impl JobDefault {
    /// The `auto` policy's name: `auto(10%)`.
    pub fn policy(&self) -> String {
        auto_name(self.threshold_share)
    }
}

/// `auto(10%)`, `auto(2.5%)`.
pub(crate) fn auto_name(share: f64) -> String {
    format!("auto({})", percent(share))
}

/// A share as a percentage, with a decimal only where it has one.
pub(crate) fn percent(share: f64) -> String {
    let points = share * 100.0;
    if (points - points.round()).abs() < 1e-9 {
        format!("{points:.0}%")
    } else {
        format!("{points:.1}%")
    }
}

/// Chooses each job's default for every evaluation, on the others (on
/// itself when it is alone), adds each catalog's `auto` rows (every share,
/// both agents) and marks the chosen ones `default`.
pub fn choose_defaults(evaluations: &mut [Evaluation]) {
    let chosen: Vec<Vec<JobDefault>> = (0..evaluations.len())
        .map(|index| {
            let others = others(evaluations, index);
            JOBS.iter()
                .filter_map(|job| job_default(&others, &evaluations[index], *job))
                .collect()
        })
        .collect();
    for (e, defaults) in evaluations.iter_mut().zip(chosen) {
        let mut rows = Vec::new();
        for default in &defaults {
            let key = (default.deferred.as_str(), default.placement);
            for share in THRESHOLD_SHARES {
                for agent in ["listing", "oracle"] {
                    if let Some(mut row) = auto_row(e, default.job, key, share, agent) {
                        row.default = share == default.threshold_share;
                        rows.push(row);
                    }
                }
            }
        }
        e.task_costs.extend(rows);
        e.defaults = defaults;
    }
}

/// What the defaults would be chosen as on every one of `evaluations`: the
/// defaults a build ships.
pub fn defaults_on_all(evaluations: &[Evaluation]) -> Vec<JobDefault> {
    let all: Vec<&Evaluation> = evaluations.iter().collect();
    let Some(first) = evaluations.first() else {
        return Vec::new();
    };
    JOBS.iter()
        .filter_map(|job| job_default(&all, first, *job))
        .map(|mut default| {
            default.sends_all_tools = false;
            default
        })
        .collect()
}

/// The evaluations other than `index` (itself when alone): those a choice
/// for `index` is made on.
pub(crate) fn others(evaluations: &[Evaluation], index: usize) -> Vec<&Evaluation> {
    if evaluations.len() == 1 {
        return evaluations.iter().collect();
    }
    evaluations
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, e)| e)
        .collect()
}

/// `job`'s default chosen on `chosen_on`, as it applies to `reported`.
fn job_default(chosen_on: &[&Evaluation], reported: &Evaluation, job: Job) -> Option<JobDefault> {
    let (deferred, placement) = choose(&deferring(chosen_on), job, CHOSEN_BY)?;
    let key = (deferred, placement);
    let means: Vec<(f64, f64, f64)> = THRESHOLD_SHARES
        .iter()
        .filter_map(|share| {
            let rows: Vec<TaskCost> = chosen_on
                .iter()
                .map(|e| auto_row(e, job, key, *share, CHOSEN_BY))
                .collect::<Option<_>>()?;
            let (cached, trips) = mean_cost(&rows);
            Some((*share, cached, trips))
        })
        .collect();
    // The same figures at several shares (no catalog between them): the
    // largest, as the rule takes wherever a catalog lies between them
    // (every tool costs no round trip). The smallest would only say that no
    // catalog chosen on was small: left out, a catalog of 13k tokens would
    // be deferred at four times all-tools' bill.
    let index = cheapest(&means, |m| Some((m.1, m.2)), |a, b| b.0.total_cmp(&a.0))?;
    let share = means[index].0;
    let threshold_tokens = threshold(reported, share);
    Some(JobDefault {
        job,
        deferred: deferred.to_owned(),
        placement,
        threshold_share: share,
        threshold_tokens,
        sends_all_tools: reported.all_tools_tokens < threshold_tokens,
        chosen_on: chosen_on.iter().map(|e| e.dataset.clone()).collect(),
    })
}

/// The catalogs of `chosen_on` the deferred policy applies to: those whose
/// schemas pass the largest share tried of their window, which no `auto`
/// share sends whole (all of them where none does). A catalog sent whole
/// never meets the deferred policy, so it does not choose it: with
/// bfcl_multi_turn (13k tokens) among them, round trips saved on a catalog
/// no default defers chose the policy for the catalogs it does.
fn deferring<'e>(chosen_on: &[&'e Evaluation]) -> Vec<&'e Evaluation> {
    let largest = THRESHOLD_SHARES[THRESHOLD_SHARES.len() - 1];
    let deferred: Vec<&Evaluation> = chosen_on
        .iter()
        .copied()
        .filter(|e| e.all_tools_tokens >= threshold(e, largest))
        .collect();
    if deferred.is_empty() {
        chosen_on.to_vec()
    } else {
        deferred
    }
}

/// The threshold of `share` in tokens of `e`'s context window.
fn threshold(e: &Evaluation, share: f64) -> usize {
    (e.context_window as f64 * share).round() as usize
}

/// `auto` at `share` on `e`, played by `agent`, deferring to `deferred`:
/// all-tools' row where `e`'s schemas are under the threshold, else the
/// deferred policy's; `None` where that row is missing.
fn auto_row(
    e: &Evaluation,
    job: Job,
    deferred: Key<'_>,
    share: f64,
    agent: &'static str,
) -> Option<TaskCost> {
    let (mut row, sends) = if e.all_tools_tokens < threshold(e, share) {
        let all_tools = e
            .task_costs
            .iter()
            .find(|r| r.job == Job::Baseline && r.policy == "all_tools")?;
        (all_tools.clone(), "all_tools".to_owned())
    } else {
        (row_of(e, deferred, agent)?.clone(), deferred.0.to_owned())
    };
    row.policy = auto_name(share);
    row.job = job;
    row.agent = Some(agent);
    row.sends = Some(sends);
    row.default = false;
    Some(row)
}

#[cfg(test)]
#[path = "defaults_tests.rs"]
mod tests;
