//! Embeddings computed before (by the caller, once per dataset), looked up
//! by text where the gateway's own code embeds.

use std::collections::HashMap;

use toolgate_core::routing::{Embeddings, tool_texts};

use crate::dataset::Dataset;
use crate::keywords::keyword_query;

/// One vector per tool (in [`toolgate_core::routing::tool_texts`] order),
/// one per query and one per query's keyword rewrite (in dataset order).
pub(crate) type Vectors<'a> = (&'a [Vec<f32>], &'a [Vec<f32>], &'a [Vec<f32>]);

/// Vectors computed before, looked up by text.
#[derive(Debug)]
pub(crate) struct Precomputed(HashMap<String, Vec<f32>>);

impl Precomputed {
    /// The dataset's tool texts and query texts with their vectors.
    pub(crate) fn new(dataset: &Dataset, vectors: Vectors<'_>) -> Self {
        let (tools, queries, keywords) = vectors;
        let mut map = HashMap::new();
        for ((_, text), vector) in tool_texts(&dataset.catalog).into_iter().zip(tools) {
            map.insert(text, vector.clone());
        }
        for (query, vector) in dataset.queries.iter().zip(keywords) {
            map.insert(keyword_query(&query.text), vector.clone());
        }
        for (query, vector) in dataset.queries.iter().zip(queries) {
            map.insert(query.text.clone(), vector.clone());
        }
        Self(map)
    }
}

impl Embeddings for Precomputed {
    fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| self.0.get(*text).cloned())
            .collect()
    }

    fn embed_query(&self, text: &str) -> Option<Vec<f32>> {
        self.0.get(text).cloned()
    }
}
