//! Between toolgate's [`ToolDefinition`] and rmcp's [`Tool`].

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations as McpAnnotations};
use serde_json::Value;
use toolgate_core::{SchemaError, ToolAnnotations, ToolDefinition, ToolName};

/// A catalog definition as MCP lists it.
pub(crate) fn tool_to_mcp(definition: &ToolDefinition) -> Tool {
    let mut tool = Tool::new(
        definition.name.as_str().to_owned(),
        definition.description.clone(),
        Arc::new(definition.input_schema.clone()),
    );
    if let Some(annotations) = &definition.annotations {
        let mut mcp = McpAnnotations::default();
        mcp.title = annotations.title.clone();
        mcp.read_only_hint = annotations.read_only_hint;
        mcp.destructive_hint = annotations.destructive_hint;
        mcp.idempotent_hint = annotations.idempotent_hint;
        mcp.open_world_hint = annotations.open_world_hint;
        tool = tool.with_annotations(mcp);
    }
    tool
}

/// An upstream's tool as the catalog holds it, under its exposed `name`.
pub(crate) fn definition_from_upstream(
    name: ToolName,
    tool: &Tool,
) -> Result<ToolDefinition, SchemaError> {
    let schema = Value::Object(tool.input_schema.as_ref().clone());
    let description = tool.description.as_deref().unwrap_or_default();
    let mut definition = ToolDefinition::new(name, description, schema)?;
    definition.annotations = tool.annotations.as_ref().map(|mcp| ToolAnnotations {
        title: mcp.title.clone(),
        read_only_hint: mcp.read_only_hint,
        destructive_hint: mcp.destructive_hint,
        idempotent_hint: mcp.idempotent_hint,
        open_world_hint: mcp.open_world_hint,
    });
    Ok(definition)
}
