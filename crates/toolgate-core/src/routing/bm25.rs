//! Okapi BM25 over a fixed set of documents, as an inverted index: a query
//! costs the postings of its terms, not a pass over every document. Sums
//! run in a fixed order (documents as given, query terms sorted), so the
//! same index and query give the same scores to the last bit on every run.

use std::collections::{BTreeMap, HashMap};

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalization.
const B: f64 = 0.75;

/// An index of documents, each a bag of weighted terms.
#[derive(Clone, Debug, Default)]
pub struct Bm25 {
    /// Term -> its postings: (document, weighted frequency), by document.
    postings: HashMap<String, Vec<(u32, f64)>>,
    /// Per document: its length (the sum of its term weights).
    lengths: Vec<f64>,
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
        for (number, document) in documents.into_iter().enumerate() {
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            let mut length = 0.0;
            // Terms in first-seen order, so the length sums in a fixed order.
            let mut frequencies: Vec<(String, f64)> = Vec::new();
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (term, weight) in document {
                length += weight;
                match seen.get(&term) {
                    Some(&slot) => frequencies[slot].1 += weight,
                    None => {
                        seen.insert(term.clone(), frequencies.len());
                        frequencies.push((term, weight));
                    }
                }
            }
            for (term, frequency) in frequencies {
                index
                    .postings
                    .entry(term)
                    .or_default()
                    .push((number, frequency));
            }
            index.lengths.push(length);
        }
        let total: f64 = index.lengths.iter().sum();
        index.average_length = if index.lengths.is_empty() {
            0.0
        } else {
            total / index.lengths.len() as f64
        };
        index
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The score of every document for the weighted query terms, in document
    /// order (0 where nothing matches).
    pub fn scores(&self, query: &[(String, f64)]) -> Vec<f64> {
        let n = self.lengths.len() as f64;
        let mut scores = vec![0.0; self.lengths.len()];
        let mut weights: BTreeMap<&str, f64> = BTreeMap::new();
        for (term, weight) in query {
            *weights.entry(term.as_str()).or_default() += weight;
        }
        let average = self.average_length.max(1e-9);
        for (term, weight) in weights {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(document, tf) in postings {
                let document = document as usize;
                let norm = K1 * (1.0 - B + B * self.lengths[document] / average);
                scores[document] += weight * idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }
}

#[cfg(test)]
#[path = "bm25_tests.rs"]
mod tests;
