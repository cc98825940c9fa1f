//! Between the tool runtime's types and rmcp's, in one place: a catalog
//! definition as an MCP [`Tool`], an upstream's tool as a [`SourceTool`], and
//! a [`ToolOutput`] to and from an MCP [`CallToolResult`], and a contract
//! text as an error result. rmcp types stop here: nothing of them reaches
//! toolgate-tools.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations as McpAnnotations};
use serde_json::{Map, Value};
use toolgate_core::{ToolAnnotations, ToolDefinition, ToolName};
use toolgate_tools::{Content, SourceTool, ToolOutput};

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

/// A tool as its upstream listed it (under the exposed name), or the
/// catalog's definition when the listing does not read as a tool.
pub(crate) fn listed_tool(listing: &Map<String, Value>, definition: &ToolDefinition) -> Tool {
    serde_json::from_value(Value::Object(listing.clone()))
        .unwrap_or_else(|_| tool_to_mcp(definition))
}

/// Upstream tools as MCP lists them, read from their listing once: a
/// listing is read again only when its upstream is listed again (a new
/// `Arc`). Reading one costs a deep copy of its schemas, which every
/// `tools/list` would otherwise pay for every upstream tool.
#[derive(Debug, Default)]
pub(crate) struct ListedTools(Mutex<HashMap<ToolName, (Listing, Tool)>>);

/// An upstream's own description of one tool, as the toolbox keeps it.
type Listing = Arc<Map<String, Value>>;

impl ListedTools {
    /// The MCP tool for each definition: from its listing when it has one,
    /// else from the catalog's definition.
    pub(crate) fn tools(
        &self,
        definitions: &[&ToolDefinition],
        listings: Vec<Option<Listing>>,
    ) -> Vec<Tool> {
        let mut read = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        definitions
            .iter()
            .zip(listings)
            .map(|(definition, listing)| {
                let Some(listing) = listing else {
                    return tool_to_mcp(definition);
                };
                match read.get(&definition.name) {
                    Some((known, tool)) if Arc::ptr_eq(known, &listing) => tool.clone(),
                    _ => {
                        let tool = listed_tool(&listing, definition);
                        read.insert(definition.name.clone(), (listing, tool.clone()));
                        tool
                    }
                }
            })
            .collect()
    }
}

/// An upstream's tool as the runtime lists it: its own name, description,
/// schema and hints, and the whole listing to pass on.
pub(crate) fn source_tool(tool: &Tool) -> SourceTool {
    let listing = match serde_json::to_value(tool) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    SourceTool {
        name: tool.name.to_string(),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema: Value::Object(tool.input_schema.as_ref().clone()),
        annotations: tool.annotations.as_ref().map(|mcp| ToolAnnotations {
            title: mcp.title.clone(),
            read_only_hint: mcp.read_only_hint,
            destructive_hint: mcp.destructive_hint,
            idempotent_hint: mcp.idempotent_hint,
            open_world_hint: mcp.open_world_hint,
        }),
        listing,
    }
}

/// An upstream's result as the runtime carries it: plain text blocks as
/// text, every other block (annotated text included) as its MCP JSON.
pub(crate) fn output_from_result(result: CallToolResult) -> ToolOutput {
    let content = result
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) if text.annotations.is_none() && text.meta.is_none() => {
                Content::Text(text.text)
            }
            other => Content::Block(serde_json::to_value(other).unwrap_or(Value::Null)),
        })
        .collect();
    ToolOutput {
        content,
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
        meta: result
            .meta
            .and_then(|meta| serde_json::to_value(meta).ok())
            .map(Box::new),
    }
}

/// A runtime result as an MCP client receives it.
pub(crate) fn result_from_output(output: ToolOutput) -> CallToolResult {
    let content: Vec<ContentBlock> = output
        .content
        .into_iter()
        .map(|block| match block {
            Content::Text(text) => ContentBlock::text(text),
            Content::Block(value) => serde_json::from_value(value.clone())
                .unwrap_or_else(|_| ContentBlock::text(value.to_string())),
        })
        .collect();
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = output.structured;
    result.meta = output
        .meta
        .and_then(|meta| serde_json::from_value(*meta).ok());
    result
}

/// An error result whose text is `text`: one of the texts of
/// toolgate-core's contract, whose `Display` is what the model reads.
pub(crate) fn error_result(text: impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.to_string())])
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
