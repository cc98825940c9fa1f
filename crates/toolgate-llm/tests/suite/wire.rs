//! Each provider's request and response on the wire, streamed and whole.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_llm::scripted::{Reply, ScriptedServer, ScriptedTurn, Wire};
use toolgate_llm::{StopReason, StreamEvent, ToolCall, Usage};

use super::support::{KEY, complete, conversation, model};

fn answer() -> ScriptedTurn {
    ScriptedTurn::tool_call("call_3", "time_now", json!({"timezone": "Asia/Tokyo"}))
        .and_tool_call("call_4", "load_tool_group", json!({"group_name": "files"}))
        .and_text("Let me look that up.")
        .with_usage(1234, 56)
}

fn expected_calls() -> Vec<ToolCall> {
    vec![
        ToolCall {
            id: "call_3".to_owned(),
            name: "time_now".to_owned(),
            arguments: r#"{"timezone":"Asia/Tokyo"}"#.to_owned(),
        },
        ToolCall {
            id: "call_4".to_owned(),
            name: "load_tool_group".to_owned(),
            arguments: r#"{"group_name":"files"}"#.to_owned(),
        },
    ]
}

#[tokio::test]
async fn openai_requests_and_answers_match_the_wire_format() {
    for stream in [true, false] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(answer().reply(Wire::OpenAi, stream));
        let model = model(&server, Wire::OpenAi, stream);
        let (result, events) = complete(model.as_ref(), &conversation()).await;
        let answer = result.unwrap();

        let request = &server.requests()[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let mut expected = json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What time is it in Paris and in Atlantis?"},
                {"role": "assistant", "content": "Checking both.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "time_now", "arguments": "{\"timezone\":\"Europe/Paris\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "time_now", "arguments": "{\"timezone\":\"Atlantis\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "10:00"},
                {"role": "tool", "tool_call_id": "call_2", "content": "unknown time zone"},
                {"role": "user", "content": "And in Tokyo?"}
            ],
            "tools": [
                {"type": "function", "function": {"name": "time_now", "description": "Current time",
                    "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}}}},
                {"type": "function", "function": {"name": "load_tool_group", "description": "Load a group",
                    "parameters": {"type": "object", "properties": {"group_name": {"type": "string"}}, "required": ["group_name"]}}}
            ],
            "stream": stream
        });
        if stream {
            expected["stream_options"] = json!({"include_usage": true});
        }
        assert_eq!(request.body, expected, "stream={stream}");

        assert_eq!(answer.text, "Let me look that up.");
        assert_eq!(answer.tool_calls, expected_calls());
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 1234,
                output_tokens: 56,
                cached_input_tokens: None
            })
        );
        check_events(&events, stream);
    }
}

#[tokio::test]
async fn anthropic_requests_and_answers_match_the_wire_format() {
    for stream in [true, false] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(answer().reply(Wire::Anthropic, stream));
        let model = model(&server, Wire::Anthropic, stream);
        let (result, events) = complete(model.as_ref(), &conversation()).await;
        let answer = result.unwrap();

        let request = &server.requests()[0];
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("authorization"), None);
        assert_eq!(
            request.body,
            json!({
                "model": "test-model",
                "max_tokens": 4096,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "What time is it in Paris and in Atlantis?"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Checking both."},
                        {"type": "tool_use", "id": "call_1", "name": "time_now", "input": {"timezone": "Europe/Paris"}},
                        {"type": "tool_use", "id": "call_2", "name": "time_now", "input": {"timezone": "Atlantis"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "10:00"},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "unknown time zone", "is_error": true},
                        {"type": "text", "text": "And in Tokyo?"}
                    ]}
                ],
                "tools": [
                    {"name": "time_now", "description": "Current time",
                     "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}}},
                    {"name": "load_tool_group", "description": "Load a group",
                     "input_schema": {"type": "object", "properties": {"group_name": {"type": "string"}}, "required": ["group_name"]}}
                ],
                "stream": stream
            }),
            "stream={stream}"
        );

        assert_eq!(answer.text, "Let me look that up.");
        assert_eq!(answer.tool_calls, expected_calls());
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(
            answer.usage.map(|u| (u.input_tokens, u.output_tokens)),
            Some((1234, 56))
        );
        check_events(&events, stream);
    }
}

/// Deltas add up to the text; each call is announced once, in order.
fn check_events(events: &[StreamEvent], stream: bool) {
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me look that up.");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
        .count();
    assert_eq!(
        deltas > 1,
        stream,
        "streamed text arrives in pieces: {events:?}"
    );
    let started: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { id, name } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [("call_3", "time_now"), ("call_4", "load_tool_group")]
    );
}

#[tokio::test]
async fn a_plain_answer_ends_the_turn_and_reports_cached_tokens() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(Reply::json(200, json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 768}}
    })));
    let model = model(&server, Wire::OpenAi, false);
    let (result, _) = complete(model.as_ref(), &conversation()).await;
    let answer = result.unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.usage.unwrap().cached_input_tokens, Some(768));

    server.push(Reply::json(200, json!({
        "type": "message", "content": [{"type": "text", "text": "Hi."}], "stop_reason": "max_tokens",
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 300, "output_tokens": 4}
    })));
    let model = super::support::model(&server, Wire::Anthropic, false);
    let (result, _) = complete(model.as_ref(), &conversation()).await;
    let answer = result.unwrap();
    assert_eq!(answer.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        answer.usage,
        Some(Usage {
            input_tokens: 330,
            output_tokens: 4,
            cached_input_tokens: Some(300)
        })
    );
}

#[tokio::test]
async fn a_server_without_done_still_ends_cleanly_after_its_finish_reason() {
    let server = ScriptedServer::start().await.unwrap();
    let mut chunks: Vec<String> = vec![
        r#"data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#.to_owned() + "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#
            .to_owned()
            + "\n\n",
    ];
    server.push(Reply::sse(chunks.clone()));
    let model = model(&server, Wire::OpenAi, true);
    let (result, _) = complete(model.as_ref(), &conversation()).await;
    assert_eq!(result.unwrap().text, "Hello");

    // Without the finish reason, the same stream is cut short.
    chunks.pop();
    server.push(Reply::sse(chunks));
    let (result, _) = complete(model.as_ref(), &conversation()).await;
    assert!(
        matches!(result, Err(toolgate_llm::LlmError::TruncatedStream { .. })),
        "{result:?}"
    );
}
