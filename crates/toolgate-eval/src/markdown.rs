//! An [`Evaluation`] as the markdown `toolgate eval` prints: the dataset line,
//! one table row per policy, the router's tier mix and its calibration.
//!
//! The text is built here and returned, never printed: the CLI decides where
//! it goes, and tests compare it whole.

use std::fmt::Write as _;

use toolgate_core::routing::{DEFAULT_SEARCH_TOOLS, ONLINE_STRENGTH};

use crate::report::{
    Band, Evaluation, FIND_WITHOUT_ID_FINDERS, LEARNED_ROUTER, PolicyReport, WITH_ID_FINDERS,
    WITHOUT_ID_FINDERS,
};

/// Where `e`'s settings were chosen: its own tuning part, or the other
/// datasets when it is left out.
fn chosen_where(e: &Evaluation) -> &'static str {
    if e.tuned_on.is_empty() {
        "on the tuning part"
    } else {
        "on the other datasets"
    }
}

/// The report of one dataset as markdown; `encoding` names the tokenizer the
/// token counts come from.
pub fn markdown(e: &Evaluation, encoding: &str) -> String {
    let mut out = String::new();
    heading(&mut out, e, encoding);
    crate::cost_markdown::cost_section(&mut out, e);
    policy_table(&mut out, e);
    router_notes(&mut out, e);
    find_note(&mut out, e);
    search_comparison(&mut out, e);
    calibrations(&mut out, e);
    out.push('\n');
    out
}

/// The dataset's line: its size, split and where its settings come from.
fn heading(out: &mut String, e: &Evaluation, encoding: &str) {
    let tuned = if e.tuned_on.is_empty() {
        "Router settings from the tuning part".to_owned()
    } else {
        format!(
            "Left out: router settings fitted on {} only",
            e.tuned_on.join(", ")
        )
    };
    let _ = writeln!(
        out,
        "## {}\n\n{} tools in {} groups, {} schema tokens ({encoding}). {} queries reported, {} for tuning: {}. {tuned}: confidence {}, at most {} groups.\n",
        e.dataset,
        e.tools,
        e.groups,
        e.all_tools_tokens,
        e.report_queries,
        e.tune_queries,
        e.split_rule,
        e.confidence_model,
        e.max_groups
    );
}

/// What the headline router's setting was chosen among.
fn considered_table(out: &mut String, e: &Evaluation) {
    if e.tool_router_considered.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nIt was chosen among the best setting of each `tools_per_group` {}: a setting is costed as a `chat` task only where it keeps the recall floor on each catalog within the token budget; where it falls short is named.\n\n| tools per group | route_above | id finders | worst group recall | of all-tools tokens (mean, most) | short of the floor or budget | a `chat` task | chosen |\n|---|---:|---|---:|---:|---|---|---|",
        chosen_where(e)
    );
    for c in &e.tool_router_considered {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | {:.1}%, {:.1}% | {} | {} | {} |",
            c.tools(),
            c.route_above,
            if c.id_finders { "yes" } else { "no" },
            c.worst_recall,
            c.token_fraction * 100.0,
            c.most_tokens * 100.0,
            c.shortfalls(),
            c.cost(),
            if c.chosen { "yes" } else { "" },
        );
    }
}

/// What the first call shows under each policy.
fn policy_table(out: &mut String, e: &Evaluation) {
    let _ = writeln!(
        out,
        "What the first call shows (diagnostics):\n\n| policy | group recall | tool recall | visible tokens | of all-tools | p50 decision |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for p in &e.policies {
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.0} | {:.1}% | {:.0} µs |",
            p.policy,
            p.group_recall,
            p.tool_recall,
            p.mean_visible_tokens,
            p.token_fraction * 100.0,
            p.p50_decision_us
        );
    }
}

/// The tiered router's tiers, and which setting `tool_router` is.
fn router_notes(out: &mut String, e: &Evaluation) {
    if let Some(router) = e.policies.iter().find(|p| p.policy == "tiered_router")
        && let (Some(tiers), Some(escalation), Some(high)) =
            (router.tiers, router.escalation_rate, router.high_tier)
    {
        let _ = writeln!(
            out,
            "\nTiers: high {:.1}%, medium {:.1}%, low {:.1}%. Escalation rate (restricted decisions missing a gold group): {:.1}%.\nHigh tier: {} queries, gold-group recall {:.3}, {:.1}% of all-tools tokens.",
            tiers.high * 100.0,
            tiers.medium * 100.0,
            tiers.low * 100.0,
            escalation * 100.0,
            high.queries,
            high.group_recall,
            high.token_fraction * 100.0
        );
    }
    if let Some(high) = e
        .policies
        .iter()
        .find(|p| p.policy == "tiered_router(polymorphic)")
        .and_then(|p| p.high_tier)
    {
        let _ = writeln!(
            out,
            "With the groups as polymorphic tools, the high tier sends {:.1}% of all-tools tokens.",
            high.token_fraction * 100.0
        );
    }
    if !e.tool_router_setting.is_empty() {
        let _ = writeln!(
            out,
            "\n`tool_router` is {}, chosen {}. {:.1}% of its decisions routed as many groups as its cap.",
            e.tool_router_setting,
            chosen_where(e),
            e.tool_router_at_cap * 100.0
        );
        considered_table(out, e);
        let _ = writeln!(
            out,
            "`{WITHOUT_ID_FINDERS}` and `{WITH_ID_FINDERS}` are the router chosen the same way among the settings that show no id finders, and among those that show them (beside a shown tool that requires an `X_id`, the tool of another group that searches or lists X, within the token budget)."
        );
    }
}

/// What the `find_tool_groups` rows are.
fn find_note(out: &mut String, e: &Evaluation) {
    let fewest = crate::find::SEARCH_GROUPS[0];
    let _ = writeln!(
        out,
        "\n`find_tool_groups` is the gateway's search, one call per query: the groups the router routes, most likely first, at most {} groups (`search_groups`, chosen {} among {}), each with its {DEFAULT_SEARCH_TOOLS} best tools; `{FIND_WITHOUT_ID_FINDERS}` the same without id finders{}.",
        e.search_groups,
        chosen_where(e),
        crate::find::SEARCH_GROUPS
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        if e.search_groups == fewest {
            String::new()
        } else {
            format!("; `find_tool_groups({fewest} groups)` at most {fewest}")
        },
    );
}

/// The routers' calibration tables, and the tool router's self-test.
fn calibrations(out: &mut String, e: &Evaluation) {
    let _ = writeln!(
        out,
        "\nCalibration (reported queries): confidence band, decisions, mean confidence, observed share whose routed groups held every gold group.\n"
    );
    calibration_table(out, &e.calibration);
    if let Some(test) = &e.tool_router_self_test {
        let _ = writeln!(
            out,
            "\nSelf-test of `tool_router`: {} of the catalog's tools routed as turns (each by its description, itself left out); {:.1}% of them routed their own group (and the finder of any id they require), at a mean fitted confidence of {:.3}. The fitted confidence is restated as sigmoid({:.2} logit(c) {:+.2}).",
            test.probes,
            test.held_share() * 100.0,
            test.mean_fitted,
            test.recalibration.slope,
            test.recalibration.intercept,
        );
    }
    calibration_section(
        out,
        "Calibration of `tool_router` as fitted on the other catalogs alone, before its self-test (reported queries); off by: points between mean confidence and observed.",
        &e.tool_router_calibration_fitted,
    );
    for (policy, bands) in &e.tool_router_calibration {
        let _ = writeln!(
            out,
            "\nCalibration of `{policy}` as it states it, restated by its self-test (reported queries), as above.\n"
        );
        calibration_table(out, bands);
    }
    if !e.tool_router_calibration.is_empty() {
        calibration_section(
            out,
            &format!(
                "The router learning online, as `toolgate chat --route` runs it (`{LEARNED_ROUTER}`): the reported queries in order, each decision stated before its own outcome is recorded (a prior worth {ONLINE_STRENGTH} turns, centred on the self-test's restatement), the recovery groups it learned counted as relied on."
            ),
            &e.tool_router_calibration_online,
        );
    }
}

/// `heading` and its table of `bands`, when any band holds a decision.
fn calibration_section(out: &mut String, heading: &str, bands: &[Band]) {
    if bands.iter().any(|b| b.queries > 0) {
        let _ = writeln!(out, "\n{heading}\n");
        calibration_table(out, bands);
    }
}

/// Group recall the headline goal asks of a catalog never tuned on.
pub const GOAL_RECALL: f64 = 0.95;
/// Share of all-tools tokens it may spend for it.
pub const GOAL_TOKENS: f64 = 0.15;
/// Points a confidence band (of [`GOAL_BAND_DECISIONS`] or more) may be off.
pub const GOAL_BAND_POINTS: f64 = 5.0;
/// Decisions a band needs for the calibration goal to apply to it.
pub const GOAL_BAND_DECISIONS: usize = 50;

/// The datasets' `tool_router` rows side by side against the goals: group
/// recall at most tokens, ahead of every tool search at the same tokens,
/// and every band of enough decisions within a few points of what it
/// states, as fitted and as learned online. What `--leave-one-out` ends
/// with, before the settings; empty when no dataset has the tool router (it
/// needs the embedding model).
pub fn goal_summary(evaluations: &[Evaluation]) -> String {
    if !evaluations
        .iter()
        .any(|e| e.policies.iter().any(|p| p.policy == "tool_router"))
    {
        return String::new();
    }
    let mut out = format!(
        "## Against the goals

`tool_router` on each dataset. Goals: group recall at least {GOAL_RECALL} at most {:.0}% of all-tools tokens, ahead of the best tool search at the same tokens; every confidence band of {GOAL_BAND_DECISIONS} decisions or more within {GOAL_BAND_POINTS} points (worst band, in points; - when no band has enough), as fitted on the other catalogs alone, as the router states it before any turn (restated by its self-test on the catalog's own tools) and as learned online. Ceiling: the highest group recall a measured group ranking reaches within the token goal with a fixed number of groups (its g best, each with its m best tools), g picked on the reported queries themselves: what the rankings allow there, not a result. Learning online: the same router as `toolgate chat --route` runs it, routing the reported queries in order while it learns its confidence (so its tiers) and recovery groups from the earlier ones' outcomes (group recall at the share of all-tools tokens, the goal met or missed).

",
        GOAL_TOKENS * 100.0
    );
    let _ = writeln!(
        out,
        "| dataset | group recall | of all-tools | margin over the best tool search | recall goal | ceiling | learning online | worst band, fitted | worst band, self-tested | worst band, learned online |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---|---|---:|---:|---:|");
    let (mut recall_met, mut fitted_met, mut online_met, mut rows) = (0, 0, 0, 0);
    let mut tested_met = 0;
    let mut learned_met = 0;
    for e in evaluations {
        let Some(router) = e.policies.iter().find(|p| p.policy == "tool_router") else {
            continue;
        };
        rows += 1;
        let meets = |p: &PolicyReport| {
            p.group_recall >= GOAL_RECALL
                && p.token_fraction <= GOAL_TOKENS
                && margin_over_search(e, p.group_recall, p.token_fraction).is_none_or(|m| m > 0.0)
        };
        let margin = margin_over_search(e, router.group_recall, router.token_fraction);
        let met = meets(router);
        let learned = e.policies.iter().find(|p| p.policy == LEARNED_ROUTER);
        learned_met += usize::from(learned.is_some_and(meets));
        let learned = learned.map_or("-".to_owned(), |p| {
            format!(
                "{:.3} at {:.1}%, {}",
                p.group_recall,
                p.token_fraction * 100.0,
                if meets(p) { "met" } else { "missed" }
            )
        });
        let fitted = worst_band(Some(&e.tool_router_calibration_fitted));
        let tested = worst_band(e.tool_router_calibration.first().map(|(_, b)| b.as_slice()));
        let online = worst_band(Some(&e.tool_router_calibration_online));
        recall_met += usize::from(met);
        fitted_met += usize::from(fitted.is_none_or(|w| w <= GOAL_BAND_POINTS));
        tested_met += usize::from(tested.is_none_or(|w| w <= GOAL_BAND_POINTS));
        online_met += usize::from(online.is_none_or(|w| w <= GOAL_BAND_POINTS));
        let points = |worst: Option<f64>| worst.map_or("-".to_owned(), |w| format!("{w:.1}"));
        let ceiling = ceiling_within(e, GOAL_TOKENS).map_or("-".to_owned(), |(recall, ranking)| {
            format!("{recall:.3} ({ranking})")
        });
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.1}% | {} | {} | {ceiling} | {learned} | {} | {} | {} |",
            e.dataset,
            router.group_recall,
            router.token_fraction * 100.0,
            margin.map_or("-".to_owned(), |m| format!("{m:+.3}")),
            if met { "met" } else { "missed" },
            points(fitted),
            points(tested),
            points(online),
        );
    }
    let _ = writeln!(
        out,
        "
Recall goal met on {recall_met} of {rows} ({learned_met} of {rows} learning online); calibration within {GOAL_BAND_POINTS} points on {fitted_met} of {rows} as fitted, {tested_met} of {rows} self-tested (as the router states it before any turn), {online_met} of {rows} learned online.
"
    );
    out
}

/// The highest group recall of any point of `e`'s group rankings within
/// `token_fraction`, with the ranking, its g and the tokens it spends:
/// `groups[bm25]@1, g 8, 14.5%`.
fn ceiling_within(e: &Evaluation, token_fraction: f64) -> Option<(f64, String)> {
    e.group_curves
        .iter()
        .flat_map(|curve| {
            curve
                .points
                .iter()
                .filter(|p| p.token_fraction <= token_fraction)
                .map(move |p| {
                    let at = format!(
                        "{}, g {}, {:.1}%",
                        curve.method,
                        p.k,
                        p.token_fraction * 100.0
                    );
                    (p.group_recall, at)
                })
        })
        .fold(None, |best: Option<(f64, String)>, candidate| match best {
            Some(b) if b.0 >= candidate.0 => Some(b),
            _ => Some(candidate),
        })
}

/// A router's group recall minus the best tool search's at its tokens;
/// `None` without search curves.
fn margin_over_search(e: &Evaluation, recall: f64, token_fraction: f64) -> Option<f64> {
    e.search_curves
        .iter()
        .map(|c| c.recall_at(token_fraction))
        .reduce(f64::max)
        .map(|best| recall - best)
}

/// The most points any band of enough decisions is off; `None` when no
/// band has enough.
fn worst_band(bands: Option<&[Band]>) -> Option<f64> {
    bands?
        .iter()
        .filter(|b| b.queries >= GOAL_BAND_DECISIONS)
        .map(|b| (b.mean_confidence - b.observed).abs() * 100.0)
        .reduce(f64::max)
}

/// The bands with decisions, one row each, with how many points the mean
/// confidence is from the observed share.
fn calibration_table(out: &mut String, bands: &[Band]) {
    let _ = writeln!(
        out,
        "| band | decisions | mean confidence | observed | off by |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for band in bands.iter().filter(|b| b.queries > 0) {
        let _ = writeln!(
            out,
            "| {:.2}-{:.2} | {} | {:.3} | {:.3} | {:.1} |",
            band.from,
            band.to,
            band.queries,
            band.mean_confidence,
            band.observed,
            (band.mean_confidence - band.observed).abs() * 100.0
        );
    }
}

/// Each tool-first router against tool search by every method at the same
/// tokens (interpolated on the search curves).
fn search_comparison(out: &mut String, e: &Evaluation) {
    let routers: Vec<_> = e
        .policies
        .iter()
        .filter(|p| p.policy.starts_with("tool_router"))
        .collect();
    if routers.is_empty() || e.search_curves.is_empty() {
        return;
    }
    let methods: Vec<&str> = e.search_curves.iter().map(|c| c.method.as_str()).collect();
    let _ = writeln!(
        out,
        "\nTool search at the same tokens (gold-group recall of the k best tools, interpolated):\n"
    );
    let _ = writeln!(
        out,
        "| policy | group recall | of all-tools | {} | margin over the best |",
        methods.join(" | ")
    );
    let _ = writeln!(out, "|---|---:|---:|{}---:|", "---:|".repeat(methods.len()));
    for router in routers {
        let at: Vec<f64> = e
            .search_curves
            .iter()
            .map(|c| c.recall_at(router.token_fraction))
            .collect();
        let cells: Vec<String> = at.iter().map(|r| format!("{r:.3}")).collect();
        let margin =
            margin_over_search(e, router.group_recall, router.token_fraction).unwrap_or(0.0);
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.1}% | {} | {:+.3} |",
            router.policy,
            router.group_recall,
            router.token_fraction * 100.0,
            cells.join(" | "),
            margin
        );
    }
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
