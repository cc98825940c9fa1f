//! How a turn shows in a terminal: the answer streams to stdout; tool
//! calls, routing, retries and token reports go to stderr.

use std::fmt::Write as _;
use std::io::Write;

use toolgate_agent::{CallReport, Compacted, TurnEvent};
use toolgate_core::ToolStatus;
use toolgate_core::routing::Visible;
use toolgate_llm::StreamEvent;

use crate::output::{eprint, print};

/// Longest tool argument or result text shown on one line.
const SHOWN_CHARS: usize = 120;

/// Prints a turn as it happens.
#[derive(Default)]
pub(super) struct Printer {
    /// The answer's last line has no newline yet.
    mid_line: bool,
    pub(super) reports: Vec<CallReport>,
}

impl Printer {
    pub(super) fn show(&mut self, event: TurnEvent) {
        match event {
            TurnEvent::Model(StreamEvent::TextDelta(text)) => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                self.mid_line = !text.ends_with('\n');
            }
            TurnEvent::Model(StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            }) => {
                self.end_line();
                eprint(&format!(
                    "  … {reason}; retry {attempt} in {:.1} s\n",
                    delay.as_secs_f64()
                ));
            }
            TurnEvent::Model(StreamEvent::ToolCallStarted { .. }) => {}
            TurnEvent::ModelCalled(report) => self.reports.push(report),
            TurnEvent::Routed(decision) => {
                let shown = match &decision.visible {
                    Visible::Catalog => "the whole catalog".to_owned(),
                    Visible::Groups(groups) => groups
                        .iter()
                        .map(|g| g.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                eprint(&format!(
                    "  ⇢ routed: {shown} ({} tier, confidence {})\n",
                    decision.tier,
                    crate::output::probability(decision.confidence, 2)
                ));
            }
            TurnEvent::Escalated { reason } => {
                self.end_line();
                eprint(&format!("  ⇡ whole catalog from now on: {reason}\n"));
            }
            TurnEvent::Compacted(compacted) => {
                self.end_line();
                eprint(&compacted_line(&compacted));
            }
            TurnEvent::CompactionFailed { reason } => {
                self.end_line();
                eprint(&format!(
                    "  ⇣ compaction failed, the conversation goes on as it was: {reason}\n"
                ));
            }
            TurnEvent::BudgetUnloaded { groups, tools } => {
                self.end_line();
                let unloaded: Vec<String> = groups
                    .iter()
                    .map(ToString::to_string)
                    .chain(
                        tools
                            .iter()
                            .map(|(group, tool)| format!("{tool} ({group})")),
                    )
                    .collect();
                eprint(&format!(
                    "  ⇣ unloaded to stay within [tools] max_loaded_tokens: {}\n",
                    unloaded.join(", ")
                ));
            }
            TurnEvent::ToolStarted {
                name, arguments, ..
            } => {
                self.end_line();
                eprint(&format!("  → {name} {}\n", shorten(&arguments)));
            }
            TurnEvent::ToolFinished {
                name,
                status,
                output,
                ..
            } => {
                self.end_line();
                let mark = match status {
                    ToolStatus::Success => "←",
                    ToolStatus::Error | ToolStatus::Pending => "✗",
                };
                eprint(&format!("  {mark} {name}: {}\n", shorten(&output)));
            }
        }
    }

    pub(super) fn end_line(&mut self) {
        if self.mid_line {
            print("\n");
            self.mid_line = false;
        }
    }
}

/// What a compaction did, on one line.
pub(super) fn compacted_line(compacted: &Compacted) -> String {
    let groups = if compacted.loaded_groups.is_empty() {
        "no group".to_owned()
    } else {
        compacted
            .loaded_groups
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "  ⇣ conversation compacted: {} → {} tokens; still loaded: {groups}\n",
        compacted.tokens_before, compacted.tokens_after
    )
}

/// The first line of `text`, cut to [`SHOWN_CHARS`].
fn shorten(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let more = text.lines().nth(1).is_some();
    match first.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if more => format!("{first} …"),
        None => first.to_owned(),
    }
}

/// One line after each turn: what the tools cost against the whole catalog.
pub(super) fn turn_summary(calls: &[CallReport]) -> String {
    let Some(last) = calls.last() else {
        return String::new();
    };
    let sent: usize = calls.iter().map(|c| c.tool_tokens).sum();
    let all = last.catalog_tokens * calls.len();
    let usage = match calls
        .iter()
        .filter_map(|c| c.usage)
        .reduce(|a, b| toolgate_llm::Usage {
            input_tokens: a.input_tokens + b.input_tokens,
            output_tokens: a.output_tokens + b.output_tokens,
            cached_input_tokens: None,
        }) {
        Some(usage) => format!(
            "; provider counted {} in, {} out",
            usage.input_tokens, usage.output_tokens
        ),
        None => String::new(),
    };
    format!(
        "  [{} model call{}: tool schemas {sent} tokens, {all} with the whole catalog{usage}]\n",
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
    )
}

/// The `/tokens` table.
pub(super) fn token_table(reports: &[CallReport]) -> String {
    if reports.is_empty() {
        return "No model call yet in this conversation.\n".to_owned();
    }
    let mut out = format!(
        "{:>4}  {:>6}  {:>13}  {:>14}  {:>6}  {:>12}  {:>13}\n",
        "call", "tools", "schema tokens", "catalog tokens", "saved", "provider in", "provider out"
    );
    for (index, report) in reports.iter().enumerate() {
        let saved = if report.catalog_tokens == 0 {
            0.0
        } else {
            100.0 * (1.0 - report.tool_tokens as f64 / report.catalog_tokens as f64)
        };
        let (input, output) = match report.usage {
            Some(usage) => (
                usage.input_tokens.to_string(),
                usage.output_tokens.to_string(),
            ),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:>6}  {:>13}  {:>14}  {:>5.1}%  {:>12}  {:>13}",
            index + 1,
            format!("{}/{}", report.tools_sent, report.catalog_tools),
            report.tool_tokens,
            report.catalog_tokens,
            saved,
            input,
            output
        );
    }
    out
}

/// Calls of each polymorphic tool's actions since chat started.
pub(super) fn action_table(calls: &[(String, String, u64)]) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let mut out = String::from("Polymorphic tool calls:\n");
    for (tool, action, count) in calls {
        let _ = writeln!(out, "  {tool}.{action}: {count}");
    }
    out
}
