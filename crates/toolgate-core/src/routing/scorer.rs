//! [`GroupScorer`]: what the router asks of a scorer (a raw score per
//! group, and per tool where it has them), and the [`Evidence`] and
//! [`ToolScore`]s it answers with. The lexical and the hybrid scorers
//! implement it; the router and the token budget read what it gives.

use std::fmt;

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::id_finders::IdFinders;
use crate::routing::self_test::ProbeNeeds;

/// Tools of one group a scorer names with their scores, at most.
pub const NAMED_PER_GROUP: usize = 10;

/// Gives every group of a router a raw relevance score for a turn.
pub trait GroupScorer: Send + Sync + fmt::Debug {
    /// Scores in the order of `groups()`; higher is more relevant, 0 is no
    /// evidence at all. `context` holds earlier user turns, newest last.
    fn scores(&self, query: &str, context: &[&str]) -> Vec<f64>;

    /// The groups scored, in score order.
    fn groups(&self) -> &[GroupId];

    /// The grouped tools with any evidence for the turn, with their scores
    /// (in no particular order). A scorer that has no evidence per tool
    /// returns none.
    fn tool_scores(&self, _query: &str, _context: &[&str]) -> Vec<ToolScore> {
        Vec::new()
    }

    /// Whether it scores turns semantically too (an embedding model gave
    /// it the tools' vectors).
    fn is_semantic(&self) -> bool {
        false
    }

    /// The turns a [`SelfTest`](crate::routing::SelfTest) routes, each with what it needs, the
    /// `finders` of `catalog`'s ids among it (`catalog` is the one the
    /// scorer indexed); none from a scorer that has no evidence per tool.
    fn probes(&self, _catalog: &Catalog, _finders: &IdFinders) -> Vec<(Evidence, ProbeNeeds)> {
        Vec::new()
    }

    /// Both at once: group scores and tool scores from one pass over the
    /// turn (a scorer that embeds the turn embeds it once).
    fn evidence(&self, query: &str, context: &[&str]) -> Evidence {
        Evidence {
            groups: self.scores(query, context),
            tools: self.tool_scores(query, context),
        }
    }

    /// [`Self::evidence`] with every tool that has evidence, not only the
    /// [`NAMED_PER_GROUP`] best of each group: what a search ranking tools
    /// across groups reads. A scorer that names every tool already need not
    /// say it again.
    fn evidence_of_every_tool(&self, query: &str, context: &[&str]) -> Evidence {
        self.evidence(query, context)
    }
}

/// What a scorer found for a turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Raw group scores, in [`GroupScorer::groups`] order.
    pub groups: Vec<f64>,
    /// The tools with evidence (in no particular order).
    pub tools: Vec<ToolScore>,
}

impl Evidence {
    /// Its tools best first (ties in the order given), as a decision's
    /// partly loaded groups take them.
    pub fn sort_best_first(&mut self) {
        self.tools.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
}

/// A tool's relevance to a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolScore {
    /// The tool.
    pub tool: ToolName,
    /// Its group.
    pub group: GroupId,
    /// Its raw score; higher is more relevant.
    pub score: f64,
}
