//! OpenAI-compatible embeddings (`POST {base}/embeddings`): OpenAI, Ollama,
//! vLLM, llama.cpp, text-embeddings-inference and most gateways speak it.

use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::http::{Http, unexpected};
use crate::model::StreamEvent;

/// A client for an embeddings endpoint. Uses the configuration's base URL,
/// model, key, timeouts and retries (its `kind` and `stream` are ignored).
#[derive(Debug)]
pub struct EmbeddingsClient {
    http: Http,
    url: String,
}

impl EmbeddingsClient {
    /// A client for `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let url = format!("{}/embeddings", config.base_url);
        Ok(Self {
            http: Http::new(config)?,
            url,
        })
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.http.config().model
    }

    /// One vector per input, in input order. Retries are reported to
    /// `events` like a chat call's.
    pub async fn embed(
        &self,
        inputs: &[String],
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let headers = self.http.key_headers(AUTHORIZATION, "Bearer ")?;
        let body = json!({"model": self.model(), "input": inputs});
        let response = self.http.post(&self.url, headers, &body, events).await?;
        let value = self.http.read_json(&self.url, response).await?;
        self.vectors(&value, inputs.len())
    }

    fn vectors(&self, value: &Value, count: usize) -> Result<Vec<Vec<f32>>, LlmError> {
        let url = self.url.as_str();
        let Some(data) = value["data"].as_array() else {
            return Err(unexpected(url, "response body", "no `data` array", value));
        };
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
        for (position, item) in data.iter().enumerate() {
            let index = item["index"].as_u64().map_or(position, |i| i as usize);
            let Some(numbers) = item["embedding"].as_array() else {
                return Err(unexpected(
                    url,
                    "response body",
                    "an item without an `embedding` array",
                    item,
                ));
            };
            let vector: Option<Vec<f32>> = numbers
                .iter()
                .map(|n| n.as_f64().map(|f| f as f32))
                .collect();
            match (vector, vectors.get_mut(index)) {
                (Some(vector), Some(slot)) => *slot = Some(vector),
                _ => {
                    return Err(unexpected(
                        url,
                        "response body",
                        "an embedding that is not a list of numbers, or an index out of range",
                        item,
                    ));
                }
            }
        }
        let vectors: Option<Vec<Vec<f32>>> = vectors.into_iter().collect();
        let Some(vectors) = vectors else {
            return Err(unexpected(
                url,
                "response body",
                &format!("fewer than the {count} embeddings asked for"),
                value,
            ));
        };
        if vectors
            .windows(2)
            .any(|pair| pair[0].len() != pair[1].len())
        {
            return Err(unexpected(
                url,
                "response body",
                "embeddings of different lengths",
                value,
            ));
        }
        Ok(vectors)
    }
}
