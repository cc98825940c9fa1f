//! Tools first, then groups: each tool's lexical and semantic evidence
//! fused into one score ([`Fusion`]), and a group scored by its best tool
//! ([`group_scores`]).
//!
//! Scoring tools rather than groups keeps the evidence where it is: one
//! tool whose name and parameters match says more than a group description
//! that matches loosely, and the same scores then choose which of a routed
//! group's tools it arrives with.

use serde::Deserialize;

/// How a tool's lexical (BM25) and semantic (cosine) scores become one.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fusion {
    /// BM25 alone.
    Lexical,
    /// Cosine similarity alone (BM25 when there are no vectors).
    Semantic,
    /// Reciprocal rank fusion: `Σ 1 / (k + rank)` over the two rankings
    /// (rank 1 is the best; a tool with no evidence in a ranking gets
    /// nothing from it). Scale-free, so neither score's range matters.
    Rrf {
        /// The rank offset; smaller trusts the top ranks more.
        k: f64,
    },
    /// `(1 - weight) * lexical + weight * semantic`, each first scaled to
    /// 0..1 over the catalog (BM25 by its best score, cosine from its
    /// `floor` to its highest, below the floor as 0).
    Blend {
        /// The semantic share, 0 to 1.
        weight: f64,
        /// Where the cosine's scale starts.
        #[serde(default)]
        floor: CosineFloor,
    },
}

/// Where a blend's cosine scale starts: the cosine that counts as no
/// semantic evidence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CosineFloor {
    /// The catalog's lowest cosine: every other tool keeps some share.
    #[default]
    Lowest,
    /// The catalog's median: the half of the tools least like the turn get
    /// none, so a group of unrelated tools is not carried by the loose
    /// likeness every text has to every other.
    Median,
}

impl CosineFloor {
    /// As `[routing] fusion` spells it: `lowest`, `median`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lowest => "lowest",
            Self::Median => "median",
        }
    }
}

impl Fusion {
    /// The fused score of every tool (in the order given). Without
    /// `semantic` every method is [`Fusion::Lexical`]. 0 means no evidence.
    pub fn fuse(self, lexical: &[f64], semantic: Option<&[f64]>) -> Vec<f64> {
        let Some(semantic) = semantic.filter(|s| s.len() == lexical.len()) else {
            return lexical.to_vec();
        };
        match self {
            Self::Lexical => lexical.to_vec(),
            Self::Semantic => semantic.to_vec(),
            Self::Rrf { k } => {
                let mut fused = vec![0.0; lexical.len()];
                for scores in [lexical, semantic] {
                    for (rank, tool) in ranking(scores).into_iter().enumerate() {
                        fused[tool] += 1.0 / (k + rank as f64 + 1.0);
                    }
                }
                fused
            }
            Self::Blend { weight, floor } => {
                let weight = weight.clamp(0.0, 1.0);
                let top = lexical.iter().copied().fold(0.0_f64, f64::max);
                let (lowest, high) = semantic
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
                        (lo.min(*s), hi.max(*s))
                    });
                let low = match floor {
                    CosineFloor::Lowest => lowest,
                    CosineFloor::Median => median(semantic),
                };
                let span = high - low;
                lexical
                    .iter()
                    .zip(semantic)
                    .map(|(l, s)| {
                        let l = if top > 0.0 { l / top } else { 0.0 };
                        let s = if span > 0.0 {
                            ((s - low) / span).max(0.0)
                        } else {
                            0.0
                        };
                        (1.0 - weight) * l + weight * s
                    })
                    .collect()
            }
        }
    }

    /// Whether it uses both kinds of evidence (RRF, blend).
    pub fn is_fused(self) -> bool {
        matches!(self, Self::Rrf { .. } | Self::Blend { .. })
    }

    /// How the report and `toolgate route` name it: `bm25`, `embedding`,
    /// `rrf(k=10)`, `blend(0.5)`, `blend(0.5, median)`.
    pub fn label(self) -> String {
        match self {
            Self::Lexical => "bm25".to_owned(),
            Self::Semantic => "embedding".to_owned(),
            Self::Rrf { k } => format!("rrf(k={k})"),
            Self::Blend {
                weight,
                floor: CosineFloor::Lowest,
            } => format!("blend({weight})"),
            Self::Blend { weight, floor } => format!("blend({weight}, {})", floor.name()),
        }
    }
}

/// The middle value of `scores` (the upper of the two middle ones of an
/// even count); 0 for none.
fn median(scores: &[f64]) -> f64 {
    if scores.is_empty() {
        return 0.0;
    }
    let mut sorted = scores.to_vec();
    let middle = sorted.len() / 2;
    *sorted.select_nth_unstable_by(middle, f64::total_cmp).1
}

/// Indexes of the tools with positive evidence, best first (ties in index
/// order).
pub fn ranking(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|i| scores[*i] > 0.0).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    order
}

/// Each group's score: its best tool's. `tool_group[t]` is the group (an
/// index below `groups`) of tool `t`.
pub fn group_scores(tools: &[f64], tool_group: &[usize], groups: usize) -> Vec<f64> {
    let mut best = vec![0.0_f64; groups];
    for (score, group) in tools.iter().zip(tool_group) {
        best[*group] = best[*group].max(*score);
    }
    best
}

#[cfg(test)]
#[path = "fusion_tests.rs"]
mod tests;
