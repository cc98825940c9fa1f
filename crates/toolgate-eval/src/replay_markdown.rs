//! [`replay_markdown`]: a [`Replay`] as `toolgate eval --replay` prints it:
//! what was replayed, one row per mode, the check that the best budget at
//! least halves the peak tool schemas of the run without one, and one row
//! per conversation.

use std::fmt::Write as _;
use toolgate_core::thousands;

use crate::oracle::FIXED_RESULT;
use crate::replay::{Replay, ReplayMode, ReplayRun};

/// The best budget's peak schema tokens against the run without a budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetCheck {
    /// The budget: the one whose conversations' peaks sum lowest, among
    /// those without a call refused for an unloaded tool.
    pub budget: usize,
    /// Its conversations' peaks, summed.
    pub peak_sum: usize,
    /// The same without a budget.
    pub unbudgeted_peak_sum: usize,
    /// Tokens of the tools every call sends whatever is loaded (the
    /// meta-tools), in each peak.
    pub core_tokens: usize,
    /// Conversations compared.
    pub conversations: usize,
    /// Conversations whose peak is at most half of their peak without a
    /// budget.
    pub halved: usize,
    /// Conversations using two groups or more.
    pub several_groups: usize,
    /// Those of them whose peak is at most half of their peak without a
    /// budget.
    pub several_groups_halved: usize,
    /// Their peaks, summed, with the budget.
    pub several_groups_peak_sum: usize,
    /// The same without a budget.
    pub several_groups_unbudgeted: usize,
    /// The same figures for the conversations using each number of groups,
    /// fewest first.
    pub by_groups: Vec<GroupsUsed>,
}

/// The best budget against no budget, on the conversations that use one
/// number of groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupsUsed {
    /// Groups each uses.
    pub groups: usize,
    /// Conversations.
    pub conversations: usize,
    /// Their peaks, summed, with the budget.
    pub peak_sum: usize,
    /// The same without a budget.
    pub unbudgeted_peak_sum: usize,
    /// Those whose peak is at most half of their peak without a budget.
    pub halved: usize,
}

impl BudgetCheck {
    /// The budget's summed peaks as a share of the run without one.
    pub fn share(&self) -> f64 {
        self.peak_sum as f64 / self.unbudgeted_peak_sum.max(1) as f64
    }

    /// Whether the summed peaks are at most half of the run without a
    /// budget.
    pub fn holds(&self) -> bool {
        2 * self.peak_sum <= self.unbudgeted_peak_sum
    }

    /// The summed peaks less the tools every call sends: what the loaded
    /// groups' schemas came to, with the budget and without.
    pub fn loaded_peaks(&self) -> (usize, usize) {
        let core = self.core_tokens * self.conversations;
        (
            self.peak_sum.saturating_sub(core),
            self.unbudgeted_peak_sum.saturating_sub(core),
        )
    }
}

/// The best budget of `replay` against its run without one; `None` when it
/// has no such pair.
pub fn budget_check(replay: &Replay) -> Option<BudgetCheck> {
    let unbudgeted = replay
        .runs
        .iter()
        .find(|run| run.mode == ReplayMode::NoBudget)?;
    let (budget, run) = replay
        .runs
        .iter()
        .filter_map(|run| match run.mode {
            ReplayMode::Budget(tokens) if run.total.unavailable_calls == 0 => Some((tokens, run)),
            ReplayMode::Budget(_) | ReplayMode::NoBudget | ReplayMode::AllTools => None,
        })
        .min_by_key(|(_, run)| run.peak_tool_tokens_sum)?;
    let mut check = BudgetCheck {
        budget,
        peak_sum: run.peak_tool_tokens_sum,
        unbudgeted_peak_sum: unbudgeted.peak_tool_tokens_sum,
        core_tokens: run.core_tokens,
        conversations: run.conversations.len(),
        halved: 0,
        several_groups: 0,
        several_groups_halved: 0,
        several_groups_peak_sum: 0,
        several_groups_unbudgeted: 0,
        by_groups: Vec::new(),
    };
    for (with, without) in run.conversations.iter().zip(&unbudgeted.conversations) {
        let halved = 2 * with.peak_tool_tokens <= without.peak_tool_tokens;
        check.halved += usize::from(halved);
        let at = match check
            .by_groups
            .binary_search_by_key(&with.groups, |used| used.groups)
        {
            Ok(at) => at,
            Err(at) => {
                let used = GroupsUsed {
                    groups: with.groups,
                    conversations: 0,
                    peak_sum: 0,
                    unbudgeted_peak_sum: 0,
                    halved: 0,
                };
                check.by_groups.insert(at, used);
                at
            }
        };
        let used = &mut check.by_groups[at];
        used.conversations += 1;
        used.peak_sum += with.peak_tool_tokens;
        used.unbudgeted_peak_sum += without.peak_tool_tokens;
        used.halved += usize::from(halved);
        if with.groups >= 2 {
            check.several_groups += 1;
            check.several_groups_halved += usize::from(halved);
            check.several_groups_peak_sum += with.peak_tool_tokens;
            check.several_groups_unbudgeted += without.peak_tool_tokens;
        }
    }
    Some(check)
}

/// The replay as markdown.
pub fn replay_markdown(replay: &Replay) -> String {
    let mut out = format!("## Replay: {}\n\n", replay.dataset);
    let _ = writeln!(
        out,
        "{} conversations, {} user turns, replayed through the agent loop against an oracle model \
         that calls each turn's gold tools in order, one per model call, and loads a tool's group \
         whenever the tool is not in its tool list (again after a budget unloaded it). Every tool \
         answers `{FIXED_RESULT}`. A load puts the schemas in {}. Tokens counted with {}.\n",
        replay.conversations,
        replay.turns,
        if replay.loaded_schemas == "conversation" {
            "its answer, in the conversation (the tool list stays as it is)"
        } else {
            "the tool list"
        },
        replay.encoding
    );
    let groups: Vec<String> = replay
        .groups
        .iter()
        .map(|g| {
            let tools = if g.tools == 1 { "tool" } else { "tools" };
            format!("{} {} ({} {tools})", g.group, thousands(g.tokens), g.tools)
        })
        .collect();
    let _ = writeln!(out, "Groups, by schema tokens: {}.\n", groups.join(", "));
    let mut by_groups: Vec<(usize, usize)> = Vec::new();
    if let Some(run) = replay.runs.first() {
        for conversation in &run.conversations {
            match by_groups
                .iter_mut()
                .find(|(n, _)| *n == conversation.groups)
            {
                Some((_, count)) => *count += 1,
                None => by_groups.push((conversation.groups, 1)),
            }
        }
    }
    by_groups.sort_unstable();
    let spread: Vec<String> = by_groups
        .iter()
        .map(|(groups, count)| format!("{count} use {groups}"))
        .collect();
    let _ = writeln!(
        out,
        "Conversations by groups used: {}.\n",
        spread.join(", ")
    );
    out.push_str(
        "| mode | input tokens | peak schema tokens, summed | vs no budget | largest peak \
         | failed: not loaded | failed: other | budget unloads (groups) | loads | model calls |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let unbudgeted = replay
        .runs
        .iter()
        .find(|run| run.mode == ReplayMode::NoBudget)
        .map(|run| run.peak_tool_tokens_sum);
    for run in &replay.runs {
        let total = &run.total;
        let share = unbudgeted.map_or_else(
            || "-".to_owned(),
            |base| percent(run.peak_tool_tokens_sum, base),
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} | {share} | {} | {} | {} | {} ({}) | {} | {} |",
            run.mode.label(),
            thousands(total.input_tokens as usize),
            thousands(run.peak_tool_tokens_sum),
            thousands(total.peak_tool_tokens),
            total.unavailable_calls,
            total.other_failed_calls,
            total.budget_unloads,
            total.groups_unloaded,
            total.loads,
            total.model_calls,
        );
    }
    out.push('\n');
    if replay.loaded_schemas == "conversation" {
        out.push_str(
            "The tool list is the same on every call: a load's schemas stay in the conversation \
             after the group is unloaded, so a budget bounds what may be called, not what is \
             sent, and a reload sends the schemas again. Compare the input tokens.\n\n",
        );
    } else if let Some(check) = budget_check(replay) {
        check_text(&mut out, &check);
    }
    conversations_table(&mut out, &replay.runs);
    out
}

fn check_text(out: &mut String, check: &BudgetCheck) {
    let verdict = if check.holds() { "met" } else { "not met" };
    let loaded = check.loaded_peaks();
    let _ = writeln!(
        out,
        "Best budget ({} tokens, no call failed for an unloaded tool): peak schema tokens summed \
         over the conversations {} against {} without a budget, {}: at most half is {verdict}. \
         {} of the conversations peak at half or less of their own peak without a budget; of the \
         {} that use two groups or more, {} do, and their peaks sum to {} of the run without a \
         budget. A conversation that uses one group peaks at that group either way. Less the \
         {} tokens of the tools every call sends, the loaded groups' schemas peak at {} against \
         {} ({}).\n",
        thousands(check.budget),
        thousands(check.peak_sum),
        thousands(check.unbudgeted_peak_sum),
        percent(check.peak_sum, check.unbudgeted_peak_sum),
        check.halved,
        check.several_groups,
        check.several_groups_halved,
        percent(
            check.several_groups_peak_sum,
            check.several_groups_unbudgeted
        ),
        thousands(check.core_tokens),
        thousands(loaded.0),
        thousands(loaded.1),
        percent(loaded.0, loaded.1),
    );
    out.push_str(
        "| groups used | conversations | peak schema tokens, summed: best budget | no budget \
         | share | at most half |\n|---:|---:|---:|---:|---:|---:|\n",
    );
    for used in &check.by_groups {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            used.groups,
            used.conversations,
            thousands(used.peak_sum),
            thousands(used.unbudgeted_peak_sum),
            percent(used.peak_sum, used.unbudgeted_peak_sum),
            used.halved,
        );
    }
    out.push('\n');
}

fn conversations_table(out: &mut String, runs: &[ReplayRun]) {
    let Some(first) = runs.first() else {
        return;
    };
    out.push_str(
        "### Per conversation\n\nEach mode's cell: input tokens / peak schema tokens / budget \
         unloads, and `!N` when N calls failed.\n\n| conversation | turns | groups |",
    );
    for run in runs {
        let _ = write!(out, " {} |", run.mode.label());
    }
    out.push_str("\n|---|---:|---:|");
    out.push_str(&"---:|".repeat(runs.len()));
    out.push('\n');
    for (index, conversation) in first.conversations.iter().enumerate() {
        let _ = write!(
            out,
            "| {} | {} | {} |",
            conversation.conversation, conversation.turns, conversation.groups
        );
        for run in runs {
            let Some(figures) = run.conversations.get(index) else {
                out.push_str(" - |");
                continue;
            };
            let failed = figures.unavailable_calls + figures.other_failed_calls;
            let failed = if failed > 0 {
                format!(" !{failed}")
            } else {
                String::new()
            };
            let _ = write!(
                out,
                " {} / {} / {}{failed} |",
                thousands(figures.input_tokens as usize),
                thousands(figures.peak_tool_tokens),
                figures.budget_unloads
            );
        }
        out.push('\n');
    }
}

/// `part` as a percentage of `whole`, one decimal.
fn percent(part: usize, whole: usize) -> String {
    format!("{:.1}%", part as f64 * 100.0 / whole.max(1) as f64)
}
