//! [`LearnedRecovery`]: recovery groups a deployment learns from the turns
//! it routed. The recovery groups of `[routing] recovery_groups` are configured by hand; some
//! catalogs have groups that turns need without naming them (a task that
//! ends "save it in /root/report.md" needs a server that writes files, a
//! "next Wednesday" needs today's date). No ranking of the turn's words
//! puts those first, but a deployment sees them missed, turn after turn.
//! A group the ranking missed more than once in the recent labelled turns
//! is shown on every later restricted turn, with its best tools, the most
//! missed first, until its misses age out.
//!
//! A turn's misses are recorded only after its own decision, so what a
//! decision adds never saw that turn.

use std::collections::{HashMap, VecDeque};

use crate::name::GroupId;
use crate::routing::online::KEPT_OUTCOMES;

/// Misses a group needs before it is learned: one miss is chance. Among
/// the least misses tried (2, and 1%, 2%, 5% or 10% of the kept turns),
/// 2 alone gave the highest recall on every catalog left out
/// (BENCHMARKS.md).
pub const MIN_MISSES: usize = 2;

/// Most groups learned at once, the most missed first: a bound on what
/// they add to every restricted turn.
pub const MAX_LEARNED: usize = 5;

/// The groups each recent labelled turn needed that its decision did not
/// route, and the recovery groups they make.
#[derive(Clone, Debug)]
pub struct LearnedRecovery {
    /// The missed groups of the turns kept ([`KEPT_OUTCOMES`]), newest last.
    turns: VecDeque<Vec<GroupId>>,
    /// How many kept turns missed each group.
    misses: HashMap<GroupId, usize>,
}

impl Default for LearnedRecovery {
    fn default() -> Self {
        Self::new()
    }
}

impl LearnedRecovery {
    /// Nothing learned yet.
    pub fn new() -> Self {
        Self {
            turns: VecDeque::new(),
            misses: HashMap::new(),
        }
    }

    /// With `turns` (each turn's missed groups, oldest first) recorded:
    /// what an earlier run learned.
    pub fn with_turns<I, T>(mut self, turns: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[GroupId]>,
    {
        for missed in turns {
            self.record(missed.as_ref());
        }
        self
    }

    /// Records one labelled turn: the groups it needed that its decision
    /// did not route (empty when the routed groups held). The oldest turn
    /// goes when [`KEPT_OUTCOMES`] are kept.
    pub fn record(&mut self, missed: &[GroupId]) {
        let mut unique: Vec<GroupId> = Vec::with_capacity(missed.len());
        for group in missed {
            if !unique.contains(group) {
                unique.push(group.clone());
            }
        }
        for group in &unique {
            *self.misses.entry(group.clone()).or_default() += 1;
        }
        self.turns.push_back(unique);
        while self.turns.len() > KEPT_OUTCOMES {
            let Some(oldest) = self.turns.pop_front() else {
                break;
            };
            for group in oldest {
                if let Some(count) = self.misses.get_mut(&group) {
                    *count -= 1;
                    if *count == 0 {
                        self.misses.remove(&group);
                    }
                }
            }
        }
    }

    /// Labelled turns kept.
    pub fn turns(&self) -> usize {
        self.turns.len()
    }

    /// The learned recovery groups: those missed at least [`MIN_MISSES`]
    /// times among the kept turns, the most missed first (ties by name), at
    /// most [`MAX_LEARNED`].
    pub fn groups(&self) -> Vec<GroupId> {
        let mut learned: Vec<(&GroupId, usize)> = self
            .misses
            .iter()
            .filter(|(_, count)| **count >= MIN_MISSES)
            .map(|(group, count)| (group, *count))
            .collect();
        learned.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        learned
            .into_iter()
            .take(MAX_LEARNED)
            .map(|(group, _)| group.clone())
            .collect()
    }
}

#[cfg(test)]
#[path = "recovery_tests.rs"]
mod tests;
