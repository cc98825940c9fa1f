//! Imports a catalog from the normalized `tools.jsonl` layout of public tool
//! datasets: one JSON object per line with `name`, `description`, `parameters`
//! (a JSON Schema object) and `group`; extra fields are ignored. A sibling
//! `groups.jsonl` (`group`, `description`) supplies group descriptions and
//! order when present.
//!
//! A bad line is reported with its line number and skipped; the rest loads.
//! Groups keep the order of `groups.jsonl`, then first appearance in
//! `tools.jsonl`. A blank group description is generated from tool names.

use std::fs;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::Catalog;
use crate::error::ImportError;
use crate::group::{ToolGroup, generated_group_description};
use crate::name::{GroupId, title_case};
use crate::origin::Origin;
use crate::tool::{ToolDefinition, definition_from_parts};

#[derive(Debug, Deserialize)]
struct RawImportTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    group: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawImportGroup {
    group: String,
    #[serde(default)]
    description: String,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ImportReport {
    /// Tools registered.
    pub tools: usize,
    /// Groups registered.
    pub groups: usize,
    /// Lines skipped, with the reason.
    pub errors: Vec<ImportError>,
}

/// Imports `tools_path` (and `groups.jsonl` beside it, if any) into `catalog`.
/// Fails only when `tools_path` itself cannot be read.
pub fn import_jsonl(catalog: &mut Catalog, tools_path: &Path) -> Result<ImportReport, ImportError> {
    let whole_file = |path: &Path, error: std::io::Error| ImportError {
        path: path.to_path_buf(),
        line: 0,
        reason: error.to_string(),
    };
    let tools_text = fs::read_to_string(tools_path).map_err(|e| whole_file(tools_path, e))?;
    let groups_path = tools_path.with_file_name("groups.jsonl");
    let groups_text = match fs::read_to_string(&groups_path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(whole_file(&groups_path, error)),
    };

    let mut report = ImportReport::default();
    let line_error = |path: &Path, line: usize, reason: String| ImportError {
        path: path.to_path_buf(),
        line,
        reason,
    };

    // Pass 1: parse every line; groups keep groups.jsonl order, then first appearance.
    let mut groups: Vec<(GroupId, String, Vec<ToolDefinition>)> = Vec::new();
    for (number, line) in numbered_lines(groups_text.as_deref().unwrap_or_default()) {
        match serde_json::from_str::<RawImportGroup>(line)
            .map_err(|e| e.to_string())
            .and_then(|raw| {
                Ok((
                    GroupId::new(raw.group).map_err(|e| e.to_string())?,
                    raw.description,
                ))
            }) {
            Ok((id, description)) => {
                if !groups.iter().any(|(seen, ..)| *seen == id) {
                    groups.push((id, description, Vec::new()));
                }
            }
            Err(reason) => report.errors.push(line_error(&groups_path, number, reason)),
        }
    }
    let mut core = Vec::new();
    for (number, line) in numbered_lines(&tools_text) {
        match parse_tool_line(line) {
            Ok((tool, None)) => core.push(tool),
            Ok((tool, Some(group))) => match groups.iter_mut().find(|(id, ..)| *id == group) {
                Some((.., members)) => members.push(tool),
                None => groups.push((group, String::new(), vec![tool])),
            },
            Err(reason) => report.errors.push(line_error(tools_path, number, reason)),
        }
    }

    // Pass 2: register, group by group, reporting collisions without stopping.
    let origin = Origin::Import {
        path: tools_path.to_path_buf(),
    };
    for tool in core {
        let name = tool.name.to_string();
        match catalog.register_tool(tool, None, origin.clone()) {
            Ok(()) => report.tools += 1,
            Err(error) => report
                .errors
                .push(line_error(tools_path, 0, format!("{name}: {error}"))),
        }
    }
    for (id, description, tools) in groups {
        let description = if description.trim().is_empty() {
            generated_group_description(tools.iter().map(|tool| tool.name.as_str()))
        } else {
            description
        };
        let group = ToolGroup::new(id.clone(), title_case(id.as_str()), description);
        let count = tools.len();
        let tools = tools
            .into_iter()
            .map(|tool| (tool, origin.clone()))
            .collect();
        match catalog.register_group_with_tools(group, origin.clone(), tools) {
            Ok(()) => {
                report.tools += count;
                report.groups += 1;
            }
            Err(error) => {
                report
                    .errors
                    .push(line_error(tools_path, 0, format!("group {id}: {error}")))
            }
        }
    }
    Ok(report)
}

/// Non-blank lines with their one-based numbers.
fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
}

fn parse_tool_line(line: &str) -> Result<(ToolDefinition, Option<GroupId>), String> {
    let raw: RawImportTool = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let tool = definition_from_parts(raw.name, raw.description, raw.parameters)?;
    let label = tool.name.to_string();
    let group = raw
        .group
        .filter(|group| !group.trim().is_empty())
        .map(GroupId::new)
        .transpose()
        .map_err(|e| format!("tool `{label}`: {e}"))?;
    Ok((tool, group))
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
