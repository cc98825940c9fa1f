//! The cost of a task as markdown: per dataset, each policy's billed input
//! tokens (uncached and under each provider's cache) and round trips; across
//! datasets, the best policy for each job against the goals.

use std::fmt::Write as _;

use crate::agent::{LISTING_DEPTH, MAX_ROUNDS};
use crate::episode::{CACHES, Placement};
use crate::report::Evaluation;
use crate::report::{Job, TaskCost};

/// Most billed tokens the best policy of a job may cost, as a share of
/// all-tools', uncached.
pub const GOAL_UNCACHED: f64 = 0.25;

/// The same with prompt caching.
pub const GOAL_CACHED: f64 = 0.60;

/// Most extra round trips per task, on average.
pub const GOAL_ROUND_TRIPS: f64 = 0.5;

/// Extra round trips per task, on average, that two choices may differ by
/// and still count as taking as many: five tasks in a hundred waiting for
/// one more model call, less than the figures move between folds.
pub const ROUND_TRIP_TIE: f64 = 0.05;

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

/// What the figures assume, once per report.
pub fn cost_assumptions() -> String {
    let mut out = String::from(
        "### How a task's cost is counted\n\nA task is a reported query with a gold tool in the catalog. Each model call sends the tool list, then the system prompt (the group listing), then the messages; the tokens of the calls that use the gold tools, and of their results, are the same for every policy and left out, but each such call (one per gold tool, then the answer) carries the whole prompt and is counted. The `oracle` agent loads exactly the missing gold tools by name in one round trip (`load_tool_group` with `tools`; or asks a tool search for them by name); the `listing` agent loads, in one round trip, the tools a search named that it cannot call yet (those of the best ",
    );
    let _ = write!(
        out,
        "{LISTING_DEPTH} groups), else asks a search that ranks tools across groups again (its next page), else loads {LISTING_DEPTH} groups whole, ranked by BM25 of the request against their listing lines and the lines of tools it has seen (a search's groups first), and gives up after {MAX_ROUNDS} extra round trips in all, a search's included; on a tool search it reads the next page. Rows marked [whole-group loads] are played loading whole groups only, as before a load could name tools. Loaded schemas go in the tool list (`tool list`) or in the load's answer, the tool list unchanged (`conversation`). With a cache, the prefix every task of a policy shares is warm (busy traffic: other tasks sent it moments ago), each call writes its prompt, and reads the longest prefix an earlier call of the task sent; `Anthropic, light traffic` is the same cache with nothing warm (no other task within five minutes).\n\n| cache | input $/M | read | write | shortest prefix | hits in steps of | source |\n|---|---:|---:|---:|---:|---:|---|\n"
    );
    for rules in CACHES {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {}x | {}x | {} | {} | {} |",
            rules.provider,
            rules.input_per_million,
            rules.read,
            rules.write,
            rules.min_tokens,
            if rules.step == 1 {
                "block".to_owned()
            } else {
                rules.step.to_string()
            },
            rules.source
        );
    }
    out
}

/// One dataset's cost table: the listing agent, then the oracle.
pub(crate) fn cost_section(out: &mut String, e: &Evaluation) {
    let Some(base) = e.task_costs.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "What a task costs ({} tasks; all-tools: {:.0} tokens uncached, {} under the caches; shares of all-tools'). The listing (with the core tools) is {} tokens, {:.1}% of all-tools' schemas, on every call of every policy that lists the groups. The groups are listed as {} by `chat` and as {} by `serve` (the section alone: {}); rows marked [names listing] and the like are played in a form the hosts do not choose here, and [keyword query] with `find_tool_groups` asked the request's keyword rewrite, to compare:\n",
        base.tasks,
        base.uncached,
        base.cached
            .iter()
            .zip(CACHES)
            .map(|(c, rules)| format!("{c:.0} ({})", short(rules.provider)))
            .collect::<Vec<_>>()
            .join(", "),
        e.listing_tokens,
        e.listing_tokens as f64 * 100.0 / e.all_tools_tokens.max(1) as f64,
        e.listing_form.0,
        e.listing_form.1,
        e.listing_forms
            .iter()
            .map(|(form, tokens)| format!(
                "{form} {tokens} tokens, {:.1}%",
                *tokens as f64 * 100.0 / e.all_tools_tokens.max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join("; "),
    );
    let _ = writeln!(out, "{}\n", window_line(e, base));
    let _ = writeln!(
        out,
        "| policy | job | schemas in | agent | first-call tool recall | tokens uncached | uncached | Anthropic cached | OpenAI cached | Anthropic, light traffic | extra round trips | none extra | done |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for agent in ["listing", "oracle"] {
        for row in e
            .task_costs
            .iter()
            .filter(|r| r.agent.is_none_or(|a| a == agent))
        {
            if row.agent.is_none() && agent == "oracle" {
                continue;
            }
            cost_row(out, row);
        }
    }
    out.push('\n');
}

/// The context window assumed, and whether every tool's schemas fit in it.
fn window_line(e: &Evaluation, all_tools: &TaskCost) -> String {
    let fits = if all_tools.fits {
        "fit"
    } else {
        "do not fit: no task is done with all tools"
    };
    format!(
        "Context window assumed: {} tokens; every schema ({} tokens, {:.1}% of it), with a task's prompt, {fits}. A row marked (does not fit) has tasks one of whose prompts passes the window; they are not done.",
        e.context_window,
        e.all_tools_tokens,
        e.all_tools_tokens as f64 * 100.0 / e.context_window.max(1) as f64,
    )
}

/// A row's policy as the tables name it: with the variant it plays, and
/// whether its tasks fit in the context window.
fn policy_cell(row: &TaskCost) -> String {
    let mut cell = row.policy.clone();
    if let Some(variant) = &row.variant {
        cell.push_str(&format!(" [{variant}]"));
    }
    if !row.fits {
        if row.over_window >= 1.0 {
            cell.push_str(" (does not fit)");
        } else {
            cell.push_str(&format!(
                " (does not fit: {:.1}% of tasks)",
                row.over_window * 100.0
            ));
        }
    }
    cell
}

fn short(provider: &str) -> &str {
    provider.split(',').next().unwrap_or(provider)
}

fn cost_row(out: &mut String, row: &TaskCost) {
    let share = |s: f64| format!("{:.1}%", s * 100.0);
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {:.3} | {:.0} | {} | {} | {} | {} | {:.2} | {:.1}% | {:.1}% |",
        policy_cell(row),
        row.job.label(),
        row.placement.map_or("", Placement::label),
        row.agent.unwrap_or(""),
        row.first_call_tool_recall,
        row.uncached,
        share(row.uncached_share),
        row.cached_share
            .first()
            .map_or(String::new(), |s| share(*s)),
        row.cached_share.get(1).map_or(String::new(), |s| share(*s)),
        share(row.light_traffic_share),
        row.extra_round_trips,
        row.no_extra_round_trip * 100.0,
        row.done * 100.0,
    );
}

/// A policy as the cost tables name it: its name and where its schemas go.
type Key<'e> = (&'e str, Option<Placement>);

/// The policy of `job` played by `agent` that does best over `chosen_on`
/// by its mean cost there ([`cheapest`]).
pub(crate) fn choose<'e>(chosen_on: &[&'e Evaluation], job: Job, agent: &str) -> Option<Key<'e>> {
    let first = chosen_on.first()?;
    let keys: Vec<Key<'e>> = first
        .task_costs
        .iter()
        .filter(|r| r.job == job && r.agent == Some(agent) && r.variant.is_none())
        .map(|r| (r.policy.as_str(), r.placement))
        .collect();
    let means: Vec<(Key<'e>, f64, f64)> = keys
        .into_iter()
        .filter_map(|key| {
            let rows: Vec<&TaskCost> = chosen_on
                .iter()
                .map(|e| row_of(e, key, agent))
                .collect::<Option<_>>()?;
            let n = rows.len() as f64;
            let cached = rows
                .iter()
                .map(|r| r.cached_share.first().copied().unwrap_or(f64::INFINITY))
                .sum::<f64>()
                / n;
            let trips = rows.iter().map(|r| r.extra_round_trips).sum::<f64>() / n;
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

/// The row of `e` for `key` played by `agent`.
fn row_of<'e>(e: &'e Evaluation, key: Key<'_>, agent: &str) -> Option<&'e TaskCost> {
    e.task_costs.iter().find(|r| {
        r.policy == key.0 && r.placement == key.1 && r.agent == Some(agent) && r.variant.is_none()
    })
}

/// The best row of `e` for `job` played by `agent` ([`choose`] on `e`
/// alone).
pub(crate) fn best<'e>(e: &'e Evaluation, job: Job, agent: &str) -> Option<&'e TaskCost> {
    choose(&[e], job, agent).and_then(|key| row_of(e, key, agent))
}

/// Across datasets: for each job and agent, the policy chosen on the other
/// datasets (on the dataset itself when there is one), with its figures on
/// this one against the goals, and the cheapest tool search chosen alike.
pub fn cost_summary(evaluations: &[Evaluation]) -> String {
    let mut out = format!(
        "## What a task costs, per catalog\n\nFor each job, the policy chosen {}: the cheapest on average with Anthropic's cache within {GOAL_ROUND_TRIPS} extra round trips on average, else the cheapest of those within {ROUND_TRIP_TIE} of the fewest round trips; its figures on the catalog. Goals: at most {:.0}% of all-tools uncached, {:.0}% cached (both caches), {GOAL_ROUND_TRIPS} extra round trips.\n\n| catalog | agent | job | policy | schemas in | uncached | Anthropic | OpenAI | extra round trips | done | goals |\n|---|---|---|---|---|---:|---:|---:|---:|---:|---|\n",
        if evaluations.len() > 1 {
            "on the other catalogs"
        } else {
            "on the catalog"
        },
        GOAL_UNCACHED * 100.0,
        GOAL_CACHED * 100.0
    );
    for (index, e) in evaluations.iter().enumerate() {
        let others: Vec<&Evaluation> = if evaluations.len() > 1 {
            evaluations
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != index)
                .map(|(_, other)| other)
                .collect()
        } else {
            vec![e]
        };
        for agent in ["listing", "oracle"] {
            for job in [Job::Chat, Job::Serve, Job::Peer] {
                let Some(row) = choose(&others, job, agent).and_then(|key| row_of(e, key, agent))
                else {
                    continue;
                };
                let met = row.uncached_share <= GOAL_UNCACHED
                    && row.cached_share.iter().all(|s| *s <= GOAL_CACHED)
                    && row.extra_round_trips <= GOAL_ROUND_TRIPS;
                let _ = writeln!(
                    out,
                    "| {} | {agent} | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% | {:.2} | {:.1}% | {} |",
                    e.dataset,
                    job.label(),
                    row.policy,
                    row.placement.map_or("", Placement::label),
                    row.uncached_share * 100.0,
                    row.cached_share.first().copied().unwrap_or(0.0) * 100.0,
                    row.cached_share.get(1).copied().unwrap_or(0.0) * 100.0,
                    row.extra_round_trips,
                    row.done * 100.0,
                    match (job, met) {
                        (Job::Peer, _) => "",
                        (_, true) => "met",
                        (_, false) => "missed",
                    }
                );
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "cost_markdown_tests.rs"]
mod tests;
