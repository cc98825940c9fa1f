//! Fuzz target of `--mcp-config` files (Claude-Desktop-style `mcpServers`
//! JSON): never a panic, an error names the file and says why, and the
//! upstreams a file gives write back to a file that gives the same.
//!
//! Inputs: `TOOLGATE_FUZZ_CASES_MCP_SERVERS_JSON` or `PROPTEST_CASES`.

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_core::GroupVisibility;
use toolgate_fuzz::mutate::{self, JSON_TOKENS};
use toolgate_fuzz::{Kind, Target, fuzz, json as arb};
use toolgate_mcp::config::{UpstreamConfig, UpstreamTransport, parse_mcp_servers_json};
use toolgate_tools::Startup;

/// Keys of an `mcpServers` entry, and values they often take.
const ENTRY_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "eager",
    "core",
    "timeout_seconds",
    "startup_timeout_seconds",
    "disabled",
    "name",
    "description",
    "stdio",
    "http",
    "streamable-http",
    "streamableHttp",
    "sse",
    "npx",
    "http://127.0.0.1:3000/mcp",
    "https://example.com/mcp",
];

/// The `mcpServers` files of the README and the tests, as JSON.
fn seeds() -> Vec<Value> {
    vec![
        json!({"mcpServers": {"toolgate": {"command": "toolgate", "args": ["serve", "--stdio"]}}}),
        json!({"mcpServers": {
            "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "/tmp/m.jsonl"}, "eager": true, "timeout_seconds": 30},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "k"}, "core": true, "startup_timeout_seconds": 2.5},
            "off": {"command": "nope", "disabled": true}
        }}),
        json!({"mcpServers": {"legacy": {"type": "sse", "url": "http://h/sse"}, "git": {"type": "stdio", "command": "uvx", "cwd": "."}}}),
    ]
}

/// The fields of an entry and the kind of value each takes.
const ENTRY_FIELDS: &[(&str, Kind)] = &[
    ("command", Kind::String),
    ("args", Kind::Strings),
    ("env", Kind::StringTable),
    ("cwd", Kind::String),
    ("url", Kind::String),
    ("headers", Kind::StringTable),
    ("type", Kind::String),
    ("eager", Kind::Bool),
    ("core", Kind::Bool),
    ("timeout_seconds", Kind::Number),
    ("startup_timeout_seconds", Kind::Number),
    ("disabled", Kind::Bool),
    ("name", Kind::String),
    ("description", Kind::String),
];

fn file_text() -> impl Strategy<Value = String> {
    let entry = prop_oneof![
        4 => arb::typed_object(ENTRY_FIELDS, ENTRY_KEYS).prop_map(Value::Object),
        1 => arb::object(ENTRY_KEYS).prop_map(Value::Object),
    ];
    let servers = prop::collection::vec((arb::string(&["git", "memory", "a__b"]), entry), 0..5)
        .prop_map(|entries| json!({"mcpServers": Map::from_iter(entries)}));
    let texts: Vec<String> = seeds().iter().map(Value::to_string).collect();
    prop_oneof![
        3 => servers.prop_map(|v| v.to_string()),
        3 => mutate::mutated_value(seeds(), ENTRY_KEYS, 4).prop_map(|v| v.to_string()),
        2 => mutate::mutated_text(texts, JSON_TOKENS, 5),
        1 => arb::odd_text(),
    ]
}

/// The `mcpServers` entry that gives `upstream`.
fn entry(upstream: &UpstreamConfig) -> Value {
    let mut entry = Map::new();
    match &upstream.transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            inherit_env,
            cwd,
        } => {
            entry.insert("command".into(), json!(command));
            entry.insert("args".into(), json!(args));
            entry.insert("env".into(), json!(env));
            entry.insert("inherit_env".into(), json!(inherit_env));
            if let Some(cwd) = cwd {
                entry.insert("cwd".into(), json!(cwd));
            }
        }
        UpstreamTransport::Http { url, headers } => {
            entry.insert("url".into(), json!(url));
            entry.insert("headers".into(), json!(headers));
        }
    }
    if let Some(description) = &upstream.description {
        entry.insert("description".into(), json!(description));
    }
    entry.insert("eager".into(), json!(upstream.startup == Startup::Eager));
    entry.insert(
        "core".into(),
        json!(upstream.visibility == GroupVisibility::Always),
    );
    entry.insert(
        "timeout_seconds".into(),
        json!(upstream.call_timeout.as_secs_f64()),
    );
    entry.insert(
        "startup_timeout_seconds".into(),
        json!(upstream.startup_timeout.as_secs_f64()),
    );
    Value::Object(entry)
}

/// `a` and `b` within a nanosecond per second of each other (seconds go
/// through an `f64` on the way).
fn close(a: Duration, b: Duration) -> bool {
    let (a, b) = (a.as_secs_f64(), b.as_secs_f64());
    (a - b).abs() <= 1e-9 * a.max(b)
}

/// Any text parses to upstreams or fails with the file and a reason, never
/// panics, and gives no zero timeout; the upstreams written back parse to the same.
#[test]
fn fuzz_mcp_servers_json() {
    let path = Path::new("servers.json");
    fuzz(
        Target::new("mcp_servers_json", 512),
        file_text(),
        &[],
        |text| {
            match parse_mcp_servers_json(&text, path) {
                Err(error) => {
                    prop_assert!(!error.reason.trim().is_empty());
                    prop_assert!(error.to_string().starts_with("servers.json: "), "{error}");
                }
                Ok(upstreams) => {
                    for upstream in &upstreams {
                        prop_assert!(!upstream.name.as_str().contains("__"));
                        prop_assert!(
                            !upstream.call_timeout.is_zero() && !upstream.startup_timeout.is_zero(),
                            "a zero timeout: {}",
                            upstream.name
                        );
                    }
                    let file = json!({"mcpServers": Map::from_iter(
                        upstreams.iter().map(|u| (u.name.to_string(), entry(u)))
                    )});
                    let again = parse_mcp_servers_json(&file.to_string(), path)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {file}")))?;
                    prop_assert_eq!(again.len(), upstreams.len());
                    for (again, first) in again.iter().zip(&upstreams) {
                        prop_assert!(close(again.call_timeout, first.call_timeout));
                        prop_assert!(close(again.startup_timeout, first.startup_timeout));
                        let same_timeouts = UpstreamConfig {
                            call_timeout: first.call_timeout,
                            startup_timeout: first.startup_timeout,
                            ..again.clone()
                        };
                        prop_assert_eq!(&same_timeouts, first);
                    }
                }
            }
            Ok(())
        },
    );
}
