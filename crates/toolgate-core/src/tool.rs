//! [`ToolDefinition`]: what a model or MCP client is told about one tool.
//!
//! The input schema is kept as the JSON object it arrived as (key order
//! preserved), because it is sent on verbatim and re-serializing it in another
//! order would change token counts and break provider prompt caches.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::SchemaError;
use crate::name::ToolName;

/// Behaviour hints, as MCP defines them. All optional; absent means unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may make destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// One tool: name, description, input schema, optional annotations and timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: ToolName,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments; always an object schema.
    pub input_schema: Map<String, Value>,
    /// Behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// How long one call may run.
    pub timeout: Option<Duration>,
}

impl ToolDefinition {
    /// Builds a definition, checking that `input_schema` describes an object.
    /// A schema without `type` gets `"type": "object"` added in front.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::{ToolDefinition, ToolName};
    ///
    /// let tool = ToolDefinition::new(
    ///     ToolName::new("pdf_info")?,
    ///     "Get page count and metadata of a PDF file",
    ///     json!({"properties": {"path": {"type": "string"}}, "required": ["path"]}),
    /// )?;
    /// assert_eq!(tool.input_schema["type"], "object");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        name: ToolName,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Result<Self, SchemaError> {
        Ok(Self {
            name,
            description: description.into(),
            input_schema: object_schema(input_schema)?,
            annotations: None,
            timeout: None,
        })
    }

    /// The definition as an OpenAI chat-completions function tool, the form most
    /// providers receive and the one toolgate counts tokens on.
    pub fn to_openai_function(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            }
        })
    }

    /// Characters of the name, the description and the parameters' JSON: a
    /// token-free measure of what the schema costs, which the group
    /// listing's form is chosen against.
    pub(crate) fn weight(&self) -> usize {
        self.name.as_str().len()
            + self.description.len()
            + serde_json::to_string(&self.input_schema).map_or(0, |json| json.len())
    }

    /// The description on one line: runs of white space (newlines included)
    /// become one space. Listings that promise one line per tool use this.
    pub fn one_line_description(&self) -> String {
        one_line(&self.description)
    }
}

/// Builds a definition from the loose fields of a manifest entry or an import
/// line: the name is checked, a missing schema means "no arguments". The error
/// names the tool when the name itself was fine.
pub(crate) fn definition_from_parts(
    name: String,
    description: String,
    parameters: Option<Value>,
) -> Result<ToolDefinition, String> {
    let name = ToolName::new(name).map_err(|error| error.to_string())?;
    let label = name.to_string();
    let schema = parameters.unwrap_or_else(|| Value::Object(Map::new()));
    ToolDefinition::new(name, description, schema)
        .map_err(|error| format!("tool `{label}`: {error}"))
}

/// Collapses every run of white space into one space and trims the ends.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn object_schema(schema: Value) -> Result<Map<String, Value>, SchemaError> {
    let mut schema = match schema {
        Value::Object(map) => map,
        other => {
            return Err(SchemaError::NotAnObject {
                found: json_type(&other),
            });
        }
    };
    match schema.get("type") {
        None => {
            let mut with_type = Map::with_capacity(schema.len() + 1);
            with_type.insert("type".to_owned(), Value::String("object".to_owned()));
            with_type.append(&mut schema);
            schema = with_type;
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(SchemaError::NotObjectType {
                found: other.to_string(),
            });
        }
    }
    if schema.get("properties").is_some_and(|p| !p.is_object()) {
        return Err(SchemaError::PropertiesNotObject);
    }
    if let Some(required) = schema.get("required") {
        let all_strings = required
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !all_strings {
            return Err(SchemaError::RequiredNotStrings);
        }
    }
    Ok(schema)
}

/// The JSON type name of `value`, for error messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
