//! The no-progress rule: a restricted turn whose calls keep
//! failing, or that calls a tool it cannot see, escalates to the whole
//! catalog. [`Progress`] counts; the rule is the routing configuration's.

use toolgate_core::routing::NoProgress;

/// How a tool call ended, for the no-progress rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    Succeeded,
    Failed,
    /// Refused: the tool is outside the visible set.
    Outside,
}

/// Failed calls in a row, across the turn's model calls.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    failed_in_a_row: usize,
}

impl Progress {
    /// Why the turn should escalate after these calls, if it should.
    pub(crate) fn escalation(
        &mut self,
        outcomes: &[CallOutcome],
        rule: NoProgress,
    ) -> Option<String> {
        for outcome in outcomes {
            match outcome {
                CallOutcome::Outside if rule.outside_call => {
                    return Some("the model called a tool outside the visible set".to_owned());
                }
                CallOutcome::Outside | CallOutcome::Failed => self.failed_in_a_row += 1,
                CallOutcome::Succeeded => self.failed_in_a_row = 0,
            }
        }
        (rule.failed_calls > 0 && self.failed_in_a_row >= rule.failed_calls)
            .then(|| format!("{} tool calls failed in a row", self.failed_in_a_row))
    }
}
