use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_llm::scripted::{ScriptedServer, Wire};
use toolgate_llm::{
    ApiKey, ChatMessage, ChatModel, ChatRequest, ChatResponse, LlmError, ProviderConfig,
    ProviderKind, StreamEvent, ToolCall, ToolSpec, connect,
};

pub(crate) const KEY: &str = "sk-test-key-0123456789";

pub(crate) fn config(server: &ScriptedServer, wire: Wire, stream: bool) -> ProviderConfig {
    let (kind, base) = match wire {
        Wire::OpenAi => (ProviderKind::OpenAi, format!("{}/v1", server.url())),
        Wire::Anthropic => (ProviderKind::Anthropic, server.url()),
    };
    let mut config = ProviderConfig::new(kind, base, "test-model");
    config.stream = stream;
    config.api_key = Some(ApiKey::new(KEY));
    config.key_source = "the environment variable TEST_KEY".to_owned();
    config.retry.initial_backoff = Duration::from_millis(10);
    config
}

pub(crate) fn model(server: &ScriptedServer, wire: Wire, stream: bool) -> Arc<dyn ChatModel> {
    connect(config(server, wire, stream)).unwrap()
}

/// Calls the model, collecting its events.
pub(crate) async fn complete(
    model: &dyn ChatModel,
    request: &ChatRequest,
) -> (Result<ChatResponse, LlmError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let result = model
        .complete(request, &mut |event| events.push(event))
        .await;
    (result, events)
}

/// A conversation with every message kind: system, user, an assistant
/// message with two parallel calls, their results (one failed), a user
/// follow-up, and two tools.
pub(crate) fn conversation() -> ChatRequest {
    ChatRequest {
        system: "Be brief.".to_owned(),
        messages: vec![
            ChatMessage::User("What time is it in Paris and in Atlantis?".to_owned()),
            ChatMessage::Assistant {
                text: "Checking both.".to_owned(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_1".to_owned(),
                        name: "time_now".to_owned(),
                        arguments: r#"{"timezone":"Europe/Paris"}"#.to_owned(),
                    },
                    ToolCall {
                        id: "call_2".to_owned(),
                        name: "time_now".to_owned(),
                        arguments: r#"{"timezone":"Atlantis"}"#.to_owned(),
                    },
                ],
            },
            ChatMessage::ToolResult {
                call_id: "call_1".to_owned(),
                name: "time_now".to_owned(),
                content: "10:00".to_owned(),
                is_error: false,
                next_call: None,
            },
            ChatMessage::ToolResult {
                call_id: "call_2".to_owned(),
                name: "time_now".to_owned(),
                content: "unknown time zone".to_owned(),
                is_error: true,
                next_call: None,
            },
            ChatMessage::User("And in Tokyo?".to_owned()),
        ],
        tools: vec![
            ToolSpec {
                name: "time_now".to_owned(),
                description: "Current time".to_owned(),
                input_schema: json!({"type": "object", "properties": {"timezone": {"type": "string"}}}),
            },
            ToolSpec {
                name: "load_tool_group".to_owned(),
                description: "Load a group".to_owned(),
                input_schema: json!({"type": "object", "properties": {"group_name": {"type": "string"}}, "required": ["group_name"]}),
            },
        ],
    }
}
