//! The queries every policy is reported on, and their figures from what
//! each saw.

use crate::costs::Seen;
use crate::dataset::Query;
use crate::figures::summary;
use crate::report::PolicyReport;

/// The reported queries (those with a gold group, outside the tuning
/// part), the tuning part's labelled queries, and what every tool costs.
pub(crate) struct Reported<'q> {
    pub(crate) queries: Vec<&'q Query>,
    pub(crate) tuned: Vec<&'q Query>,
    /// Tokens of every tool's schema.
    pub(crate) all: f64,
}

impl<'q> Reported<'q> {
    /// The split of `queries`; `all` tokens for every tool.
    pub(crate) fn new(queries: &'q [Query], all: usize) -> Self {
        let labelled = |q: &&Query| !q.gold_groups.is_empty();
        Self {
            queries: queries
                .iter()
                .filter(|q| !q.tune)
                .filter(labelled)
                .collect(),
            tuned: queries.iter().filter(|q| q.tune).filter(labelled).collect(),
            all: all as f64,
        }
    }

    /// `policy`'s figures from what each reported query saw.
    pub(crate) fn summarize(&self, policy: impl Into<String>, seen: &[Seen]) -> PolicyReport {
        summary(policy.into(), &self.queries, seen, self.all)
    }
}
