//! A local sentence-embedding model for toolgate's router, offline. So far:
//! the BERT uncased WordPiece tokenizer of all-MiniLM-L6-v2.
#![deny(missing_docs)]

mod error;
#[cfg(test)]
mod test_model;
pub mod tokenizer;

pub use error::EmbedError;
