//! [`live_markdown`]: a live run ([`Live`]) as `toolgate eval --live`
//! prints it.

use std::fmt::Write;

use crate::live::{Live, LiveRun};

/// The success rate and costs of each policy, then each failed task's
/// gold tools and what ran.
pub fn live_markdown(live: &Live) -> String {
    let mut out = format!(
        "## {}: {} played live\n\n\
         A task is a conversation, played turn by turn; it succeeds when every tool its ground \
         truth calls ran with arguments its schema accepts (the tools answer a fixed text). \
         Tokens as the endpoint billed them; all tools' schemas: {} tokens.\n\n\
         | policy | tasks | succeeded | 95% interval | input tokens per task (cached) | \
         output tokens per task | model calls per task | seconds per task |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
        live.dataset,
        live.model,
        thousands(live.all_tool_tokens as u64)
    );
    for run in &live.runs {
        out.push_str(&row(run));
    }
    for run in &live.runs {
        let failed: Vec<_> = run.tasks.iter().filter(|task| !task.succeeded).collect();
        if failed.is_empty() {
            continue;
        }
        let _ = write!(out, "\nFailed under {}:\n\n", run.policy.label());
        for task in failed {
            let missing: Vec<&str> = task
                .gold
                .iter()
                .filter(|tool| !task.called.contains(tool))
                .map(String::as_str)
                .collect();
            let _ = write!(
                out,
                "- {}: missing {}; ran {}",
                task.conversation,
                list(&missing),
                list(&task.called.iter().map(String::as_str).collect::<Vec<_>>())
            );
            if let Some(error) = &task.error {
                let _ = write!(out, "; stopped: {error}");
            }
            out.push('\n');
        }
    }
    out
}

fn row(run: &LiveRun) -> String {
    if let Some(reason) = &run.skipped {
        return format!(
            "| {} | - | - | - | not run: {reason} | | | |\n",
            run.policy.label()
        );
    }
    let n = run.tasks.len().max(1) as u64;
    let sum = |f: fn(&crate::live::LiveTask) -> u64| run.tasks.iter().map(f).sum::<u64>();
    let seconds: f64 = run.tasks.iter().map(|task| task.seconds).sum();
    let calls = run.tasks.iter().map(|task| task.model_calls).sum::<usize>() as f64;
    format!(
        "| {} | {} | {} ({:.0}%) | {:.0}-{:.0}% | {} ({}) | {} | {:.1} | {:.0} |\n",
        run.policy.label(),
        run.tasks.len(),
        run.succeeded,
        100.0 * run.succeeded as f64 / n as f64,
        100.0 * run.interval.0,
        100.0 * run.interval.1,
        thousands(sum(|task| task.input_tokens) / n),
        thousands(sum(|task| task.cached_input_tokens) / n),
        thousands(sum(|task| task.output_tokens) / n),
        calls / n as f64,
        seconds / n as f64,
    )
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
