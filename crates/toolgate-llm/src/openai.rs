//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): one
//! client for OpenAI, Ollama, vLLM, the llama.cpp server and OpenRouter.

use std::collections::BTreeMap;

use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::{Map, Value, json};

use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::http::{Http, is_event_stream, parse_json, unexpected};
use crate::model::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, EventSink, ModelFuture, StopReason,
    StreamEvent, ToolCall, ToolLimits, Usage, report_whole,
};
use crate::prompted::{Prompted, Schemas, quiet};

/// A chat model behind an OpenAI-compatible API.
#[derive(Debug)]
pub struct OpenAiChat {
    http: Http,
    url: String,
}

impl OpenAiChat {
    /// A client for `config` (its kind is not checked: any OpenAI-compatible
    /// base URL works).
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let url = format!("{}/chat/completions", config.base_url);
        Ok(Self {
            http: Http::new(config)?,
            url,
        })
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        self.http.key_headers(AUTHORIZATION, "Bearer ")
    }

    /// The request body.
    pub(crate) fn body(&self, request: &ChatRequest, response_format: Option<&Value>) -> Value {
        let config = self.http.config();
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in &request.messages {
            messages.push(match message {
                ChatMessage::User(text) => json!({"role": "user", "content": text}),
                ChatMessage::Assistant { text, tool_calls } => {
                    let mut assistant = Map::new();
                    assistant.insert("role".into(), "assistant".into());
                    assistant.insert(
                        "content".into(),
                        if text.is_empty() { Value::Null } else { text.as_str().into() },
                    );
                    if !tool_calls.is_empty() {
                        let calls: Vec<Value> = tool_calls
                            .iter()
                            .map(|call| {
                                json!({"id": call.id, "type": "function",
                                       "function": {"name": call.name, "arguments": call.arguments}})
                            })
                            .collect();
                        assistant.insert("tool_calls".into(), calls.into());
                    }
                    Value::Object(assistant)
                }
                ChatMessage::ToolResult {
                    call_id, content, ..
                } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
            });
        }
        let mut body = Map::new();
        body.insert("model".into(), config.model.clone().into());
        body.insert("messages".into(), messages.into());
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.input_schema}})
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        body.insert("stream".into(), config.stream.into());
        if config.stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(max_tokens) = config.max_tokens {
            body.insert("max_tokens".into(), max_tokens.into());
        }
        if let Some(format) = response_format {
            body.insert("response_format".into(), format.clone());
        }
        Value::Object(body)
    }

    async fn run(
        &self,
        request: &ChatRequest,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let mode = self.http.config().tool_calls;
        let Some(prompted) = Prompted::new(mode, Schemas::ResponseFormat, request) else {
            return self.send(request, None, events).await;
        };
        let raw = self
            .send(
                prompted.request(),
                prompted.response_format(),
                &mut quiet(events),
            )
            .await?;
        Ok(prompted.read(raw, events))
    }

    async fn send(
        &self,
        request: &ChatRequest,
        response_format: Option<&Value>,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let body = self.body(request, response_format);
        let response = self
            .http
            .post(&self.url, self.headers()?, &body, events)
            .await?;
        if !is_event_stream(&response) {
            let value = self.http.read_json(&self.url, response).await?;
            let answer = self.parse_response(&value)?;
            report_whole(&answer, events);
            return Ok(answer);
        }
        let mut stream = Stream::default();
        let url = self.url.as_str();
        let done = self
            .http
            .read_events(url, response, |event| {
                stream.on_data(url, &event.data, events)
            })
            .await?;
        stream.finish(url, done)
    }

    fn parse_response(&self, value: &Value) -> Result<ChatResponse, LlmError> {
        let url = self.url.as_str();
        if let Some(message) = provider_error(value) {
            return Err(LlmError::Provider {
                url: url.to_owned(),
                message,
            });
        }
        let Some(choice) = value["choices"].get(0) else {
            return Err(unexpected(
                url,
                "response body",
                "no `choices` in the answer",
                value,
            ));
        };
        let message = &choice["message"];
        let mut tool_calls = Vec::new();
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let (Some(id), Some(name)) = (call["id"].as_str(), call["function"]["name"].as_str())
            else {
                return Err(unexpected(
                    url,
                    "response body",
                    "a tool call without id or name",
                    call,
                ));
            };
            tool_calls.push(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: arguments_text(&call["function"]["arguments"]),
            });
        }
        Ok(ChatResponse {
            text: message["content"].as_str().unwrap_or_default().to_owned(),
            stop_reason: stop_reason(choice["finish_reason"].as_str(), !tool_calls.is_empty()),
            tool_calls,
            usage: usage(&value["usage"]),
        })
    }
}

impl ChatModel for OpenAiChat {
    fn provider(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.http.config().model
    }

    fn tool_limits(&self) -> ToolLimits {
        self.http.config().tool_limits()
    }

    fn context_window(&self) -> usize {
        self.http.config().context_window
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest, events: EventSink<'a>) -> ModelFuture<'a> {
        Box::pin(self.run(request, events))
    }
}

/// A streamed answer being put together.
#[derive(Debug, Default)]
struct Stream {
    text: String,
    /// Tool calls by their `index`.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

impl Stream {
    /// One `data:` payload. `Ok(true)` at `[DONE]`.
    fn on_data(
        &mut self,
        url: &str,
        data: &str,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, LlmError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk = parse_json(url, "stream event", data.as_bytes())?;
        if let Some(message) = provider_error(&chunk) {
            return Err(LlmError::Provider {
                url: url.to_owned(),
                message,
            });
        }
        if let Some(usage) = usage(&chunk["usage"]) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return Ok(false);
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            events(StreamEvent::TextDelta(text.to_owned()));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(self.calls.len() as u64);
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call["id"].as_str().filter(|id| !id.is_empty()) {
                partial.id = id.to_owned();
            }
            if let Some(name) = call["function"]["name"].as_str().filter(|n| !n.is_empty()) {
                partial.name.push_str(name);
            }
            if let Some(arguments) = call["function"]["arguments"].as_str() {
                partial.arguments.push_str(arguments);
            }
            if !partial.announced && !partial.id.is_empty() && !partial.name.is_empty() {
                partial.announced = true;
                events(StreamEvent::ToolCallStarted {
                    id: partial.id.clone(),
                    name: partial.name.clone(),
                });
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(false)
    }

    /// The answer, once the body has ended. A stream cut before any
    /// `finish_reason` is truncated; one that gave a reason but no `[DONE]`
    /// is complete (some servers never send it).
    fn finish(self, url: &str, done: bool) -> Result<ChatResponse, LlmError> {
        if !done && self.finish_reason.is_none() {
            return Err(LlmError::TruncatedStream {
                url: url.to_owned(),
                detail: "no finish_reason and no [DONE] before the end of the body".to_owned(),
            });
        }
        let mut tool_calls = Vec::new();
        for (index, call) in self.calls {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(LlmError::TruncatedStream {
                    url: url.to_owned(),
                    detail: format!("tool call {index} has no id or name"),
                });
            }
            tool_calls.push(ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        Ok(ChatResponse {
            text: self.text,
            stop_reason: stop_reason(self.finish_reason.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: self.usage,
        })
    }
}

fn provider_error(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    Some(
        error["message"]
            .as_str()
            .or(error.as_str())
            .map_or_else(|| error.to_string(), str::to_owned),
    )
}

/// Arguments as text: a string as is, an object (some servers) as JSON.
fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn stop_reason(reason: Option<&str>, called_tools: bool) -> StopReason {
    match reason {
        Some("stop") | None if !called_tools => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        None | Some("stop") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

fn usage(value: &Value) -> Option<Usage> {
    Some(Usage {
        input_tokens: value["prompt_tokens"].as_u64()?,
        output_tokens: value["completion_tokens"].as_u64().unwrap_or(0),
        cached_input_tokens: value["prompt_tokens_details"]["cached_tokens"].as_u64(),
    })
}
