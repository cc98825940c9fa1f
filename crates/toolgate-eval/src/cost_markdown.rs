//! The cost of a task as markdown: per dataset, each policy's billed input
//! tokens (uncached and under each provider's cache) and round trips; across
//! datasets, the best policy for each job against the goals.

use std::fmt::Write as _;

use crate::agent::{LISTING_DEPTH, MAX_ROUNDS};
use crate::cost_choice::{
    GOAL_CACHED, GOAL_ROUND_TRIPS, GOAL_UNCACHED, ROUND_TRIP_TIE, choose, row_of,
};
use crate::defaults::{THRESHOLD_SHARES, percent};
use crate::episode::{CACHES, Placement};
use crate::report::Evaluation;
use crate::report::{Job, TaskCost};

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
    if !e.defaults.is_empty() {
        let _ = writeln!(out, "{}\n", defaults_line(e));
    }
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

/// Each job's default on `e`, as chosen where it is not reported.
fn defaults_line(e: &Evaluation) -> String {
    let each: Vec<String> = e
        .defaults
        .iter()
        .map(|d| {
            let what = if d.sends_all_tools {
                format!(
                    "every tool ({} tokens, under {})",
                    e.all_tools_tokens, d.threshold_tokens
                )
            } else {
                format!(
                    "`{}` ({}; {} tokens, not under {})",
                    d.deferred,
                    d.placement.map_or("", Placement::label),
                    e.all_tools_tokens,
                    d.threshold_tokens
                )
            };
            format!("`{}`: `{}` sends {what}", d.job.label(), d.policy())
        })
        .collect();
    let chosen_on = e
        .defaults
        .first()
        .map_or(String::new(), |d| d.chosen_on.join(", "));
    format!(
        "Each job's default, chosen on {chosen_on} (the rows marked **default**; `auto(s)` rows send every tool where the schemas are under s of the window, else the job's deferred policy): {}.",
        each.join("; ")
    )
}

/// A row's policy as the tables name it: with the variant it plays, and
/// whether its tasks fit in the context window.
fn policy_cell(row: &TaskCost) -> String {
    let mut cell = row.policy.clone();
    if let Some(sends) = &row.sends {
        cell.push_str(&format!(" -> {sends}"));
    }
    if row.default {
        cell.push_str(" **default**");
    }
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

/// Across datasets: each job's default (its `auto` row, [`choose_defaults`](crate::choose_defaults))
/// with each agent, and the cheapest tool search chosen alike on the other
/// datasets (on the dataset itself when there is one), with its figures on
/// this one against the goals; then what the defaults are chosen as on
/// every dataset, and what each must hold ([`must_holds`](crate::must_hold::must_holds)).
pub fn cost_summary(evaluations: &[Evaluation]) -> String {
    let shares: Vec<String> = THRESHOLD_SHARES.iter().map(|s| percent(*s)).collect();
    let mut out = format!(
        "## What a task costs with each job's default, per catalog\n\nEach job's default is `auto(s)`: every tool sent, with no meta-tool, where the catalog's schemas are under s of the context window, else the job's deferred policy. Both are chosen {} by what a task costs with the listing agent: the cheapest on average with Anthropic's cache within {GOAL_ROUND_TRIPS} extra round trips on average, else the cheapest of those within {ROUND_TRIP_TIE} of the fewest round trips; first the deferred policy among the job's rows, then s among {} (the largest of those that cost alike). Tool search (`peer`) is chosen alike. Their figures on the catalog, with each agent. Goals: at most {:.0}% of all-tools uncached, {:.0}% cached (both caches), {GOAL_ROUND_TRIPS} extra round trips.\n\n| catalog | agent | job | policy | sends | schemas in | uncached | Anthropic | OpenAI | extra round trips | done | goals |\n|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|\n",
        if evaluations.len() > 1 {
            "on the other catalogs"
        } else {
            "on the catalog"
        },
        shares.join(", "),
        GOAL_UNCACHED * 100.0,
        GOAL_CACHED * 100.0
    );
    for (index, e) in evaluations.iter().enumerate() {
        let others = crate::defaults::others(evaluations, index);
        for agent in ["listing", "oracle"] {
            for default in &e.defaults {
                if let Some(row) = e
                    .task_costs
                    .iter()
                    .find(|r| r.default && r.job == default.job && r.agent == Some(agent))
                {
                    summary_row(&mut out, e, agent, row);
                }
            }
            if let Some(row) =
                choose(&others, Job::Peer, agent).and_then(|key| row_of(e, key, agent))
            {
                summary_row(&mut out, e, agent, row);
            }
        }
    }
    let names: Vec<&str> = evaluations.iter().map(|e| e.dataset.as_str()).collect();
    let _ = writeln!(
        out,
        "\nChosen alike on every catalog ({}), the defaults a build ships:\n",
        names.join(", ")
    );
    for default in crate::defaults::defaults_on_all(evaluations) {
        let _ = writeln!(
            out,
            "- `{}`: `{}`, every tool under {} tokens ({} of a {}-token window), else `{}` ({})",
            default.job.label(),
            default.policy(),
            default.threshold_tokens,
            percent(default.threshold_share),
            evaluations.first().map_or(0, |e| e.context_window),
            default.deferred,
            default.placement.map_or("", Placement::label),
        );
    }
    out.push('\n');
    out.push_str(&crate::must_hold::must_holds(evaluations));
    out
}

/// One line of the summary: `row` of `e` played by `agent`.
fn summary_row(out: &mut String, e: &Evaluation, agent: &str, row: &TaskCost) {
    let met = row.uncached_share <= GOAL_UNCACHED
        && row.cached_share.iter().all(|s| *s <= GOAL_CACHED)
        && row.extra_round_trips <= GOAL_ROUND_TRIPS;
    let _ = writeln!(
        out,
        "| {} | {agent} | {} | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% | {:.2} | {:.1}% | {} |",
        e.dataset,
        row.job.label(),
        row.policy,
        row.sends.as_deref().unwrap_or(""),
        row.placement.map_or("", Placement::label),
        row.uncached_share * 100.0,
        row.cached_share.first().copied().unwrap_or(0.0) * 100.0,
        row.cached_share.get(1).copied().unwrap_or(0.0) * 100.0,
        row.extra_round_trips,
        row.done * 100.0,
        match (row.job, met) {
            (Job::Peer, _) => "",
            (_, true) => "met",
            (_, false) => "missed",
        }
    );
}

#[cfg(test)]
#[path = "cost_markdown_tests.rs"]
mod tests;
