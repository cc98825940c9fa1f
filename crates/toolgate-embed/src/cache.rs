//! [`VectorCache`]: tool vectors on disk, keyed by the SHA-256 of the text,
//! one file per model so vectors of another model are never mixed in.
//!
//! File `<dir>/<first 16 hex digits of the model id>.vectors`:
//! - header: `TGVEC001`, the 32-byte model id, the dimension (u32 LE);
//! - records: the text's SHA-256 (32 bytes), `dimension` f32 LE, then the
//!   first 8 bytes of the SHA-256 of the two as a check.
//!
//! A file with another header is ignored; a record that fails its check or
//! is cut short is skipped (and recomputed by the caller); reading never
//! fails. [`VectorCache::save`] writes the whole file to a temporary name
//! and renames it, so a crash leaves the old file or the new one.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::embedder::{Embedder, ModelId};
use crate::error::EmbedError;

const MAGIC: &[u8; 8] = b"TGVEC001";
const HEADER: usize = 8 + 32 + 4;
const CHECK: usize = 8;

type Key = [u8; 32];

/// Vectors of one model by text, loaded from and saved to a directory.
#[derive(Debug)]
pub struct VectorCache {
    path: PathBuf,
    model: ModelId,
    dimension: usize,
    vectors: HashMap<Key, Vec<f32>>,
    discarded: usize,
    dirty: bool,
}

impl VectorCache {
    /// Opens `embedder`'s cache in `dir` (see [`VectorCache::open_for`]).
    pub fn open(dir: &Path, embedder: &Embedder) -> Self {
        Self::open_for(dir, embedder.id(), embedder.dimension())
    }

    /// Opens the cache of `model` (vectors of `dimension`) in `dir`; a
    /// missing, unreadable or foreign file gives an empty cache, damaged
    /// records are left out ([`VectorCache::discarded`] counts them).
    pub fn open_for(dir: &Path, model: ModelId, dimension: usize) -> Self {
        let path = dir.join(format!("{}.vectors", &model.to_hex()[..16]));
        let mut cache = Self {
            path,
            model,
            dimension,
            vectors: HashMap::new(),
            discarded: 0,
            dirty: false,
        };
        if let Ok(bytes) = std::fs::read(&cache.path) {
            cache.read(&bytes);
        }
        cache
    }

    fn read(&mut self, bytes: &[u8]) {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC || bytes[8..40] != self.model.0 {
            self.discarded += usize::from(!bytes.is_empty());
            self.dirty = true;
            return;
        }
        let stored_dimension = u32::from_le_bytes([bytes[40], bytes[41], bytes[42], bytes[43]]);
        if usize::try_from(stored_dimension).ok() != Some(self.dimension) {
            self.discarded += 1;
            self.dirty = true;
            return;
        }
        let record = 32 + 4 * self.dimension + CHECK;
        let mut records = bytes[HEADER..].chunks_exact(record);
        for chunk in records.by_ref() {
            let (body, check) = chunk.split_at(32 + 4 * self.dimension);
            if Sha256::digest(body)[..CHECK] != *check {
                self.discarded += 1;
                continue;
            }
            let mut key = [0; 32];
            key.copy_from_slice(&body[..32]);
            let vector = body[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            self.vectors.insert(key, vector);
        }
        if !records.remainder().is_empty() {
            self.discarded += 1;
        }
        self.dirty = self.discarded > 0;
    }

    /// The cached vector of `text`.
    pub fn get(&self, text: &str) -> Option<&[f32]> {
        self.vectors.get(&key(text)).map(Vec::as_slice)
    }

    /// Stores `vector` for `text`; a vector of another length is refused
    /// (`false`).
    pub fn insert(&mut self, text: &str, vector: Vec<f32>) -> bool {
        if vector.len() != self.dimension {
            return false;
        }
        self.vectors.insert(key(text), vector);
        self.dirty = true;
        true
    }

    /// The vectors of `texts`, in order: cached ones as they are, the others
    /// embedded (in one call) and added.
    pub fn embed(
        &mut self,
        embedder: &Embedder,
        texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|text| self.get(text).is_none())
            .collect();
        if !missing.is_empty() {
            for (text, vector) in missing.iter().zip(embedder.embed(&missing)?) {
                self.insert(text, vector);
            }
        }
        Ok(texts
            .iter()
            .map(|text| self.get(text).map(<[f32]>::to_vec).unwrap_or_default())
            .collect())
    }

    /// Writes the cache if anything changed since it was opened or saved,
    /// creating the directory if needed.
    pub fn save(&mut self) -> Result<(), EmbedError> {
        if !self.dirty {
            return Ok(());
        }
        let error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EmbedError::Cache { path, source }
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(error(dir))?;
        }
        let dimension = u32::try_from(self.dimension).unwrap_or(u32::MAX);
        let mut bytes =
            Vec::with_capacity(HEADER + self.vectors.len() * (32 + 4 * self.dimension + CHECK));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.model.0);
        bytes.extend_from_slice(&dimension.to_le_bytes());
        let mut keys: Vec<&Key> = self.vectors.keys().collect();
        keys.sort();
        for key in keys {
            let start = bytes.len();
            bytes.extend_from_slice(key);
            for x in &self.vectors[key] {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            let check = Sha256::digest(&bytes[start..]);
            bytes.extend_from_slice(&check[..CHECK]);
        }
        let temporary = self
            .path
            .with_extension(format!("vectors.tmp-{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()
        };
        write().map_err(error(&temporary))?;
        std::fs::rename(&temporary, &self.path).map_err(error(&self.path))?;
        self.dirty = false;
        Ok(())
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// No vectors held.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Damaged records (or a whole foreign file, counted as one) left out
    /// when the cache was opened.
    pub fn discarded(&self) -> usize {
        self.discarded
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
