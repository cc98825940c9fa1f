//! Fuzz targets of the core's parsers of outside input: JSON tool manifests,
//! stored `tool_input` replayed by the history restore, and a polymorphic
//! tool's arguments. Each never panics, answers bad input with an error
//! that says something, and round-trips what it accepts.
//!
//! Inputs per target: `TOOLGATE_FUZZ_CASES_<TARGET>` or `PROPTEST_CASES`
//! (see `scripts/fuzz`).

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};
use toolgate_core::{
    Action, ActionPolicy, Alias, Catalog, GroupId, Manifest, ManifestTool, Message, MessageKind,
    Origin, PolymorphicTool, ToolDefinition, ToolGroup, ToolName, ToolStatus, parse_manifest,
    restore_active_set,
};
use toolgate_fuzz::mutate::{self, JSON_TOKENS};
use toolgate_fuzz::{Target, fuzz, json as arb};

/// Keys of manifest entries and of the schemas inside them.
const MANIFEST_KEYS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "inputSchema",
    "input_schema",
    "function",
    "timeout_seconds",
    "annotations",
    "_meta",
    "display_name",
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "object",
    "string",
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// The example manifests this repository ships, as text.
fn example_manifests() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools");
    let mut texts: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    texts.sort();
    texts
}

/// A manifest file's stem and text: generated from the keys a manifest
/// knows, an example mutated as JSON or as text, or odd JSON.
fn manifest_input() -> impl Strategy<Value = (String, String)> {
    let texts = example_manifests();
    let values: Vec<Value> = texts
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect();
    let tool = arb::object(MANIFEST_KEYS).prop_map(Value::Object);
    let meta = arb::object(&["_meta", "display_name", "description"]).prop_map(|mut meta| {
        meta.insert("_meta".into(), Value::Bool(true));
        Value::Object(meta)
    });
    let entry = prop_oneof![6 => tool.clone(), 1 => arb::value(MANIFEST_KEYS)];
    let group = (
        prop::option::weighted(0.5, meta),
        prop::collection::vec(entry, 0..6),
    )
        .prop_map(|(meta, entries)| Value::Array(meta.into_iter().chain(entries).collect()));
    let generated = prop_oneof![tool, group, arb::value(MANIFEST_KEYS)];
    let text = prop_oneof![
        3 => generated.prop_map(|value| value.to_string()),
        3 => mutate::mutated_value(values, MANIFEST_KEYS, 4).prop_map(|value| value.to_string()),
        3 => mutate::mutated_text(texts, JSON_TOKENS, 6),
        1 => arb::odd_text(),
    ];
    let stem = prop_oneof![
        4 => prop::sample::select(vec!["google_gmail", "pdf", "a"]).prop_map(str::to_owned),
        1 => arb::string(&[]),
    ];
    (stem, text)
}

/// The JSON a manifest that parsed to `manifest` would be written as.
fn manifest_json(manifest: &Manifest) -> Value {
    fn tool_json(tool: &ManifestTool) -> Value {
        let definition = &tool.definition;
        let mut entry = Map::new();
        entry.insert("name".into(), json!(definition.name));
        entry.insert("description".into(), json!(definition.description));
        entry.insert(
            "parameters".into(),
            Value::Object(definition.input_schema.clone()),
        );
        if let Some(function) = &tool.function {
            entry.insert("function".into(), json!(function));
        }
        if let Some(timeout) = definition.timeout {
            entry.insert("timeout_seconds".into(), json!(timeout.as_secs()));
        }
        if let Some(annotations) = &definition.annotations {
            entry.insert(
                "annotations".into(),
                serde_json::to_value(annotations).unwrap(),
            );
        }
        Value::Object(entry)
    }
    match manifest {
        Manifest::CoreTool(tool) => tool_json(tool),
        Manifest::Group { group, tools } => {
            let meta = json!({"_meta": true, "display_name": group.display_name, "description": group.description});
            Value::Array(
                std::iter::once(meta)
                    .chain(tools.iter().map(tool_json))
                    .collect(),
            )
        }
        other => panic!("a manifest shape this test does not know: {other:?}"),
    }
}

/// `a` and `b` are the same JSON, but for the last digits of a float:
/// serde_json (without its `float_roundtrip` feature) may read back a float
/// it wrote a unit or two in the last place off.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_json(vx, vy))
        }
        _ => a == b,
    }
}

/// A manifest never panics the parser; a bad one is an error that says
/// why; a good one is written back and parses to the same manifest.
#[test]
fn fuzz_manifest() {
    fuzz(
        Target::new("manifest", 512),
        manifest_input(),
        &[],
        |(stem, text)| {
            match parse_manifest(&stem, &text) {
                Err(reason) => {
                    prop_assert!(!reason.to_string().trim().is_empty());
                }
                Ok(manifest) => {
                    if let Manifest::Group { tools, .. } = &manifest {
                        for (index, tool) in tools.iter().enumerate() {
                            prop_assert!(
                                tools[..index]
                                    .iter()
                                    .all(|seen| seen.definition.name != tool.definition.name)
                            );
                        }
                    }
                    let written = manifest_json(&manifest);
                    let text = written.to_string();
                    let again = parse_manifest(&stem, &text)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
                    prop_assert!(
                        same_json(&manifest_json(&again), &written),
                        "{again:?} is not {manifest:?}"
                    );
                }
            }
            Ok(())
        },
    );
}

/// Groups `gmail` (two tools), `drive` and `pdf`; `old_mail` is an alias of
/// a gmail tool, so a load of `old_mail` restores `gmail`.
fn restore_catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (id, tools) in [
        ("gmail", &["gmail_search", "gmail_read"][..]),
        ("drive", &["drive_list"][..]),
        ("pdf", &["pdf_info"][..]),
    ] {
        let group = ToolGroup::new(GroupId::new(id).unwrap(), id, "d");
        let tools = tools
            .iter()
            .map(|name| {
                let tool =
                    ToolDefinition::new(ToolName::new(*name).unwrap(), "d", json!({})).unwrap();
                (tool, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
        .register_alias(
            "old_mail",
            Alias::new(ToolName::new("gmail_search").unwrap()),
        )
        .unwrap();
    catalog
}

const GROUP_NAMES: &[&str] = &[
    "gmail", "drive", "pdf", "old_mail", "ghost", " gmail", "GMAIL",
];
const HISTORY_KEYS: &[&str] = &[
    "group_name",
    "loaded_groups",
    "tools",
    "gmail_search",
    "gmail_read",
    "gmail",
    "drive",
    "pdf",
    "old_mail",
];

/// A stored `tool_input`: the arguments of a load or unload (a group name,
/// or anything in its place), a compaction snapshot, other JSON, or text
/// that is not JSON.
fn tool_input() -> impl Strategy<Value = String> {
    let group_name = prop_oneof![
        4 => prop::sample::select(GROUP_NAMES).prop_map(Value::from),
        2 => arb::value(HISTORY_KEYS),
    ];
    let arguments = (group_name.clone(), arb::object(HISTORY_KEYS)).prop_map(|(name, mut rest)| {
        rest.insert("group_name".into(), name);
        Value::Object(rest)
    });
    let snapshot =
        prop::collection::vec(group_name, 0..5).prop_map(|groups| json!({"loaded_groups": groups}));
    let seeds = vec![
        json!({"group_name": "gmail"}),
        json!({"group_name": "gmail", "tools": ["gmail_read"]}),
        json!({"loaded_groups": ["gmail", "pdf"]}),
        json!({"loaded_groups": [{"group_name": "gmail", "tools": ["gmail_read"]}, "pdf", "gmail"]}),
    ];
    prop_oneof![
        4 => arguments.prop_map(|v| v.to_string()),
        2 => snapshot.prop_map(|v| v.to_string()),
        2 => mutate::mutated_value(seeds, HISTORY_KEYS, 3).prop_map(|v| v.to_string()),
        1 => arb::value(HISTORY_KEYS).prop_map(|v| v.to_string()),
        1 => arb::odd_text(),
        1 => arb::string(HISTORY_KEYS),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let kind = prop::sample::select(vec![
        MessageKind::User,
        MessageKind::Assistant,
        MessageKind::ToolCall,
        MessageKind::ToolResult,
        MessageKind::System,
        MessageKind::Compaction,
    ]);
    let tool_name = prop::option::weighted(
        0.8,
        prop_oneof![
            6 => prop::sample::select(vec!["load_tool_group", "unload_tool_group"])
                .prop_map(str::to_owned),
            1 => arb::string(&["call_tool", "gmail_search"]),
        ],
    );
    let status = prop::option::weighted(
        0.9,
        prop::sample::select(vec![
            ToolStatus::Success,
            ToolStatus::Error,
            ToolStatus::Pending,
        ]),
    );
    (
        kind,
        arb::string(&[]),
        prop::option::of(arb::pattern("[a-z0-9-]{1,8}")),
        tool_name,
        prop::option::weighted(0.9, tool_input()),
        status,
    )
        .prop_map(
            |(kind, content, tool_call_id, tool_name, tool_input, tool_status)| Message {
                kind,
                content,
                tool_call_id,
                tool_name,
                tool_input,
                tool_status,
            },
        )
}

/// Any stored history restores without panicking to groups the catalog
/// has, reports only events that exist, and a compaction of what it
/// restored restores the same.
#[test]
fn fuzz_history_restore() {
    let catalog = restore_catalog();
    fuzz(
        Target::new("history_restore", 256),
        prop::collection::vec(message(), 0..24),
        &[],
        |history| {
            let restored = restore_active_set(&history, &catalog);
            for group in restored.active.loaded_groups() {
                prop_assert!(catalog.group(group.as_str()).is_some(), "{group}");
            }
            for pair in restored.skipped.windows(2) {
                prop_assert!(pair[0].index <= pair[1].index);
            }
            prop_assert!(restored.skipped.iter().all(|s| s.index < history.len()));
            let mut compacted = history;
            compacted.push(Message::compaction("summary", &restored.active));
            let again = restore_active_set(&compacted, &catalog);
            prop_assert_eq!(&again.active, &restored.active);
            prop_assert_eq!(again.skipped, restored.skipped);
            Ok(())
        },
    );
}

const ACTION_KEYS: &[&str] = &[
    "action", "query", "url", "limit", "format", "search", "fetch", "delete", "text", "markdown",
];

/// A `web`-like tool: `search` (needs `query`, optional `limit` and an enum
/// `format`), `fetch` (needs `url`, the same `format`), and a denied
/// `delete`.
fn polymorphic_tool() -> PolymorphicTool {
    let params = |schema: Value| match schema {
        Value::Object(object) => object,
        _ => unreachable!(),
    };
    let format = json!({"type": "string", "enum": ["text", "markdown"]});
    PolymorphicTool::new(
        ToolName::new("web").unwrap(),
        "Search the web or fetch a page.",
        vec![
            Action::new(
                "search",
                "Search",
                params(json!({"properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "format": format}, "required": ["query"]})),
            ),
            Action::new(
                "fetch",
                "Fetch",
                params(json!({"properties": {"url": {"type": "string"}, "format": format}, "required": ["url"]})),
            ),
            Action::new(
                "delete",
                "Delete",
                params(json!({"properties": {"url": {"type": "string"}}})),
            ),
        ],
        &ActionPolicy {
            allow: None,
            deny: vec!["delete".into()],
        },
    )
    .unwrap()
}

/// Arguments to a polymorphic tool: an object with an action (known,
/// denied, misspelt, any value) and parameters it knows or not, or any
/// other JSON value.
fn polymorphic_arguments() -> impl Strategy<Value = Value> {
    let action = prop_oneof![
        5 => prop::sample::select(vec!["search", "fetch", "delete", "serch", "SEARCH", ""])
            .prop_map(Value::from),
        2 => arb::value(ACTION_KEYS),
    ];
    let object = (
        prop::option::weighted(0.9, action),
        arb::object(ACTION_KEYS),
    )
        .prop_map(|(action, mut rest)| {
            match action {
                Some(action) => rest.insert("action".into(), action),
                None => rest.shift_remove("action"),
            };
            Value::Object(rest)
        });
    prop_oneof![6 => object, 1 => arb::value(ACTION_KEYS)]
}

/// A call resolves to an allowed action with its arguments less `action`,
/// or to a structured error naming the allowed actions; never a panic.
/// Resolving the resolved call again gives the same call.
#[test]
fn fuzz_polymorphic_resolve() {
    let tool = polymorphic_tool();
    fuzz(
        Target::new("polymorphic_resolve", 512),
        polymorphic_arguments(),
        &[],
        |arguments| {
            match tool.resolve(&arguments) {
                Ok(call) => {
                    prop_assert!(call.action.name != "delete");
                    prop_assert_eq!(&tool.actions()[call.index], call.action);
                    let mut expected = arguments.as_object().unwrap().clone();
                    expected.shift_remove("action");
                    prop_assert_eq!(&call.arguments, &Value::Object(expected.clone()));
                    expected.insert("action".into(), json!(call.action.name));
                    let again = tool.resolve(&Value::Object(expected)).unwrap();
                    prop_assert_eq!(again, call);
                }
                Err(error) => {
                    let shown = error.to_json();
                    prop_assert_eq!(&shown["type"], "error");
                    prop_assert_eq!(&shown["allowed_actions"], &json!(["search", "fetch"]));
                    prop_assert!(!error.message.is_empty());
                    let text = error.to_string();
                    prop_assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), shown);
                }
            }
            Ok(())
        },
    );
}
