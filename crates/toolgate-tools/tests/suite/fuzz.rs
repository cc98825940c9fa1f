//! Fuzz targets of the tool runtime: arbitrary arguments to a polymorphic
//! tool (by its name and by the aliases its former tools become), and
//! arbitrary input schemas (as manifests and MCP servers give them) checked
//! against arbitrary arguments. Neither panics; every refusal is an error
//! result the model reads; what reaches the tool is what the caller sent.
//!
//! Inputs per target: `TOOLGATE_FUZZ_CASES_<TARGET>` or `PROPTEST_CASES`
//! (see `scripts/fuzz`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate_core::{ActionPolicy, GroupId, ToolDefinition, ToolGroup, ToolName};
use toolgate_fuzz::{Target, fuzz, json as arb, mutate};
use toolgate_tools::{
    Authority, CallContext, GroupExposure, GroupSettings, SourceCall, SourceOffer, ToolCallError,
    ToolOutput, ToolSource, Toolbox, ToolboxOptions,
};

/// Group `mail` of tools whose schemas are given; each call answers its
/// arguments back and is remembered.
#[derive(Debug)]
struct Echo {
    tools: Vec<ToolDefinition>,
    last: Mutex<Option<SourceCall>>,
}

#[async_trait]
impl ToolSource for Echo {
    fn offer(&self) -> SourceOffer {
        SourceOffer {
            core_tools: vec![],
            groups: vec![(
                ToolGroup::new(GroupId::new("mail").unwrap(), "Mail", "Read and send mail"),
                self.tools.clone(),
            )],
        }
    }

    async fn call(
        &self,
        call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let answer = ToolOutput::json(call.arguments.clone());
        *self.last.lock().unwrap() = Some(call);
        Ok(answer)
    }
}

fn tool(name: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} does it"),
        schema,
    )
    .unwrap()
}

async fn toolbox(echo: &Arc<Echo>, polymorphic: bool) -> Arc<Toolbox> {
    let mut groups = BTreeMap::new();
    if polymorphic {
        groups.insert(
            "mail".to_owned(),
            GroupSettings {
                expose: Some(GroupExposure::Polymorphic),
                policy: ActionPolicy {
                    allow: None,
                    deny: vec!["delete".into()],
                },
            },
        );
    }
    let options = ToolboxOptions {
        sources: vec![Arc::clone(echo) as Arc<dyn ToolSource>],
        groups,
        ..ToolboxOptions::default()
    };
    Toolbox::start(options).await.unwrap().0
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const ARGUMENT_KEYS: &[&str] = &[
    "action", "query", "limit", "format", "to", "subject", "id", "search", "send", "delete",
    "text", "html",
];

/// Arguments: an object with an action (known, denied, misspelt, any
/// value) and parameters the actions know or not, or any other value.
fn polymorphic_arguments() -> impl Strategy<Value = Value> {
    let action = prop_oneof![
        5 => prop::sample::select(vec!["search", "send", "delete", "serch", "", "mail_search"])
            .prop_map(Value::from),
        2 => arb::value(ARGUMENT_KEYS),
    ];
    let object = (
        prop::option::weighted(0.9, action),
        arb::object(ARGUMENT_KEYS),
    )
        .prop_map(|(action, mut rest)| {
            match action {
                Some(action) => rest.insert("action".into(), action),
                None => rest.shift_remove("action"),
            };
            Value::Object(rest)
        });
    prop_oneof![6 => object, 1 => arb::value(ARGUMENT_KEYS)]
}

/// The name called: the polymorphic tool, a former tool name (an alias of
/// its action), or a name nothing has.
fn called_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "mail",
        "mail",
        "mail",
        "mail_search",
        "mail_send",
        "mail_delete",
        "nothing",
    ])
}

/// Any arguments to a polymorphic tool (or its aliases) run the action
/// they name with exactly the arguments given less `action`, or are
/// refused with an error result; never a panic or a fatal error.
#[test]
fn fuzz_polymorphic_arguments() {
    let runtime = runtime();
    let echo = Arc::new(Echo {
        tools: vec![
            tool(
                "mail_search",
                json!({"properties": {"query": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}, "format": {"type": "string", "enum": ["text", "html"]}}, "required": ["query"]}),
            ),
            tool(
                "mail_send",
                json!({"properties": {"to": {"type": "array", "items": {"type": "string"}, "minItems": 1}, "subject": {"type": "string"}, "format": {"type": "string", "enum": ["text", "html"]}}, "required": ["to"], "additionalProperties": false}),
            ),
            tool(
                "mail_delete",
                json!({"properties": {"id": {"type": "integer"}}, "required": ["id"]}),
            ),
        ],
        last: Mutex::new(None),
    });
    let toolbox = runtime.block_on(toolbox(&echo, true));
    let context = CallContext::new(Authority::everything());
    fuzz(
        Target::new("polymorphic_arguments", 256),
        (called_name(), polymorphic_arguments()),
        &[],
        |(name, arguments)| {
            *echo.last.lock().unwrap() = None;
            let result = runtime.block_on(toolbox.call(name, arguments.clone(), &context));
            let ran = echo.last.lock().unwrap().take();
            match result {
                Ok(output) => {
                    prop_assert!(!output.is_error, "{output:?}");
                    let call = ran.ok_or_else(|| TestCaseError::fail("answered without a call"))?;
                    prop_assert!(call.tool != "mail_delete", "a denied action ran");
                    let typed = output.structured.unwrap_or_default();
                    prop_assert!(typed["type"].is_string(), "{typed}");
                    if name == "mail" {
                        let mut sent = arguments.as_object().cloned().unwrap_or_default();
                        sent.shift_remove("action");
                        prop_assert_eq!(call.arguments, Value::Object(sent));
                    }
                }
                Err(ToolCallError::RespondToModel(output)) => {
                    prop_assert!(output.is_error, "{output:?}");
                    prop_assert!(!output.model_text().trim().is_empty());
                    prop_assert!(ran.is_none(), "refused but ran: {ran:?}");
                }
                Err(fatal @ ToolCallError::Fatal(_)) => {
                    return Err(TestCaseError::fail(format!("{fatal}")));
                }
            }
            Ok(())
        },
    );
}

/// Keywords of JSON Schema and values they take, for schemas that reach
/// past the validator's first check.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minLength",
    "maxLength",
    "format",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicRef",
    "additionalProperties",
    "patternProperties",
    "unevaluatedProperties",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "uniqueItems",
    "minItems",
    "maxItems",
    "contains",
    "minContains",
    "propertyNames",
    "minProperties",
    "string",
    "integer",
    "number",
    "object",
    "array",
    "boolean",
    "null",
    "#",
    "#/$defs/a",
    "#/properties/a",
    "a",
    "^a+$",
    "(a+)+$",
    "[",
    "email",
    "uri",
    "date-time",
    "regex",
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-04/schema#",
];

/// The input schemas of the example manifests this repository ships.
fn example_schemas() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools");
    let mut schemas = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let entries = match serde_json::from_str(&text).unwrap() {
            Value::Array(entries) => entries,
            one => vec![one],
        };
        schemas.extend(
            entries
                .into_iter()
                .filter_map(|e| e.get("parameters").cloned()),
        );
    }
    schemas
}

/// An input schema: a real one mutated, or one made of JSON Schema's
/// keywords with arbitrary values.
fn schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => mutate::mutated_value(example_schemas(), SCHEMA_KEYS, 4),
        1 => arb::object(SCHEMA_KEYS).prop_map(Value::Object),
    ]
}

fn arguments_for_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => arb::object(SCHEMA_KEYS).prop_map(Value::Object),
        1 => arb::value(SCHEMA_KEYS),
    ]
}

/// Any input schema a tool arrives with, checked against any arguments:
/// the call runs with those arguments or is refused with an error result.
/// Schemas the validator cannot compile let calls through (the tool
/// decides); nothing panics.
#[test]
fn fuzz_schema_validation() {
    let runtime = runtime();
    let context = CallContext::new(Authority::everything());
    fuzz(
        Target::new("schema_validation", 64),
        (
            schema(),
            prop::collection::vec(arguments_for_schema(), 1..4),
        ),
        &[],
        |(schema, calls)| {
            let Ok(definition) =
                ToolDefinition::new(ToolName::new("mail_check").unwrap(), "Check mail", schema)
            else {
                return Ok(());
            };
            let echo = Arc::new(Echo {
                tools: vec![definition],
                last: Mutex::new(None),
            });
            runtime.block_on(async {
                let toolbox = toolbox(&echo, false).await;
                for arguments in calls {
                    let result = toolbox
                        .call("mail_check", arguments.clone(), &context)
                        .await;
                    let ran = echo.last.lock().unwrap().take();
                    match result {
                        Ok(_) => prop_assert_eq!(ran.map(|call| call.arguments), Some(arguments)),
                        Err(ToolCallError::RespondToModel(output)) => {
                            prop_assert!(output.is_error);
                            prop_assert!(ran.is_none());
                        }
                        Err(fatal @ ToolCallError::Fatal(_)) => {
                            return Err(TestCaseError::fail(format!("{fatal}")));
                        }
                    }
                }
                Ok(())
            })
        },
    );
}
