//! From stored history to what a model reads: [`chat_messages`] turns a
//! conversation's messages into provider-neutral [`ChatMessage`]s.
//!
//! The store keeps one row per event (the model's text, each tool call, each
//! result); a provider wants one assistant message carrying its tool calls,
//! followed by one result per call. Calls whose result never arrived (the
//! process died mid-call) get an error result, because providers reject a
//! tool call without one.

use std::collections::HashMap;

use toolgate_core::{
    COMPACTION_SUMMARY_HEADING, HostEvent, LoadedSchemas, Message, MessageKind, NotAvailable,
    ToolStatus,
};
use toolgate_llm::{ChatMessage, NextCall, ToolCall};

/// What the model reads for a call that has no stored result.
pub const INTERRUPTED_RESULT: &str =
    "The tool call did not finish: the agent stopped before its result arrived.";

/// The provider-neutral conversation for `history`, oldest first, as a host
/// that puts loaded schemas in the tool list ([`LoadedSchemas::ToolList`])
/// sends it: [`chat_messages_with`] for that placement.
pub fn chat_messages<'m>(history: impl IntoIterator<Item = &'m Message>) -> Vec<ChatMessage> {
    chat_messages_with(history, LoadedSchemas::ToolList)
}

/// The provider-neutral conversation for `history`, oldest first, as a host
/// that puts loaded schemas where `schemas` says sends it.
///
/// - a compaction summary stands for everything before it: the
///   conversation starts at the last one, as user text;
/// - user messages are user text;
/// - an assistant message and the tool calls stored right after it form one
///   assistant message; its results follow, one per call, in call order;
/// - host messages (`System`) are not sent, except the host's loads that
///   the model reads, as user text like a compaction summary: a routed
///   partial load (its text is the model's only news that the group has
///   more tools than it was given) and, with [`LoadedSchemas::Conversation`],
///   every load of the host with a text (a router's pre-load, whose text
///   carries the schemas the tool list does not); the changes a meta-tool
///   call made have no text: its result tells the model;
/// - a tool call without an id or name, and a result without a call, are
///   dropped; an assistant message with neither text nor calls is dropped.
pub fn chat_messages_with<'m>(
    history: impl IntoIterator<Item = &'m Message>,
    schemas: LoadedSchemas,
) -> Vec<ChatMessage> {
    let mut history: Vec<&Message> = history.into_iter().collect();
    if let Some(last) = history
        .iter()
        .rposition(|m| m.kind == MessageKind::Compaction)
    {
        history.drain(..last);
    }
    let results: HashMap<&str, &Message> = history
        .iter()
        .filter(|m| m.kind == MessageKind::ToolResult)
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, *m)))
        .collect();
    let mut out = Vec::new();
    let mut index = 0;
    while let Some(message) = history.get(index) {
        index += 1;
        match message.kind {
            MessageKind::User => out.push(ChatMessage::User(message.content.clone())),
            MessageKind::Compaction => out.push(ChatMessage::User(format!(
                "{COMPACTION_SUMMARY_HEADING}\n{}",
                message.content
            ))),
            MessageKind::Assistant | MessageKind::ToolCall => {
                let text = if message.kind == MessageKind::Assistant {
                    message.content.clone()
                } else {
                    index -= 1;
                    String::new()
                };
                let mut tool_calls = Vec::new();
                while let Some(call) = history
                    .get(index)
                    .filter(|m| m.kind == MessageKind::ToolCall)
                {
                    index += 1;
                    if let (Some(id), Some(name)) = (&call.tool_call_id, &call.tool_name) {
                        tool_calls.push(ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: call
                                .tool_input
                                .clone()
                                .filter(|input| !input.trim().is_empty())
                                .unwrap_or_else(|| "{}".to_owned()),
                        });
                    }
                }
                if text.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let replies: Vec<ChatMessage> = tool_calls
                    .iter()
                    .map(|call| result_for(call, results.get(call.id.as_str()).copied()))
                    .collect();
                out.push(ChatMessage::Assistant { text, tool_calls });
                out.extend(replies);
            }
            MessageKind::System if shown_host_load(message, schemas) => {
                out.push(ChatMessage::User(message.content.clone()));
            }
            MessageKind::ToolResult | MessageKind::System => {}
        }
    }
    out
}

/// Whether `message` is a host's load the model reads (see
/// [`chat_messages_with`]).
fn shown_host_load(message: &Message, schemas: LoadedSchemas) -> bool {
    match schemas {
        LoadedSchemas::ToolList => HostEvent::is_read_by_model(message),
        LoadedSchemas::Conversation => {
            !message.content.is_empty()
                && matches!(
                    HostEvent::read(message),
                    Some(Ok(HostEvent::Loaded(_) | HostEvent::ToolsLoaded(..)))
                )
        }
    }
}

fn result_for(call: &ToolCall, stored: Option<&Message>) -> ChatMessage {
    let (content, is_error) = match stored {
        Some(result) => (
            result.content.clone(),
            result.tool_status == Some(ToolStatus::Error),
        ),
        None => (INTERRUPTED_RESULT.to_owned(), true),
    };
    let next_call = is_error.then(|| load_asked(&content)).flatten();
    ChatMessage::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
        next_call,
    }
}

/// The load a failed call's result asks for: a call of a tool not loaded
/// is answered with the hint to load it, which is read back from its text.
fn load_asked(content: &str) -> Option<NextCall> {
    let (name, arguments) = NotAvailable::read(content)?.load_call()?;
    Some(NextCall {
        purpose: "load it".to_owned(),
        name: name.to_owned(),
        arguments,
    })
}

/// The tool calls in `history` that have no result (the process stopped
/// while they ran).
pub(crate) fn unanswered_calls<'m>(
    history: impl IntoIterator<Item = &'m Message>,
) -> Vec<&'m Message> {
    let history: Vec<&Message> = history.into_iter().collect();
    let answered: std::collections::HashSet<&str> = history
        .iter()
        .filter(|m| m.kind == MessageKind::ToolResult)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    history
        .into_iter()
        .filter(|m| m.kind == MessageKind::ToolCall)
        .filter(|m| {
            m.tool_call_id
                .as_deref()
                .is_some_and(|id| !answered.contains(id))
        })
        .collect()
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
