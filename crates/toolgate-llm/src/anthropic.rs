//! Anthropic messages (`POST {base}/v1/messages`).

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::http::{Http, is_event_stream, parse_json, unexpected};
use crate::model::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, EventSink, ModelFuture, StopReason,
    StreamEvent, ToolCall, ToolLimits, Usage, report_whole,
};
use crate::prompted::{Prompted, Schemas, quiet};

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output token limit sent when none is configured (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A chat model behind Anthropic's messages API.
#[derive(Debug)]
pub struct AnthropicChat {
    http: Http,
    url: String,
}

impl AnthropicChat {
    /// A client for `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let url = format!("{}/v1/messages", config.base_url);
        Ok(Self {
            http: Http::new(config)?,
            url,
        })
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = self
            .http
            .key_headers(HeaderName::from_static("x-api-key"), "")?;
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(headers)
    }

    /// The request body.
    pub(crate) fn body(&self, request: &ChatRequest) -> Value {
        let config = self.http.config();
        let mut body = Map::new();
        body.insert("model".into(), config.model.clone().into());
        body.insert(
            "max_tokens".into(),
            config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
        );
        if !request.system.is_empty() {
            body.insert("system".into(), request.system.clone().into());
        }
        body.insert("messages".into(), messages(&request.messages).into());
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema})
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        body.insert("stream".into(), config.stream.into());
        Value::Object(body)
    }

    async fn run(
        &self,
        request: &ChatRequest,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let mode = self.http.config().tool_calls;
        let Some(prompted) = Prompted::new(mode, Schemas::Unsupported, request) else {
            return self.send(request, events).await;
        };
        let raw = self.send(prompted.request(), &mut quiet(events)).await?;
        Ok(prompted.read(raw, events))
    }

    async fn send(
        &self,
        request: &ChatRequest,
        events: EventSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let body = self.body(request);
        let response = self
            .http
            .post(&self.url, self.headers()?, &body, events)
            .await?;
        let url = self.url.as_str();
        if !is_event_stream(&response) {
            let value = self.http.read_json(url, response).await?;
            let answer = parse_message(url, &value)?;
            report_whole(&answer, events);
            return Ok(answer);
        }
        let mut stream = Stream::default();
        let done = self
            .http
            .read_events(url, response, |event| {
                stream.on_event(url, &event.event, &event.data, events)
            })
            .await?;
        stream.finish(url, done)
    }
}

impl ChatModel for AnthropicChat {
    fn provider(&self) -> &str {
        "anthropic"
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

/// The conversation as Anthropic wants it: content blocks, tool results in
/// user messages, and user and assistant strictly alternating (consecutive
/// user-side messages are merged).
fn messages(conversation: &[ChatMessage]) -> Vec<Value> {
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            ChatMessage::User(text) => ("user", vec![json!({"type": "text", "text": text})]),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = match serde_json::from_str::<Value>(&call.arguments) {
                        Ok(object @ Value::Object(_)) => object,
                        _ => Value::Object(Map::new()),
                    };
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                ("assistant", blocks)
            }
            ChatMessage::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = true.into();
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A whole (non-streamed) message.
fn parse_message(url: &str, value: &Value) -> Result<ChatResponse, LlmError> {
    if value["type"] == "error" || value.get("error").is_some() {
        return Err(LlmError::Provider {
            url: url.to_owned(),
            message: crate::http::error_message(&value.to_string()),
        });
    }
    let Some(content) = value["content"].as_array() else {
        return Err(unexpected(
            url,
            "response body",
            "no `content` in the message",
            value,
        ));
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(unexpected(
                        url,
                        "response body",
                        "a tool_use block without id or name",
                        block,
                    ));
                };
                tool_calls.push(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: block["input"].to_string(),
                });
            }
            _ => {}
        }
    }
    let mut usage = Usage::default();
    add_usage(&mut usage, &value["usage"]);
    Ok(ChatResponse {
        text,
        tool_calls,
        stop_reason: stop_reason(value["stop_reason"].as_str()),
        usage: value.get("usage").map(|_| usage),
    })
}

/// Adds a `usage` object's figures: input counts every prompt token, cached
/// or not.
fn add_usage(usage: &mut Usage, value: &Value) {
    let field = |name: &str| value[name].as_u64();
    let cached = field("cache_read_input_tokens");
    let input = field("input_tokens").unwrap_or(0)
        + field("cache_creation_input_tokens").unwrap_or(0)
        + cached.unwrap_or(0);
    if input > 0 {
        usage.input_tokens = input;
    }
    if let Some(output) = field("output_tokens") {
        usage.output_tokens = output;
    }
    if cached.is_some() {
        usage.cached_input_tokens = cached;
    }
}

fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("end_turn" | "stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// A streamed message being put together.
#[derive(Debug, Default)]
struct Stream {
    started: bool,
    blocks: BTreeMap<u64, Block>,
    stop_reason: Option<String>,
    usage: Usage,
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

impl Stream {
    /// One event. `Ok(true)` at `message_stop`.
    fn on_event(
        &mut self,
        url: &str,
        name: &str,
        data: &str,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, LlmError> {
        let value = parse_json(url, "stream event", data.as_bytes())?;
        let kind = value["type"].as_str().unwrap_or(name);
        match kind {
            "message_start" => {
                self.started = true;
                add_usage(&mut self.usage, &value["message"]["usage"]);
            }
            "content_block_start" => {
                let index = value["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let block = &value["content_block"];
                let entry = match block["type"].as_str() {
                    Some("text") => {
                        let text = block["text"].as_str().unwrap_or_default().to_owned();
                        if !text.is_empty() {
                            events(StreamEvent::TextDelta(text.clone()));
                        }
                        Block::Text(text)
                    }
                    Some("tool_use") => {
                        let id = block["id"].as_str().unwrap_or_default().to_owned();
                        let name = block["name"].as_str().unwrap_or_default().to_owned();
                        events(StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, entry);
            }
            "content_block_delta" => {
                let index = value["index"].as_u64().unwrap_or(0);
                let delta = &value["delta"];
                match (self.blocks.get_mut(&index), delta["type"].as_str()) {
                    (Some(Block::Text(text)), Some("text_delta")) => {
                        let more = delta["text"].as_str().unwrap_or_default();
                        text.push_str(more);
                        if !more.is_empty() {
                            events(StreamEvent::TextDelta(more.to_owned()));
                        }
                    }
                    (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_owned());
                }
                add_usage(&mut self.usage, &value["usage"]);
            }
            "message_stop" => return Ok(true),
            "error" => {
                return Err(LlmError::Provider {
                    url: url.to_owned(),
                    message: crate::http::error_message(data),
                });
            }
            _ => {}
        }
        Ok(false)
    }

    fn finish(self, url: &str, done: bool) -> Result<ChatResponse, LlmError> {
        if !done {
            return Err(LlmError::TruncatedStream {
                url: url.to_owned(),
                detail: "no message_stop event before the end of the body".to_owned(),
            });
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(more) => text.push_str(&more),
                Block::ToolUse { id, name, json } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: if json.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        json
                    },
                }),
                Block::Other => {}
            }
        }
        Ok(ChatResponse {
            text,
            tool_calls,
            stop_reason: stop_reason(self.stop_reason.as_deref()),
            usage: self.started.then_some(self.usage),
        })
    }
}
