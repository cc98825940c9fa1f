//! A dataset's multi-turn conversations, for the replay: each user turn with
//! the calls its ground truth makes, in order.
//!
//! The catalog and the gold tools come from [`Dataset::load`] (under the
//! names toolgate loaded them by); the turns are grouped by
//! `conversation_id` and ordered by `turn`, and each turn's calls are read
//! from `ground_truth_calls` (Python call syntax, `cd(folder='document')`).
//! A turn without them calls each of its gold `tools` once, with the
//! simplest arguments its schema takes. A line without a conversation is
//! a conversation of one turn.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate_core::{Catalog, GroupId, ToolDefinition};

use crate::dataset::Dataset;
use crate::error::{EvalError, Result};
use crate::python_call::{PythonCall, called_name};

/// A dataset's conversations over its catalog.
#[derive(Debug)]
pub struct Conversations {
    /// The directory name.
    pub name: String,
    /// Every tool and group.
    pub catalog: Catalog,
    /// The conversations, in the order of their first line.
    pub conversations: Vec<Conversation>,
}

/// One conversation: its user turns in order.
#[derive(Clone, Debug)]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// Its turns, by turn number.
    pub turns: Vec<GoldTurn>,
}

/// One user turn and the calls that answer it.
#[derive(Clone, Debug)]
pub struct GoldTurn {
    /// The user's text.
    pub text: String,
    /// The calls, in order.
    pub calls: Vec<GoldCall>,
}

/// One call of the ground truth.
#[derive(Clone, Debug, PartialEq)]
pub struct GoldCall {
    /// The tool, as the catalog names it.
    pub tool: String,
    /// Its arguments as JSON text.
    pub arguments: String,
}

impl Conversation {
    /// The groups its calls use, each once, in order of first use.
    pub fn groups(&self, catalog: &Catalog) -> Vec<GroupId> {
        let mut groups: Vec<GroupId> = Vec::new();
        for call in self.turns.iter().flat_map(|turn| &turn.calls) {
            if let Some(group) = catalog.group_of(&call.tool)
                && !groups.contains(group)
            {
                groups.push(group.clone());
            }
        }
        groups
    }
}

#[derive(Deserialize)]
struct RawTurn {
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    conversation_id: Option<String>,
    #[serde(default)]
    turn: Option<usize>,
    #[serde(default)]
    ground_truth_calls: Option<Vec<String>>,
}

impl Conversations {
    /// Loads `dir` as [`Dataset::load`] does, and groups its queries into
    /// conversations.
    pub fn load(dir: &Path) -> Result<Self> {
        let dataset = Dataset::load(dir)?;
        let path = dir.join("queries.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::ReadQueries {
            path: path.clone(),
            source,
        })?;
        let raw: Vec<RawTurn> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(number, line)| {
                serde_json::from_str(line).map_err(|source| EvalError::Query {
                    path: path.clone(),
                    line: number + 1,
                    source,
                })
            })
            .collect::<Result<_>>()?;
        let mut order: Vec<String> = Vec::new();
        let mut turns: HashMap<String, Vec<(usize, GoldTurn)>> = HashMap::new();
        // Dataset::load keeps every non-blank line, in order: the same lines.
        for (query, raw) in dataset.queries.iter().zip(raw) {
            // The dataset's names, as the catalog loaded them.
            let renamed: HashMap<&str, &str> = raw
                .tools
                .iter()
                .map(String::as_str)
                .zip(query.gold_tools.iter().map(String::as_str))
                .collect();
            let calls = match &raw.ground_truth_calls {
                Some(calls) => calls
                    .iter()
                    .map(|text| gold_call(text, &renamed, &dataset.catalog))
                    .collect(),
                None => query
                    .gold_tools
                    .iter()
                    .map(|tool| GoldCall {
                        tool: tool.clone(),
                        arguments: simplest_arguments(
                            dataset.catalog.tool(tool).map(|tool| tool.definition),
                        ),
                    })
                    .collect(),
            };
            let id = raw.conversation_id.unwrap_or_else(|| query.id.clone());
            if !turns.contains_key(&id) {
                order.push(id.clone());
            }
            let number = raw.turn.unwrap_or(0);
            turns.entry(id).or_default().push((
                number,
                GoldTurn {
                    text: query.text.clone(),
                    calls,
                },
            ));
        }
        let conversations = order
            .into_iter()
            .map(|id| {
                let mut numbered = turns.remove(&id).unwrap_or_default();
                numbered.sort_by_key(|(number, _)| *number);
                Conversation {
                    id,
                    turns: numbered.into_iter().map(|(_, turn)| turn).collect(),
                }
            })
            .collect();
        Ok(Self {
            name: dataset.name,
            catalog: dataset.catalog,
            conversations,
        })
    }
}

/// The call `text` names, under the catalog's name for its tool, with its
/// arguments; the simplest arguments the schema takes when the text does
/// not read.
fn gold_call(text: &str, renamed: &HashMap<&str, &str>, catalog: &Catalog) -> GoldCall {
    let parsed = PythonCall::parse(text);
    let name = parsed
        .as_ref()
        .map_or_else(|| called_name(text), |call| &call.name);
    let tool = renamed.get(name).copied().unwrap_or(name).to_owned();
    let definition = catalog.tool(&tool).map(|tool| tool.definition);
    let arguments = match (parsed, definition) {
        (Some(call), Some(definition)) => {
            Value::Object(call.arguments(&definition.input_schema)).to_string()
        }
        (_, definition) => simplest_arguments(definition),
    };
    GoldCall { tool, arguments }
}

/// JSON text of arguments that give each required parameter of `tool` a
/// value of its type (`{}` for an unknown tool).
fn simplest_arguments(tool: Option<&ToolDefinition>) -> String {
    let Some(tool) = tool else {
        return "{}".to_owned();
    };
    let schema = &tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let kind = properties
            .and_then(|properties| properties.get(name))
            .and_then(|property| property.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            Some("null") => Value::Null,
            _ => Value::String("x".to_owned()),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments).to_string()
}
