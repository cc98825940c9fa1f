//! Prompted tool calls on each wire: the tools in the system prompt, the
//! history as text, `response_format` where the wire has it, and the reply
//! read back into calls.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};
use toolgate_llm::{ChatModel, StopReason, StreamEvent, ToolCalls, connect};

use super::support::{complete, config, conversation};

fn model(
    server: &ScriptedServer,
    wire: Wire,
    stream: bool,
    mode: ToolCalls,
) -> std::sync::Arc<dyn ChatModel> {
    let mut config = config(server, wire, stream);
    config.tool_calls = mode;
    connect(config).unwrap()
}

const TOOLS: &str = "# Tools

You can call these tools, one per reply:

## time_now
Current time
Arguments (JSON Schema): {\"type\":\"object\",\"properties\":{\"timezone\":{\"type\":\"string\"}}}

## load_tool_group
Load a group
Arguments (JSON Schema): {\"type\":\"object\",\"properties\":{\"group_name\":{\"type\":\"string\"}},\"required\":[\"group_name\"]}

";

/// The system prompt `prompted` sends for the support conversation.
fn json_system() -> String {
    format!(
        "Be brief.\n\n{TOOLS}Reply with exactly one JSON object and nothing else:
- to call a tool: {{\"tool\": \"<tool name>\", \"arguments\": {{<its arguments>}}}}
- to answer the user when you need no more tools: {{\"answer\": \"<your answer>\"}}
A tool's result comes back in the next message, after \"Result of <tool name>:\"."
    )
}

fn text_system() -> String {
    format!(
        "Be brief.\n\n{TOOLS}To call a tool, reply with only this block:
<tool_call>
{{\"name\": \"<tool name>\", \"arguments\": {{<its arguments>}}}}
</tool_call>
A tool's result comes back in the next message, after \"Result of <tool name>:\". \
When you need no more tools, answer the user in plain text."
    )
}

/// The support conversation's history as the model reads it.
const RESULTS: &str =
    "Result of time_now:\n10:00\n\nError from time_now:\nunknown time zone\n\nAnd in Tokyo?";

fn step_schema() -> Value {
    json!({"anyOf": [
        {"type": "object", "properties": {"tool": {"const": "time_now"},
            "arguments": {"type": "object", "properties": {"timezone": {"type": "string"}}}},
         "required": ["tool", "arguments"], "additionalProperties": false},
        {"type": "object", "properties": {"tool": {"const": "load_tool_group"},
            "arguments": {"type": "object", "properties": {"group_name": {"type": "string"}}, "required": ["group_name"]}},
         "required": ["tool", "arguments"], "additionalProperties": false},
        {"type": "object", "properties": {"answer": {"type": "string"}},
         "required": ["answer"], "additionalProperties": false}
    ]})
}

fn started(events: &[StreamEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallStarted { name, .. } => Some(name.as_str()),
            StreamEvent::TextDelta(_) | StreamEvent::Retrying { .. } => None,
        })
        .collect()
}

fn text(events: &[StreamEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            StreamEvent::ToolCallStarted { .. } | StreamEvent::Retrying { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn prompted_sends_the_tools_in_the_prompt_and_a_step_schema_and_reads_the_step() {
    for stream in [true, false] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(
            ScriptedTurn::text(r#"{"tool": "time_now", "arguments": {"timezone": "Asia/Tokyo"}}"#)
                .with_usage(900, 20)
                .reply(Wire::OpenAi, stream),
        );
        server.push(
            ScriptedTurn::text(r#"{"answer": "It is 18:00 in Tokyo."}"#)
                .reply(Wire::OpenAi, stream),
        );
        let model = model(&server, Wire::OpenAi, stream, ToolCalls::Prompted);

        let (result, events) = complete(model.as_ref(), &conversation()).await;
        let answer = result.unwrap();
        let mut expected = json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": json_system()},
                {"role": "user", "content": "What time is it in Paris and in Atlantis?"},
                {"role": "assistant", "content": "{\"tool\":\"time_now\",\"arguments\":{\"timezone\":\"Europe/Paris\"}}\n{\"tool\":\"time_now\",\"arguments\":{\"timezone\":\"Atlantis\"}}"},
                {"role": "user", "content": RESULTS}
            ],
            "stream": stream,
            "response_format": {"type": "json_schema", "json_schema": {"name": "step", "schema": step_schema()}}
        });
        if stream {
            expected["stream_options"] = json!({"include_usage": true});
        }
        assert_eq!(server.requests()[0].body, expected, "stream={stream}");
        assert_eq!(answer.text, "");
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(answer.usage.map(|u| u.input_tokens), Some(900));
        let [call] = answer.tool_calls.as_slice() else {
            panic!("one call: {answer:?}");
        };
        assert_eq!(
            (call.name.as_str(), call.arguments.as_str()),
            ("time_now", r#"{"timezone":"Asia/Tokyo"}"#)
        );
        assert!(call.id.starts_with("call_"), "{}", call.id);
        // The raw JSON is never shown; the call is announced once.
        assert_eq!(started(&events), ["time_now"]);
        assert!(text(&events).is_empty(), "{events:?}");

        let (result, events) = complete(model.as_ref(), &conversation()).await;
        let answer = result.unwrap();
        assert_eq!(answer.text, "It is 18:00 in Tokyo.");
        assert!(answer.tool_calls.is_empty());
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert_eq!(text(&events), ["It is 18:00 in Tokyo."]);
    }
}

#[tokio::test]
async fn prompted_text_sends_no_schema_and_reads_tagged_calls() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(
        ScriptedTurn::text(
            "<tools>\n{\"name\": \"load_tool_group\", \"arguments\": {\"group_name\": \"time\"}}\n</tools>",
        )
        .reply(Wire::OpenAi, true),
    );
    let model = model(&server, Wire::OpenAi, true, ToolCalls::PromptedText);
    let (result, _) = complete(model.as_ref(), &conversation()).await;
    let answer = result.unwrap();

    let body = &server.requests()[0].body;
    assert_eq!(body.get("response_format"), None);
    assert_eq!(body.get("tools"), None);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": text_system()},
            {"role": "user", "content": "What time is it in Paris and in Atlantis?"},
            {"role": "assistant", "content": "Checking both.\n<tool_call>\n{\"name\":\"time_now\",\"arguments\":{\"timezone\":\"Europe/Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\":\"time_now\",\"arguments\":{\"timezone\":\"Atlantis\"}}\n</tool_call>"},
            {"role": "user", "content": RESULTS}
        ])
    );
    let calls: Vec<(&str, &str)> = answer
        .tool_calls
        .iter()
        .map(|call| (call.name.as_str(), call.arguments.as_str()))
        .collect();
    assert_eq!(calls, [("load_tool_group", r#"{"group_name":"time"}"#)]);
}

#[tokio::test]
async fn prompted_on_the_anthropic_wire_writes_calls_as_text() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(
        ScriptedTurn::text("Loading it.\n<tool_call>\n{\"name\": \"load_tool_group\", \"arguments\": {\"group_name\": \"time\"}}\n</tool_call>")
            .reply(Wire::Anthropic, false),
    );
    let model = model(&server, Wire::Anthropic, false, ToolCalls::Prompted);
    let (result, events) = complete(model.as_ref(), &conversation()).await;
    let answer = result.unwrap();

    let body = &server.requests()[0].body;
    assert_eq!(body["system"], json!(text_system()));
    assert_eq!(body.get("tools"), None);
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [{"type": "text", "text": RESULTS}]})
    );
    assert_eq!(answer.text, "Loading it.");
    assert_eq!(answer.tool_calls[0].name, "load_tool_group");
    assert_eq!(answer.stop_reason, StopReason::ToolUse);
    assert_eq!(text(&events), ["Loading it."]);
    assert_eq!(started(&events), ["load_tool_group"]);
}

#[tokio::test]
async fn the_ids_of_prompted_calls_differ_from_call_to_call() {
    let server = ScriptedServer::start().await.unwrap();
    let call = ScriptedTurn::text(r#"{"tool": "time_now", "arguments": {}}"#);
    server.push(call.reply(Wire::OpenAi, false));
    server.push(call.reply(Wire::OpenAi, false));
    let model = model(&server, Wire::OpenAi, false, ToolCalls::Prompted);
    let (first, _) = complete(model.as_ref(), &conversation()).await;
    let (second, _) = complete(model.as_ref(), &conversation()).await;
    assert_ne!(
        first.unwrap().tool_calls[0].id,
        second.unwrap().tool_calls[0].id
    );
}

/// The support conversation, its failed call's result asking for a load.
fn conversation_with_next_call() -> toolgate_llm::ChatRequest {
    let mut request = conversation();
    for message in &mut request.messages {
        if let toolgate_llm::ChatMessage::ToolResult {
            is_error: true,
            next_call,
            ..
        } = message
        {
            *next_call = Some(toolgate_llm::NextCall {
                purpose: "load it".to_owned(),
                name: "load_tool_group".to_owned(),
                arguments: json!({"group_name": "time", "tools": ["time_now"]}),
            });
        }
    }
    request
}

#[tokio::test]
async fn a_result_asking_for_a_call_shows_free_text_models_the_block_to_reply_with() {
    let asked = "Error from time_now:\nunknown time zone\n\nTo load it, reply with only this \
                 block:\n<tool_call>\n{\"name\":\"load_tool_group\",\"arguments\":{\"group_name\":\
                 \"time\",\"tools\":[\"time_now\"]}}\n</tool_call>";
    let expected = format!("Result of time_now:\n10:00\n\n{asked}\n\nAnd in Tokyo?");
    // Free text: the block follows the words; a JSON step, or a native
    // call, follows the words alone.
    for (mode, content) in [
        (ToolCalls::PromptedText, expected.as_str()),
        (ToolCalls::Prompted, RESULTS),
    ] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(ScriptedTurn::text("{\"answer\": \"ok\"}").reply(Wire::OpenAi, false));
        let model = model(&server, Wire::OpenAi, false, mode);
        complete(model.as_ref(), &conversation_with_next_call())
            .await
            .0
            .unwrap();
        assert_eq!(
            server.requests()[0].body["messages"][3],
            json!({"role": "user", "content": content}),
            "{mode:?}"
        );
    }
    let server = ScriptedServer::start().await.unwrap();
    server.push(ScriptedTurn::text("ok").reply(Wire::OpenAi, false));
    let model = model(&server, Wire::OpenAi, false, ToolCalls::Native);
    complete(model.as_ref(), &conversation_with_next_call())
        .await
        .0
        .unwrap();
    assert_eq!(
        server.requests()[0].body["messages"][4]["content"],
        json!("unknown time zone")
    );
}
