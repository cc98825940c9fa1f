//! Okapi BM25 over a fixed set of documents.

use std::collections::HashMap;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalization.
const B: f64 = 0.75;

/// An index of documents, each a bag of terms.
#[derive(Clone, Debug, Default)]
pub struct Bm25 {
    /// Per document: term -> frequency.
    docs: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    /// Term -> number of documents holding it.
    df: HashMap<String, usize>,
    average_length: f64,
}

impl Bm25 {
    /// Indexes `documents`, each given as weighted terms (a term may appear
    /// several times; weights add up).
    pub fn new<I, D>(documents: I) -> Self
    where
        I: IntoIterator<Item = D>,
        D: IntoIterator<Item = (String, f64)>,
    {
        let mut index = Self::default();
        for document in documents {
            let mut frequencies: HashMap<String, f64> = HashMap::new();
            for (term, weight) in document {
                *frequencies.entry(term).or_default() += weight;
            }
            for term in frequencies.keys() {
                *index.df.entry(term.clone()).or_default() += 1;
            }
            index.lengths.push(frequencies.values().sum());
            index.docs.push(frequencies);
        }
        let total: f64 = index.lengths.iter().sum();
        index.average_length = if index.docs.is_empty() {
            0.0
        } else {
            total / index.docs.len() as f64
        };
        index
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The score of every document for the weighted query terms, in document
    /// order (0 where nothing matches).
    pub fn scores(&self, query: &[(String, f64)]) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let mut scores = vec![0.0; self.docs.len()];
        let mut weights: HashMap<&str, f64> = HashMap::new();
        for (term, weight) in query {
            *weights.entry(term.as_str()).or_default() += weight;
        }
        for (term, weight) in weights {
            let Some(&df) = self.df.get(term) else {
                continue;
            };
            let idf = (1.0 + (n - df as f64 + 0.5) / (df as f64 + 0.5)).ln();
            for (index, doc) in self.docs.iter().enumerate() {
                if let Some(&tf) = doc.get(term) {
                    let norm =
                        K1 * (1.0 - B + B * self.lengths[index] / self.average_length.max(1e-9));
                    scores[index] += weight * idf * tf * (K1 + 1.0) / (tf + norm);
                }
            }
        }
        scores
    }
}

#[cfg(test)]
#[path = "bm25_tests.rs"]
mod tests;
