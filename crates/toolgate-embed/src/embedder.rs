//! [`Embedder`]: all-MiniLM-L6-v2 (an int8 ONNX export) on ONNX Runtime,
//! which is loaded at run time from the model directory, on the CPU.
//!
//! A model directory holds three files:
//! - `model.onnx`: a BERT-family sentence encoder with inputs `input_ids`,
//!   `attention_mask`, `token_type_ids` and the last hidden states as its
//!   first output;
//! - `tokenizer.json`: its BERT uncased WordPiece tokenizer;
//! - `libonnxruntime.so`: ONNX Runtime 1.22 or later (the pinned copy comes
//!   from the PyPI `onnxruntime` wheel). It is loaded once per process, from
//!   the first model directory loaded.
//!
//! A text's vector is the mean of its tokens' last hidden states (padding
//! left out), L2-normalised, as sentence-transformers computes it. Texts are
//! embedded in batches padded to their longest text. The int8 export
//! quantizes activations per batch, so a vector can move very slightly
//! (cosine above 0.999) with the texts batched beside it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use ort::session::Session;
use ort::value::Tensor;
use sha2::{Digest, Sha256};

use crate::error::EmbedError;
use crate::tokenizer::WordPiece;

/// The model file.
pub const MODEL_FILE: &str = "model.onnx";
/// The tokenizer file.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The ONNX Runtime library file.
pub const RUNTIME_FILE: &str = "libonnxruntime.so";

/// Tokens kept per text, `[CLS]` and `[SEP]` included (sentence-transformers'
/// `max_seq_length` for all-MiniLM-L6-v2).
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model at once.
const BATCH: usize = 32;

/// Intra-op threads at most (the model is small; more threads only contend).
const MAX_THREADS: usize = 4;

/// A stable identity of a model: the SHA-256 of its model and tokenizer
/// files. Cached vectors are valid for one identity only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelId(pub [u8; 32]);

impl ModelId {
    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A loaded sentence-embedding model.
#[derive(Debug)]
pub struct Embedder {
    dir: PathBuf,
    tokenizer: WordPiece,
    session: Mutex<Session>,
    id: ModelId,
    dimension: usize,
}

impl Embedder {
    /// Loads the model in `dir`. A missing directory or file is an error
    /// naming it ([`EmbedError::NoModelDir`], [`EmbedError::MissingFile`]).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        if !dir.is_dir() {
            return Err(EmbedError::NoModelDir {
                dir: dir.to_path_buf(),
            });
        }
        for file in [MODEL_FILE, TOKENIZER_FILE, RUNTIME_FILE] {
            if !dir.join(file).is_file() {
                return Err(EmbedError::MissingFile {
                    dir: dir.to_path_buf(),
                    file,
                });
            }
        }
        let tokenizer = WordPiece::from_file(&dir.join(TOKENIZER_FILE))?;
        let model_bytes = read(&dir.join(MODEL_FILE))?;
        let id = {
            let mut hasher = Sha256::new();
            hasher.update(&model_bytes);
            hasher.update(read(&dir.join(TOKENIZER_FILE))?);
            ModelId(hasher.finalize().into())
        };
        let session = open_session(dir, &model_bytes)?;
        let mut embedder = Self {
            dir: dir.to_path_buf(),
            tokenizer,
            session: Mutex::new(session),
            id,
            dimension: 0,
        };
        embedder.dimension = embedder.embed(&[""])?.first().map_or(0, Vec::len);
        if embedder.dimension == 0 {
            return Err(embedder.inference_error("the model gives empty vectors".into()));
        }
        Ok(embedder)
    }

    /// One unit vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let tokens: Vec<Vec<u32>> = texts
            .iter()
            .map(|text| self.tokenizer.encode(text, MAX_TOKENS))
            .collect();
        // Batches of similar lengths pad less; the answer keeps input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|i| tokens[*i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|i| tokens[*i].as_slice()).collect();
            for (i, vector) in chunk.iter().zip(self.run(&batch)?) {
                vectors[*i] = vector;
            }
        }
        Ok(vectors)
    }

    /// The length of the vectors (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The model's identity.
    pub fn id(&self) -> ModelId {
        self.id
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs one batch, padded to its longest text.
    fn run(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows = batch.len();
        let cols = batch.iter().map(|t| t.len()).max().unwrap_or(0);
        if rows == 0 || cols == 0 {
            return Ok(vec![Vec::new(); rows]);
        }
        let mut ids = vec![0_i64; rows * cols];
        let mut mask = vec![0_i64; rows * cols];
        for (row, tokens) in batch.iter().enumerate() {
            for (col, id) in tokens.iter().enumerate() {
                ids[row * cols + col] = i64::from(*id);
                mask[row * cols + col] = 1;
            }
        }
        let shape = [rows, cols];
        let fail = |e: ort::Error| self.inference_error(e.to_string());
        let inputs = ort::inputs![
            "input_ids" => Tensor::from_array((shape, ids)).map_err(fail)?,
            "attention_mask" => Tensor::from_array((shape, mask.clone())).map_err(fail)?,
            "token_type_ids" => Tensor::from_array((shape, vec![0_i64; rows * cols])).map_err(fail)?,
        ];
        let mut session = self
            .session
            .lock()
            .map_err(|_| self.inference_error("an earlier call panicked".into()))?;
        let outputs = session.run(inputs).map_err(fail)?;
        let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(fail)?;
        let dims: Vec<usize> = out_shape
            .iter()
            .map(|d| usize::try_from(*d).unwrap_or(0))
            .collect();
        let dim = match dims.as_slice() {
            [r, c, dim] if *r == rows && *c == cols && *dim > 0 => *dim,
            _ => {
                return Err(self.inference_error(format!(
                    "the model's first output has shape {dims:?}, not [{rows}, {cols}, hidden]"
                )));
            }
        };
        Ok((0..rows)
            .map(|row| {
                let mut sum = vec![0_f32; dim];
                let mut count = 0_f32;
                for col in 0..cols {
                    if mask[row * cols + col] == 1 {
                        count += 1.0;
                        let at = (row * cols + col) * dim;
                        for (s, h) in sum.iter_mut().zip(&hidden[at..at + dim]) {
                            *s += h;
                        }
                    }
                }
                normalize(sum.into_iter().map(|s| s / count).collect())
            })
            .collect())
    }

    fn inference_error(&self, reason: String) -> EmbedError {
        EmbedError::Inference {
            dir: self.dir.clone(),
            reason,
        }
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| EmbedError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// ONNX Runtime, loaded once per process (it allows one environment): from
/// the first model directory loaded; later loads reuse it.
fn runtime_environment(library: &Path) -> Result<Environment, String> {
    static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
    let mut environment = ENVIRONMENT
        .lock()
        .map_err(|_| "an earlier load panicked".to_string())?;
    if let Some(environment) = environment.as_ref() {
        return Ok(environment.clone());
    }
    // No telemetry: an offline router reports to no one.
    let built = ort::init_from(library)
        .map_err(|e| e.to_string())?
        .with_telemetry(false)
        .build()
        .map_err(|e| e.to_string())?;
    *environment = Some(built.clone());
    Ok(built)
}

fn open_session(dir: &Path, model: &[u8]) -> Result<Session, EmbedError> {
    let runtime = dir.join(RUNTIME_FILE);
    let invalid = |path: &Path, e: &dyn std::fmt::Display| EmbedError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let environment = runtime_environment(&runtime).map_err(|e| invalid(&runtime, &e))?;
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_THREADS);
    let model_path = dir.join(MODEL_FILE);
    Session::builder(&environment)
        .map_err(|e| invalid(&model_path, &e))?
        .with_intra_threads(threads)
        .map_err(|e| invalid(&model_path, &e))?
        .with_intra_op_spinning(false)
        .map_err(|e| invalid(&model_path, &e))?
        // No arena and no memory pattern: batches of long texts would
        // otherwise keep up to a gigabyte reserved after they are done.
        .with_memory_pattern(false)
        .map_err(|e| invalid(&model_path, &e))?
        .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
        .map_err(|e| invalid(&model_path, &e))?
        .commit_from_memory(model)
        .map_err(|e| invalid(&model_path, &e))
}

#[cfg(test)]
#[path = "embedder_tests.rs"]
mod tests;
