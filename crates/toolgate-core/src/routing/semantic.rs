//! Semantic evidence for the router: group texts to embed, cosine scores of
//! a query's embedding against the groups', and a blend with the lexical
//! scores. The embeddings come from elsewhere (an embeddings endpoint, a
//! local model): this module only does the arithmetic.

use serde::Deserialize;

use crate::catalog::Catalog;
use crate::name::GroupId;

/// Tool names of a group included in its text, at most.
const NAMED_TOOLS: usize = 40;

/// `[routing.embeddings]`: an OpenAI-compatible embeddings endpoint.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// Base URL (`http://localhost:11434/v1`); `/embeddings` is appended.
    pub base_url: String,
    /// The embedding model.
    pub model: String,
    /// Environment variable holding the key, if the endpoint needs one.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Weight of the semantic scores against the lexical ones, 0 to 1
    /// (default 0.5).
    #[serde(default)]
    pub weight: Option<f64>,
}

/// The text embedded for each group, in `groups` order: name, description
/// and (the first) tool names and descriptions.
pub fn group_texts(catalog: &Catalog, groups: &[GroupId]) -> Vec<String> {
    groups
        .iter()
        .map(|id| {
            let mut text = String::new();
            if let Some(group) = catalog.group(id.as_str()) {
                text.push_str(&format!("{}: {}", group.display_name, group.description));
            }
            for tool in catalog.group_tools(id.as_str()).take(NAMED_TOOLS) {
                text.push_str(&format!("\n{}: {}", tool.name, tool.one_line_description()));
            }
            text
        })
        .collect()
}

/// Cosine similarity of `query` with each group vector, negative values
/// clamped to 0 (no evidence).
pub fn cosine_scores(query: &[f32], groups: &[Vec<f32>]) -> Vec<f64> {
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let query_norm = norm(query);
    groups
        .iter()
        .map(|group| {
            let denominator = query_norm * norm(group);
            if denominator == 0.0 || group.len() != query.len() {
                return 0.0;
            }
            let dot: f64 = query
                .iter()
                .zip(group)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            (dot / denominator).max(0.0)
        })
        .collect()
}

/// `(1 - weight) * lexical + weight * semantic`, each first scaled by its
/// best score so neither scale dominates.
pub fn blend(lexical: &[f64], semantic: &[f64], weight: f64) -> Vec<f64> {
    let scaled = |scores: &[f64]| {
        let top = scores.iter().copied().fold(0.0_f64, f64::max);
        scores
            .iter()
            .map(|s| if top > 0.0 { s / top } else { 0.0 })
            .collect::<Vec<f64>>()
    };
    let weight = weight.clamp(0.0, 1.0);
    scaled(lexical)
        .into_iter()
        .zip(scaled(semantic))
        .map(|(l, s)| (1.0 - weight) * l + weight * s)
        .collect()
}

#[cfg(test)]
#[path = "semantic_tests.rs"]
mod tests;
