//! A local sentence-embedding model (BERT family: all-MiniLM-L6-v2 and its
//! kin), run on the CPU with candle: mean pooling over the last hidden
//! states, L2-normalized. Loads `config.json`, `tokenizer.json` and
//! `model.safetensors` from one directory.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use crate::error::LlmError;

/// Texts embedded per forward pass.
const BATCH: usize = 32;

/// Tokens kept per text.
const MAX_TOKENS: usize = 256;

/// A loaded model.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder").finish_non_exhaustive()
    }
}

fn model_error(dir: &Path, what: &str, error: impl std::fmt::Display) -> LlmError {
    LlmError::Config(format!("{}: {what}: {error}", dir.display()))
}

impl LocalEmbedder {
    /// Loads the model in `dir`.
    pub fn load(dir: &Path) -> Result<Self, LlmError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| model_error(dir, &format!("reading {name}"), e))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| model_error(dir, "config.json", e))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| model_error(dir, "tokenizer.json", e))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(dir, "tokenizer.json", e))?;
        let device = Device::Cpu;
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_error(dir, "model.safetensors", e))?;
        let model =
            BertModel::load(vb, &config).map_err(|e| model_error(dir, "model.safetensors", e))?;
        Ok(Self {
            model,
            tokenizer,
            device,
        })
    }

    /// One unit vector per text, in order.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(
                self.embed_batch(chunk)
                    .map_err(|e| LlmError::Config(format!("embedding: {e}")))?,
            );
        }
        Ok(out)
    }

    fn embed_batch(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true)?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| -> candle_core::Result<Tensor> {
            let rows: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(f(e).as_slice(), &self.device))
                .collect::<candle_core::Result<_>>()?;
            Tensor::stack(&rows, 0)
        };
        let ids = rows(&|e| e.get_ids().to_vec())?;
        let mask = rows(&|e| e.get_attention_mask().to_vec())?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        let unit = mean.broadcast_div(&norms)?;
        Ok(unit.to_vec2::<f32>()?)
    }
}
