//! Prompted tool calls, for models that have no native tool calling, or
//! whose server does not turn their calls into `tool_calls` (small local
//! models served by llama.cpp, Ollama or vLLM often write a call as text).
//!
//! The request is rewritten before the provider renders it: the tools are
//! described in the system prompt, the history's calls become the text the
//! model would have written and their results become user messages, and no
//! `tools` parameter is sent. The reply is then read back into calls by
//! [`reader`], leniently, whichever form it takes. With
//! [`ToolCalls::Prompted`] on the OpenAI wire, the reply is also constrained
//! by `response_format`: a JSON schema allowing one call of a listed tool,
//! with that tool's arguments, or an answer; servers that implement it with a
//! grammar (llama.cpp, Ollama, vLLM) make the model write one of those.
//!
//! The provider is unchanged otherwise: one rewrite in, one read out.

mod reader;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::config::ToolCalls;
use crate::model::{
    ChatMessage, ChatRequest, ChatResponse, EventSink, StopReason, StreamEvent, ToolCall, ToolSpec,
    report_whole,
};

/// What opens a tool's result in the rewritten conversation (an error
/// opens with "Error from").
const RESULT_LABEL: &str = "Result of";

/// How the prompt asks for a call in free text, after what the call does
/// ("To call a tool, ..."). Small models echo it, adapted, before their
/// calls ("To call pdf_info on a.pdf, reply with only this block:"); the
/// echo is kept as their text, because it is what they read back and follow
/// on the next step (without it the local model imitated a result instead).
const REPLY_WITH_BLOCK: &str = "reply with only this block:";

/// How the model writes a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// One JSON object: `{"tool": ..., "arguments": ...}` or `{"answer": ...}`.
    Json,
    /// Free text with `<tool_call>` blocks.
    Text,
}

/// Whether the wire can constrain a reply to a JSON schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schemas {
    /// OpenAI's `response_format`.
    ResponseFormat,
    /// No way to.
    Unsupported,
}

/// One request rewritten for prompted tool calls, and how to read its reply.
#[derive(Debug)]
pub(crate) struct Prompted {
    request: ChatRequest,
    response_format: Option<Value>,
    tool_names: Vec<String>,
}

impl Prompted {
    /// The rewrite of `request` under `mode`; `None` for native calls.
    pub(crate) fn new(mode: ToolCalls, schemas: Schemas, request: &ChatRequest) -> Option<Self> {
        let style = match (mode, schemas) {
            (ToolCalls::Native, _) => return None,
            (ToolCalls::Prompted, Schemas::ResponseFormat) => Style::Json,
            (ToolCalls::Prompted, Schemas::Unsupported) | (ToolCalls::PromptedText, _) => {
                Style::Text
            }
        };
        let mut system = request.system.clone();
        if !request.tools.is_empty() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&tool_section(style, &request.tools));
        }
        let response_format = (style == Style::Json && !request.tools.is_empty()).then(|| {
            json!({"type": "json_schema",
                   "json_schema": {"name": "step", "schema": step_schema(&request.tools)}})
        });
        Some(Self {
            request: ChatRequest {
                system,
                messages: flatten(style, &request.messages),
                tools: Vec::new(),
            },
            response_format,
            tool_names: request.tools.iter().map(|tool| tool.name.clone()).collect(),
        })
    }

    /// What the provider sends instead.
    pub(crate) fn request(&self) -> &ChatRequest {
        &self.request
    }

    /// The `response_format` to send, if any.
    pub(crate) fn response_format(&self) -> Option<&Value> {
        self.response_format.as_ref()
    }

    /// The provider's answer to [`Self::request`] read for calls, which are
    /// reported to `events` with the answer's text, as a whole answer is.
    /// The raw reply's text is not shown while it streams (see [`quiet`]).
    pub(crate) fn read(&self, raw: ChatResponse, events: EventSink<'_>) -> ChatResponse {
        if self.tool_names.is_empty() {
            // No tools offered: whatever the model wrote is its answer.
            report_whole(&raw, events);
            return raw;
        }
        let step = reader::read(&raw.text, &self.tool_names);
        let tool_calls: Vec<ToolCall> = step
            .calls
            .into_iter()
            .map(|(name, arguments)| ToolCall {
                id: call_id(),
                name,
                arguments,
            })
            .collect();
        let answer = ChatResponse {
            text: step.text,
            stop_reason: if tool_calls.is_empty() {
                raw.stop_reason
            } else {
                StopReason::ToolUse
            },
            tool_calls,
            usage: raw.usage,
        };
        report_whole(&answer, events);
        answer
    }
}

/// `events` without the text deltas: a prompted reply's raw text (JSON, or
/// calls in tags) is shown once read, not as it streams.
pub(crate) fn quiet<'a>(events: EventSink<'a>) -> impl FnMut(StreamEvent) + Send + use<'a> {
    move |event| {
        if !matches!(event, StreamEvent::TextDelta(_)) {
            events(event);
        }
    }
}

/// A call id unique in the process and across runs: the model never sees
/// it, the caller stores results by it.
fn call_id() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros());
    format!("call_{now:x}_{count}")
}

/// The system prompt's part about the tools.
fn tool_section(style: Style, tools: &[ToolSpec]) -> String {
    let mut section = String::from("# Tools\n\nYou can call these tools, one per reply:\n");
    for tool in tools {
        section.push_str(&format!(
            "\n## {}\n{}\nArguments (JSON Schema): {}\n",
            tool.name,
            tool.description.trim(),
            tool.input_schema
        ));
    }
    section.push('\n');
    match style {
        Style::Json => section.push_str(
            "Reply with exactly one JSON object and nothing else:\n\
             - to call a tool: {\"tool\": \"<tool name>\", \"arguments\": {<its arguments>}}\n\
             - to answer the user when you need no more tools: {\"answer\": \"<your answer>\"}\n\
             A tool's result comes back in the next message, after \"Result of <tool name>:\".",
        ),
        Style::Text => section.push_str(&format!(
            "To call a tool, {REPLY_WITH_BLOCK}\n\
             <tool_call>\n{{\"name\": \"<tool name>\", \"arguments\": {{<its arguments>}}}}\n</tool_call>\n\
             A tool's result comes back in the next message, after \"{RESULT_LABEL} <tool name>:\". \
             When you need no more tools, answer the user in plain text."
        )),
    }
    section
}

/// The JSON schema of one step: a call of one of `tools` with its
/// arguments, or an answer.
fn step_schema(tools: &[ToolSpec]) -> Value {
    let mut steps: Vec<Value> = tools
        .iter()
        .map(|tool| {
            // A reference points into the tool's own schema, which is not
            // the root here: such arguments are left free.
            let arguments = if tool.input_schema.is_object()
                && !tool.input_schema.to_string().contains("\"$ref\"")
            {
                tool.input_schema.clone()
            } else {
                json!({"type": "object"})
            };
            json!({"type": "object",
                   "properties": {"tool": {"const": tool.name}, "arguments": arguments},
                   "required": ["tool", "arguments"], "additionalProperties": false})
        })
        .collect();
    steps.push(
        json!({"type": "object", "properties": {"answer": {"type": "string"}},
                      "required": ["answer"], "additionalProperties": false}),
    );
    json!({"anyOf": steps})
}

/// The conversation as plain user and assistant messages: a call becomes
/// what the model writes for it, results become a user message, and
/// consecutive messages of one side are merged.
fn flatten(style: Style, messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    for message in messages {
        match message {
            ChatMessage::User(text) => push_user(&mut out, text.clone()),
            ChatMessage::ToolResult {
                name,
                content,
                is_error,
                next_call,
                ..
            } => {
                let label = if *is_error {
                    "Error from"
                } else {
                    RESULT_LABEL
                };
                let mut text = format!("{label} {name}:\n{content}");
                // Held to a JSON step, a model follows the content's words;
                // writing free text, it relays them to the user unless it is
                // shown the reply to make.
                if let (Style::Text, Some(next)) = (style, next_call) {
                    text.push_str(&format!(
                        "\n\nTo {}, {REPLY_WITH_BLOCK}\n{}",
                        next.purpose,
                        text_call(&next.name, &next.arguments)
                    ));
                }
                push_user(&mut out, text);
            }
            ChatMessage::Assistant { text, tool_calls } => {
                let mut parts: Vec<String> = Vec::new();
                match style {
                    Style::Json if tool_calls.is_empty() => {
                        parts.push(json!({"answer": text}).to_string());
                    }
                    Style::Json => {}
                    Style::Text if !text.is_empty() => parts.push(text.clone()),
                    Style::Text => {}
                }
                for call in tool_calls {
                    let arguments = serde_json::from_str::<Value>(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    parts.push(match style {
                        Style::Json => {
                            json!({"tool": call.name, "arguments": arguments}).to_string()
                        }
                        Style::Text => text_call(&call.name, &arguments),
                    });
                }
                let text = parts.join("\n");
                match out.last_mut() {
                    Some(ChatMessage::Assistant { text: last, .. }) => {
                        last.push('\n');
                        last.push_str(&text);
                    }
                    _ => out.push(ChatMessage::Assistant {
                        text,
                        tool_calls: Vec::new(),
                    }),
                }
            }
        }
    }
    out
}

/// A call as a model writing free text writes it.
fn text_call(name: &str, arguments: &Value) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

fn push_user(out: &mut Vec<ChatMessage>, text: String) {
    match out.last_mut() {
        Some(ChatMessage::User(last)) => {
            last.push_str("\n\n");
            last.push_str(&text);
        }
        _ => out.push(ChatMessage::User(text)),
    }
}
