//! What every built-in tool shares: its definition, and its arguments read
//! into the answers the model reads when one is missing or of the wrong type.

use serde_json::Value;
use toolgate_core::{MissingParameter, ToolDefinition, ToolName};

use crate::error::ToolboxError;
use crate::output::ToolOutput;

/// A built-in tool's definition: its name, what the model reads of it, and
/// the JSON schema of its arguments.
pub(super) fn definition(
    name: &str,
    description: &str,
    schema: Value,
) -> Result<ToolDefinition, ToolboxError> {
    Ok(ToolDefinition::new(
        ToolName::new(name)?,
        description,
        schema,
    )?)
}

/// A string argument, or the error the model reads.
pub(super) fn string_argument<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, ToolOutput> {
    optional_string(arguments, name)?
        .ok_or_else(|| ToolOutput::error(MissingParameter(name).to_string()))
}

/// A string argument that may be absent (or null), or the error the model
/// reads.
pub(super) fn optional_string<'a>(
    arguments: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolOutput> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ToolOutput::error(format!(
            "Parameter '{name}' must be a string."
        ))),
    }
}

/// A non-negative integer argument that may be absent (or null), or the
/// error the model reads.
pub(super) fn optional_count(arguments: &Value, name: &str) -> Result<Option<usize>, ToolOutput> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|count| usize::try_from(count).ok())
            .map(Some)
            .ok_or_else(|| {
                ToolOutput::error(format!(
                    "Parameter '{name}' must be a non-negative integer."
                ))
            }),
    }
}
