//! Imports a catalog from the normalized `tools.jsonl` layout of public tool
//! datasets: one JSON object per line with `name`, `description`, `parameters`
//! (a JSON Schema object) and `group`; extra fields are ignored. A sibling
//! `groups.jsonl` (`group`, `description`) supplies group descriptions and
//! order when present.
//!
//! A bad line is reported with its line number and skipped; the rest loads.
//! Groups keep the order of `groups.jsonl`, then first appearance in
//! `tools.jsonl`. A blank group description is generated from tool names.
//!
//! A name toolgate refuses does not make a line bad: the tool is loaded under
//! the name the gateway would expose it by, so a dataset's queries can name
//! it. A tool whose name MCP refuses (over 64 characters, or with a character
//! such as `&` or a space) takes the first free name of
//! [`ToolName::candidates`]: its name with such characters replaced by `_`,
//! else that name cut short with a stable hash suffix. A group id that
//! [`GroupId`] refuses (padded, over 128 characters, a control character)
//! likewise takes the first free id of [`GroupId::candidates`]. A name is
//! free when no line has it as its own valid name, no other renamed one took
//! it and the catalog holds nothing by it; refused names are settled in the
//! order of their text, so a file gives the same names whatever its line
//! order. Each rename is reported ([`ImportReport::renamed_tools`],
//! [`ImportReport::renamed_groups`]), never made silently.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::hash::Hash;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalog::Catalog;
use crate::error::ImportError;
use crate::group::{ToolGroup, generated_group_description};
use crate::name::{GroupId, NameError, ToolName, title_case};
use crate::origin::Origin;
use crate::tool::ToolDefinition;

/// The name a tool line's definition holds until its refused name is
/// settled, once every line is read.
const UNSETTLED_NAME: &str = "unsettled";

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
    /// Tools loaded under another name than their line's, in line order.
    pub renamed_tools: Vec<ImportRename<ToolName>>,
    /// Groups loaded under another id than their lines', in order of first
    /// appearance.
    pub renamed_groups: Vec<ImportRename<GroupId>>,
    /// Lines skipped, with the reason.
    pub errors: Vec<ImportError>,
}

/// A tool or group loaded under a name other than the one its lines give,
/// because toolgate refuses that one. `Display` is a line for the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRename<N> {
    /// The file of the first line giving the name.
    pub path: PathBuf,
    /// That line, one-based.
    pub line: usize,
    /// The name the lines give.
    pub original: String,
    /// The name it is loaded under.
    pub loaded: N,
    /// Why the original is refused.
    pub reason: NameError,
}

impl<N: fmt::Display> fmt::Display for ImportRename<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: loaded as `{}`: {}",
            self.path.display(),
            self.line,
            self.loaded,
            self.reason
        )
    }
}

/// A parsed `groups.jsonl` line.
struct GroupLine {
    line: usize,
    original: String,
    description: String,
}

/// A parsed tool line. Its definition has the line's name when valid, else
/// [`UNSETTLED_NAME`] until the import gives it one.
struct ToolLine {
    line: usize,
    original: String,
    definition: ToolDefinition,
    group: Option<String>,
}

/// Where a name first appears, and the group a tool name is hashed with.
#[derive(Clone, Copy)]
struct Appearance<'a> {
    original: &'a str,
    group: Option<&'a str>,
    path: &'a Path,
    line: usize,
}

/// A group to register: its loaded id, its description (blank: generated)
/// and its tools under their loaded names.
struct ImportedGroup {
    id: GroupId,
    description: String,
    tools: Vec<ToolDefinition>,
}

/// Imports `tools_path` (and `groups.jsonl` beside it, if any) into `catalog`.
/// Fails only when `tools_path` itself cannot be read.
pub fn import_jsonl(catalog: &mut Catalog, tools_path: &Path) -> Result<ImportReport, ImportError> {
    let tools_text = fs::read_to_string(tools_path).map_err(|e| whole_file(tools_path, e))?;
    let groups_path = tools_path.with_file_name("groups.jsonl");
    let groups_text = match fs::read_to_string(&groups_path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(whole_file(&groups_path, error)),
    };
    let mut report = ImportReport::default();

    // Pass 1: parse every line.
    let group_lines = parse_group_lines(&groups_path, &groups_text, &mut report.errors);
    let tool_lines = parse_tool_lines(tools_path, &tools_text, &mut report.errors);

    // Pass 2: settle the names, groups first: a tool name is hashed with
    // its group's loaded id, as the gateway hashes it with its server's.
    let group_ids = settle_group_ids(
        catalog,
        &groups_path,
        &group_lines,
        tools_path,
        &tool_lines,
        &mut report.renamed_groups,
    );
    let tool_names = settle_tool_names(
        catalog,
        tools_path,
        &tool_lines,
        &group_ids,
        &mut report.renamed_tools,
    );
    let (core, groups) = arrange(
        tools_path,
        tool_lines,
        group_lines,
        &group_ids,
        &tool_names,
        &mut report.errors,
    );

    // Pass 3: register, group by group, reporting collisions without stopping.
    register(catalog, tools_path, core, groups, &mut report);
    Ok(report)
}

/// The error for a file that could not be read at all.
fn whole_file(path: &Path, error: std::io::Error) -> ImportError {
    line_error(path, 0, error.to_string())
}

/// The error for one line (0: no line in particular).
fn line_error(path: &Path, line: usize, reason: String) -> ImportError {
    ImportError {
        path: path.to_path_buf(),
        line,
        reason,
    }
}

/// The lines of `groups.jsonl`; a bad one (or one with a blank group) goes
/// to `errors`.
fn parse_group_lines(path: &Path, text: &str, errors: &mut Vec<ImportError>) -> Vec<GroupLine> {
    let mut lines = Vec::new();
    for (number, line) in numbered_lines(text) {
        match serde_json::from_str::<RawImportGroup>(line) {
            Ok(raw) if raw.group.trim().is_empty() => {
                let reason = NameError::GroupIdShape { id: raw.group }.to_string();
                errors.push(line_error(path, number, reason));
            }
            Ok(raw) => lines.push(GroupLine {
                line: number,
                original: raw.group,
                description: raw.description,
            }),
            Err(error) => errors.push(line_error(path, number, error.to_string())),
        }
    }
    lines
}

/// The lines of `tools.jsonl`; a bad one goes to `errors`.
fn parse_tool_lines(path: &Path, text: &str, errors: &mut Vec<ImportError>) -> Vec<ToolLine> {
    let mut lines = Vec::new();
    for (number, line) in numbered_lines(text) {
        match parse_tool_line(number, line) {
            Ok(tool) => lines.push(tool),
            Err(reason) => errors.push(line_error(path, number, reason)),
        }
    }
    lines
}

/// The loaded id of every group the lines name, `groups.jsonl`'s first,
/// then the tool lines' in first appearance ([`settle_names`]).
fn settle_group_ids(
    catalog: &Catalog,
    groups_path: &Path,
    group_lines: &[GroupLine],
    tools_path: &Path,
    tool_lines: &[ToolLine],
    renamed: &mut Vec<ImportRename<GroupId>>,
) -> HashMap<String, GroupId> {
    let mut seen = HashSet::new();
    let appearances: Vec<Appearance<'_>> = group_lines
        .iter()
        .map(|group| (groups_path, group.line, group.original.as_str()))
        .chain(tool_lines.iter().filter_map(|tool| {
            let id = tool.group.as_deref()?;
            Some((tools_path, tool.line, id))
        }))
        .filter(|(.., id)| seen.insert(*id))
        .map(|(path, line, original)| Appearance {
            original,
            group: None,
            path,
            line,
        })
        .collect();
    settle_names(
        &appearances,
        |original| GroupId::new(original),
        |appearance| GroupId::candidates(appearance.original),
        |id| catalog.group(id.as_str()).is_none(),
        renamed,
    )
}

/// The loaded name of every tool the lines name, hashed with its group's
/// loaded id ([`settle_names`]).
fn settle_tool_names(
    catalog: &Catalog,
    tools_path: &Path,
    tool_lines: &[ToolLine],
    group_ids: &HashMap<String, GroupId>,
    renamed: &mut Vec<ImportRename<ToolName>>,
) -> HashMap<String, ToolName> {
    let mut seen = HashSet::new();
    let appearances: Vec<Appearance<'_>> = tool_lines
        .iter()
        .filter(|tool| seen.insert(tool.original.as_str()))
        .map(|tool| Appearance {
            original: &tool.original,
            group: tool
                .group
                .as_deref()
                .and_then(|id| group_ids.get(id))
                .map(GroupId::as_str),
            path: tools_path,
            line: tool.line,
        })
        .collect();
    settle_names(
        &appearances,
        |original| ToolName::new(original),
        |appearance| ToolName::candidates(appearance.group, appearance.original),
        |name| catalog.tool_state(name.as_str()).is_none(),
        renamed,
    )
}

/// The core tools and the groups to register, under their loaded names:
/// groups in `groups.jsonl` order, then first appearance. A tool whose name
/// or group found no free name goes to `errors`.
fn arrange(
    tools_path: &Path,
    tool_lines: Vec<ToolLine>,
    group_lines: Vec<GroupLine>,
    group_ids: &HashMap<String, GroupId>,
    tool_names: &HashMap<String, ToolName>,
    errors: &mut Vec<ImportError>,
) -> (Vec<ToolDefinition>, Vec<ImportedGroup>) {
    let mut groups: Vec<ImportedGroup> = Vec::new();
    for line in group_lines {
        if let Some(id) = group_ids.get(&line.original)
            && !groups.iter().any(|group| group.id == *id)
        {
            groups.push(ImportedGroup {
                id: id.clone(),
                description: line.description,
                tools: Vec::new(),
            });
        }
    }
    let no_free_name =
        |kind: &str, original: &str| format!("no free name to load the {kind} `{original}` under");
    let mut core = Vec::new();
    for mut tool in tool_lines {
        let Some(name) = tool_names.get(&tool.original) else {
            let reason = no_free_name("tool", &tool.original);
            errors.push(line_error(tools_path, tool.line, reason));
            continue;
        };
        tool.definition.name = name.clone();
        let Some(original) = tool.group else {
            core.push(tool.definition);
            continue;
        };
        let Some(id) = group_ids.get(&original) else {
            let reason = no_free_name("group", &original);
            errors.push(line_error(tools_path, tool.line, reason));
            continue;
        };
        match groups.iter_mut().find(|group| group.id == *id) {
            Some(group) => group.tools.push(tool.definition),
            None => groups.push(ImportedGroup {
                id: id.clone(),
                description: String::new(),
                tools: vec![tool.definition],
            }),
        }
    }
    (core, groups)
}

/// Registers the core tools, then each group with its tools, counting what
/// landed in `report` and adding each collision to its errors.
fn register(
    catalog: &mut Catalog,
    tools_path: &Path,
    core: Vec<ToolDefinition>,
    groups: Vec<ImportedGroup>,
    report: &mut ImportReport,
) {
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
    for ImportedGroup {
        id,
        description,
        tools,
    } in groups
    {
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
}

/// The loaded name of each of `appearances`' names: its own when `parse`
/// accepts it, else the first of its `candidates` that no appearance has as
/// its own, no other rename took and `free_in_catalog` accepts. Refused
/// names are settled in the order of their text; each rename is added to
/// `renamed` in order of appearance. A refused name with no free candidate
/// is left out.
fn settle_names<'a, N, I>(
    appearances: &[Appearance<'a>],
    parse: impl Fn(&str) -> Result<N, NameError>,
    candidates: impl Fn(Appearance<'a>) -> I,
    free_in_catalog: impl Fn(&N) -> bool,
    renamed: &mut Vec<ImportRename<N>>,
) -> HashMap<String, N>
where
    N: Clone + Eq + Hash,
    I: Iterator<Item = N>,
{
    let mut loaded = HashMap::new();
    let mut refused = Vec::new();
    for appearance in appearances {
        match parse(appearance.original) {
            Ok(name) => {
                loaded.insert(appearance.original.to_owned(), name);
            }
            Err(reason) => refused.push((*appearance, reason)),
        }
    }
    let mut taken: HashSet<N> = loaded.values().cloned().collect();
    let mut by_text: Vec<&(Appearance<'a>, NameError)> = refused.iter().collect();
    by_text.sort_by_key(|(appearance, _)| appearance.original);
    let mut given = HashMap::new();
    for (appearance, _) in by_text {
        let name =
            candidates(*appearance).find(|name| !taken.contains(name) && free_in_catalog(name));
        if let Some(name) = name {
            taken.insert(name.clone());
            given.insert(appearance.original, name);
        }
    }
    for (appearance, reason) in refused {
        if let Some(name) = given.remove(appearance.original) {
            loaded.insert(appearance.original.to_owned(), name.clone());
            renamed.push(ImportRename {
                path: appearance.path.to_path_buf(),
                line: appearance.line,
                original: appearance.original.to_owned(),
                loaded: name,
                reason,
            });
        }
    }
    loaded
}

/// Non-blank lines with their one-based numbers.
fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
}

/// A tool line, its definition checked before its name is settled, so a
/// line skipped for its schema takes no name from another.
fn parse_tool_line(number: usize, line: &str) -> Result<ToolLine, String> {
    let raw: RawImportTool = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let name = ToolName::new(raw.name.as_str())
        .unwrap_or_else(|_| ToolName::new_unchecked(UNSETTLED_NAME));
    let schema = raw.parameters.unwrap_or_else(|| Value::Object(Map::new()));
    let definition = ToolDefinition::new(name, raw.description, schema)
        .map_err(|error| format!("tool `{}`: {error}", raw.name))?;
    Ok(ToolLine {
        line: number,
        original: raw.name,
        definition,
        group: raw.group.filter(|group| !group.trim().is_empty()),
    })
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
