//! JSON-RPC messages as the gateway reads them, valid and not, and the fuzz
//! target of their parsing: what a client sends (both transports parse it
//! as rmcp's client message) and what an upstream server answers.
//!
//! Inputs per target: `TOOLGATE_FUZZ_CASES_<TARGET>` or `PROPTEST_CASES`
//! (see `scripts/fuzz`).

use proptest::prelude::*;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use toolgate_fuzz::mutate::{self, JSON_TOKENS};
use toolgate_fuzz::{Target, fuzz, json as arb};

/// Names in MCP messages and in the gateway's tools.
pub(crate) const MESSAGE_KEYS: &[&str] = &[
    "jsonrpc",
    "2.0",
    "id",
    "method",
    "params",
    "result",
    "error",
    "code",
    "message",
    "data",
    "_meta",
    "progressToken",
    "name",
    "arguments",
    "group_name",
    "time",
    "files",
    "load_tool_group",
    "unload_tool_group",
    "call_tool",
    "time_now",
    "timezone",
    "files_read",
    "path",
    "tool_name",
    "protocolVersion",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "capabilities",
    "clientInfo",
    "version",
    "cursor",
    "uri",
    "level",
    "ref",
    "argument",
    "value",
    "requestId",
    "reason",
    "tools/call",
    "tools/list",
    "initialize",
    "ping",
    "notifications/cancelled",
    "notifications/initialized",
    "resources/read",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// Valid client messages of every kind the gateway answers, as JSON.
pub(crate) fn client_messages() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}}, "clientInfo": {"name": "fuzz", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "0"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "load_tool_group", "arguments": {"group_name": "time"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "unload_tool_group", "arguments": {"group_name": "time"}}}),
        json!({"jsonrpc": "2.0", "id": "six", "method": "tools/call", "params": {"name": "call_tool", "arguments": {"tool_name": "time_now", "arguments": {"timezone": "UTC"}}, "_meta": {"progressToken": 6}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "time_now", "arguments": {"timezone": "Europe/Paris"}}}),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "files_read", "arguments": {"path": "notes.txt"}}}),
        json!({"jsonrpc": "2.0", "id": 9, "method": "resources/list"}),
        json!({"jsonrpc": "2.0", "id": 10, "method": "resources/templates/list"}),
        json!({"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": {"uri": "file:///notes.txt"}}),
        json!({"jsonrpc": "2.0", "id": 12, "method": "resources/subscribe", "params": {"uri": "file:///notes.txt"}}),
        json!({"jsonrpc": "2.0", "id": 13, "method": "prompts/list"}),
        json!({"jsonrpc": "2.0", "id": 14, "method": "prompts/get", "params": {"name": "p", "arguments": {"a": "b"}}}),
        json!({"jsonrpc": "2.0", "id": 15, "method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}}),
        json!({"jsonrpc": "2.0", "id": 16, "method": "logging/setLevel", "params": {"level": "debug"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4, "reason": "bored"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 6, "progress": 1, "total": 2}}),
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}}),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"a": 1}}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "no"}}),
    ]
}

/// Valid server messages (what an upstream answers), as JSON.
fn server_messages() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "echo", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "echo", "description": "Echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}]}}),
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}], "isError": false, "structuredContent": {"a": 1}}}),
        json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad", "data": {"x": 1}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
    ]
}

/// A message text: a valid one mutated as JSON or as text, one made of
/// the names MCP knows, or odd JSON.
pub(crate) fn message_text(seeds: Vec<Value>) -> impl Strategy<Value = String> {
    let texts: Vec<String> = seeds.iter().map(Value::to_string).collect();
    prop_oneof![
        4 => mutate::mutated_value(seeds, MESSAGE_KEYS, 3).prop_map(|v| v.to_string()),
        3 => mutate::mutated_text(texts, JSON_TOKENS, 4),
        1 => arb::object(MESSAGE_KEYS).prop_map(|o| Value::Object(o).to_string()),
        1 => arb::odd_text(),
    ]
}

/// The bytes of a message: its text, or with bytes that are not UTF-8.
pub(crate) fn message_bytes(seeds: Vec<Value>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => message_text(seeds.clone()).prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => (message_text(seeds), any::<usize>(), any::<u8>()).prop_map(
            |(text, at, byte)| {
                let mut bytes = text.into_bytes();
                let at = at % (bytes.len() + 1);
                bytes.insert(at, byte | 0x80);
                bytes
            }
        ),
    ]
}

/// Parses `bytes` as `T` the way rmcp's transports do; a message that
/// parses is written back, and reads back as the same message. A message
/// with a key twice is the exception: rmcp's typed messages refuse the
/// duplicate and fall back to a custom one, which writes the key once and
/// then reads back typed; written once more, it must stay put.
fn parses_and_round_trips<T>(bytes: &[u8]) -> Result<(), TestCaseError>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let Ok(message) = serde_json::from_slice::<T>(bytes) else {
        return Ok(());
    };
    let written = serde_json::to_value(&message).unwrap();
    let again: T = serde_json::from_value(written.clone())
        .map_err(|e| TestCaseError::fail(format!("{e}: {written}")))?;
    let rewritten = serde_json::to_value(&again).unwrap();
    if has_duplicate_keys(bytes) {
        let third: T = serde_json::from_value(rewritten.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&third).unwrap(), rewritten);
    } else {
        prop_assert_eq!(rewritten, written);
    }
    Ok(())
}

/// Whether some object in the JSON text `bytes` has a key twice (which
/// `serde_json::Value` keeps once, silently).
fn has_duplicate_keys(bytes: &[u8]) -> bool {
    use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    /// Deserializes anything, failing on an object with a key twice.
    struct Unique;
    impl<'de> Deserialize<'de> for Unique {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(UniqueVisitor)
        }
    }
    struct UniqueVisitor;
    impl<'de> Visitor<'de> for UniqueVisitor {
        type Value = Unique;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
            let mut keys = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !keys.insert(key) {
                    return Err(serde::de::Error::custom("duplicate key"));
                }
                map.next_value::<Unique>()?;
            }
            Ok(Unique)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
            while seq.next_element::<Unique>()?.is_some() {}
            Ok(Unique)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_unit<E>(self) -> Result<Unique, E> {
            Ok(Unique)
        }
    }
    serde_json::from_slice::<Unique>(bytes).is_err()
        && serde_json::from_slice::<IgnoredAny>(bytes).is_ok()
}

/// Any bytes parse as a client message or fail, never panic; a message
/// that parses round-trips.
#[test]
fn fuzz_jsonrpc_client_message() {
    fuzz(
        Target::new("jsonrpc_client_message", 512),
        message_bytes(client_messages()),
        &[],
        |bytes| parses_and_round_trips::<ClientJsonRpcMessage>(&bytes),
    );
}

/// The same for what an upstream server sends the gateway.
#[test]
fn fuzz_jsonrpc_server_message() {
    fuzz(
        Target::new("jsonrpc_server_message", 512),
        message_bytes(server_messages()),
        &[],
        |bytes| parses_and_round_trips::<ServerJsonRpcMessage>(&bytes),
    );
}
