//! A local sentence-embedding model for toolgate's router, offline:
//! all-MiniLM-L6-v2 (an int8 ONNX export) on ONNX Runtime, with a BERT
//! WordPiece tokenizer of its own and an on-disk [`VectorCache`].
//!
//! ```no_run
//! # fn demo() -> Result<(), toolgate_embed::EmbedError> {
//! use toolgate_embed::{Embedder, VectorCache, model_dir};
//!
//! let dir = model_dir(None, &|name| std::env::var(name).ok()).unwrap_or_default();
//! let embedder = Embedder::load(&dir)?; // the caller routes lexically on an error
//! let mut cache = VectorCache::open(std::path::Path::new("vectors"), &embedder);
//! let tools = cache.embed(&embedder, &["list_files: List the files in a directory"])?;
//! let query = &embedder.embed(&["show me what is in this folder"])?[0];
//! let cosine: f32 = query.iter().zip(&tools[0]).map(|(a, b)| a * b).sum();
//! # let _ = cosine; cache.save()?; Ok(()) }
//! ```
#![deny(missing_docs)]

mod cache;
mod embedder;
mod error;
mod location;
#[cfg(test)]
mod test_model;
pub mod tokenizer;

pub use cache::VectorCache;
pub use embedder::{Embedder, MAX_TOKENS, MODEL_FILE, ModelId, RUNTIME_FILE, TOKENIZER_FILE};
pub use error::EmbedError;
pub use location::{MODEL_DIR_ENV, MODEL_NAME, default_model_dir, model_dir};
