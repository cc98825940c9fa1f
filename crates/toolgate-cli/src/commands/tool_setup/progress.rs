//! Start-up progress on a terminal: which upstream is starting and how many
//! have, then how many tool texts are embedded, on one line rewritten in
//! place and cleared when the step ends, so a slow start (a `uvx` server
//! fetching its package, a cold vector cache) is not silent. Nothing is
//! shown when stderr is not a terminal: logs and tests stay as they were.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_tools::{Progress, Step};

/// The progress line of one command. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TerminalProgress {
    shown: Arc<Mutex<Shown>>,
}

/// What the line shows, and where it goes.
struct Shown {
    out: Box<dyn Write + Send>,
    /// Upstreams that start before the command goes on.
    upstreams: usize,
    /// Those started (or failed) so far.
    started: usize,
    /// Characters on the line now.
    width: usize,
    /// The command went on: later steps (an upstream started on first
    /// load, a restart) are not shown.
    finished: bool,
}

impl TerminalProgress {
    /// The progress line on stderr, when it is a terminal.
    pub(crate) fn on_stderr() -> Option<Self> {
        std::io::stderr()
            .is_terminal()
            .then(|| Self::to(Box::new(std::io::stderr())))
    }

    /// The progress line written to `out`.
    fn to(out: Box<dyn Write + Send>) -> Self {
        Self {
            shown: Arc::new(Mutex::new(Shown {
                out,
                upstreams: 0,
                started: 0,
                width: 0,
                finished: false,
            })),
        }
    }

    /// `count` upstreams start before the command goes on.
    pub(crate) fn expect_upstreams(&self, count: usize) {
        self.shown().upstreams = count;
    }

    /// What the libraries report to.
    pub(crate) fn progress(&self) -> Progress {
        let shown = Arc::clone(&self.shown);
        Progress::new(move |step| {
            shown
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .show(step);
        })
    }

    /// Clears the line; nothing more is shown.
    pub(crate) fn finish(&self) {
        let mut shown = self.shown();
        shown.write("");
        shown.finished = true;
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, Shown> {
        self.shown.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shown {
    fn show(&mut self, step: Step<'_>) {
        if self.finished {
            return;
        }
        let line = match step {
            Step::Starting { source } => format!(
                "starting upstream '{source}' ({}/{})",
                self.started + 1,
                self.upstreams.max(self.started + 1)
            ),
            Step::Started { .. } => {
                self.started += 1;
                String::new()
            }
            Step::Embedding { done, total } if done < total => {
                format!("embedding tool texts for routing: {done}/{total}")
            }
            Step::Embedding { .. } => String::new(),
            // A step this command does not show.
            _ => return,
        };
        self.write(&line);
    }

    /// Replaces the line with `line` (spaces cover what it does not);
    /// an empty `line` clears it.
    fn write(&mut self, line: &str) {
        let width = line.chars().count();
        if width == 0 && self.width == 0 {
            return;
        }
        let cover = " ".repeat(self.width.saturating_sub(width));
        let back = if width == 0 { "\r" } else { "" };
        let _ = write!(self.out, "\r{line}{cover}{back}");
        let _ = self.out.flush();
        self.width = width;
    }
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
