//! [`LexicalScorer`]: the router's words-only scorer, and the half of the
//! hybrid scorer that reads words. Two BM25 indexes, one over the tools and
//! one over the groups' own documents; a turn's words weigh more than
//! earlier turns' ([`query_terms`]).

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::bm25::Bm25;
use crate::routing::config::Taxonomy;
use crate::routing::fusion::group_scores;
use crate::routing::scorer::{Evidence, GroupScorer, NAMED_PER_GROUP, ToolScore};
use crate::routing::text::{terms, tool_terms};

/// Weight of earlier turns' words against the current turn's.
const CONTEXT_WEIGHT: f64 = 0.4;

/// Lexical evidence per group, from two BM25 indexes: one over each tool
/// (its name, description and parameters: [`tool_terms`]), one over each group (its name, display
/// name and description, and the example utterances of the intents that
/// need it). A group scores its best tool plus its own document: one
/// well-matching tool says more than many loosely matching ones, and a large
/// group does not win by size.
#[derive(Clone, Debug)]
pub struct LexicalScorer {
    groups: Vec<GroupId>,
    group_index: Bm25,
    tool_index: Bm25,
    /// Group (index into `groups`) of each tool document.
    tool_group: Vec<usize>,
    /// Name of each tool document.
    tool_names: Vec<ToolName>,
}

/// Weight of a group's own document against its best tool.
const GROUP_DOCUMENT_WEIGHT: f64 = 0.5;

impl LexicalScorer {
    /// Indexes `catalog`'s groups and grouped tools.
    pub fn new(catalog: &Catalog, taxonomy: &Taxonomy) -> Self {
        let mut groups = Vec::new();
        let mut group_documents = Vec::new();
        let mut tool_documents = Vec::new();
        let mut tool_group = Vec::new();
        let mut tool_names = Vec::new();
        let weighted =
            |words: &str, weight: f64| terms(words).into_iter().map(move |t| (t, weight));
        for group in catalog.groups() {
            let mut text: Vec<(String, f64)> = Vec::new();
            text.extend(weighted(group.id.as_str(), 2.0));
            text.extend(weighted(&group.display_name, 1.0));
            text.extend(weighted(&group.description, 1.0));
            for intent in &taxonomy.intents {
                if intent.groups.contains(&group.id) {
                    text.extend(weighted(&intent.name, 2.0));
                    for example in &intent.examples {
                        text.extend(weighted(example, 1.0));
                    }
                }
            }
            for tool in catalog.group_tools(group.id.as_str()) {
                tool_documents.push(tool_terms(tool));
                tool_group.push(groups.len());
                tool_names.push(tool.name.clone());
            }
            groups.push(group.id.clone());
            group_documents.push(text);
        }
        Self {
            groups,
            group_index: Bm25::new(group_documents),
            tool_index: Bm25::new(tool_documents),
            tool_group,
            tool_names,
        }
    }
}

/// A turn's terms weighted 1, and earlier turns' terms weighted less the
/// older they are.
pub fn query_terms(query: &str, context: &[&str]) -> Vec<(String, f64)> {
    let mut weighted: Vec<(String, f64)> = terms(query).into_iter().map(|t| (t, 1.0)).collect();
    for (age, earlier) in context.iter().rev().enumerate() {
        let weight = CONTEXT_WEIGHT / (age as f64 + 1.0);
        weighted.extend(terms(earlier).into_iter().map(|t| (t, weight)));
    }
    weighted
}

impl LexicalScorer {
    /// BM25 of every tool document for weighted query terms, in tool order.
    pub(crate) fn tool_bm25(&self, terms: &[(String, f64)]) -> Vec<f64> {
        self.tool_index.scores(terms)
    }

    /// BM25 of every group document for weighted query terms, in group
    /// order.
    pub(crate) fn group_bm25(&self, terms: &[(String, f64)]) -> Vec<f64> {
        self.group_index.scores(terms)
    }

    /// The group (an index into `groups()`) of each tool, in tool order.
    pub(crate) fn tool_groups(&self) -> &[usize] {
        &self.tool_group
    }

    /// The tools scored, in tool order: each group's tools in catalog
    /// order, groups in catalog order.
    pub fn tool_names(&self) -> &[ToolName] {
        &self.tool_names
    }

    /// Each tool with its score, for the tools with evidence: at most the
    /// [`NAMED_PER_GROUP`] best of each group, which is all a decision or
    /// a search answer shows of one group (and naming every tool of a large
    /// catalog on every turn costs more than scoring it).
    pub(crate) fn named(&self, scores: &[f64]) -> Vec<ToolScore> {
        self.best_of_each_group(scores, NAMED_PER_GROUP)
    }

    /// Each group's score for weighted query `terms` whose tools scored
    /// `tools`: its own document's BM25, weighted, plus its best tool's.
    fn group_scores(&self, terms: &[(String, f64)], tools: &[f64]) -> Vec<f64> {
        let mut scores: Vec<f64> = self
            .group_index
            .scores(terms)
            .into_iter()
            .map(|s| s * GROUP_DOCUMENT_WEIGHT)
            .collect();
        let best = group_scores(tools, &self.tool_group, self.groups.len());
        for (score, tool) in scores.iter_mut().zip(best) {
            *score += tool;
        }
        scores
    }

    /// Every tool with evidence, with its score, in tool order.
    pub(crate) fn every(&self, scores: &[f64]) -> Vec<ToolScore> {
        self.best_of_each_group(scores, usize::MAX)
    }

    /// The `most` best tools with evidence of each group, in tool order.
    fn best_of_each_group(&self, scores: &[f64], most: usize) -> Vec<ToolScore> {
        let mut named = Vec::new();
        let mut start = 0;
        while start < scores.len() {
            let group = self.tool_group[start];
            let end = self.tool_group[start..]
                .iter()
                .position(|g| *g != group)
                .map_or(scores.len(), |offset| start + offset);
            let mut best: Vec<usize> = (start..end).filter(|t| scores[*t] > 0.0).collect();
            if best.len() > most {
                best.select_nth_unstable_by(most, |a, b| {
                    scores[*b].total_cmp(&scores[*a]).then(a.cmp(b))
                });
                best.truncate(most);
                best.sort_unstable();
            }
            named.extend(best.into_iter().map(|tool| ToolScore {
                tool: self.tool_names[tool].clone(),
                group: self.groups[group].clone(),
                score: scores[tool],
            }));
            start = end;
        }
        named
    }
}

impl GroupScorer for LexicalScorer {
    fn scores(&self, query: &str, context: &[&str]) -> Vec<f64> {
        let terms = query_terms(query, context);
        self.group_scores(&terms, &self.tool_index.scores(&terms))
    }

    fn groups(&self) -> &[GroupId] {
        &self.groups
    }

    fn tool_scores(&self, query: &str, context: &[&str]) -> Vec<ToolScore> {
        self.named(&self.tool_index.scores(&query_terms(query, context)))
    }

    fn evidence_of_every_tool(&self, query: &str, context: &[&str]) -> Evidence {
        let terms = query_terms(query, context);
        let tools = self.tool_index.scores(&terms);
        Evidence {
            groups: self.group_scores(&terms, &tools),
            tools: self.every(&tools),
        }
    }
}
