//! JSON tool manifests: directories of `*.json` files.
//!
//! - A file holding one object is a single core tool.
//! - A file holding an array is a group named after the file
//!   (`google_gmail.json` -> `google_gmail`). Its first element may be a `_meta`
//!   entry (`{"_meta": true, "display_name": ..., "description": ...}`): group
//!   metadata, never a tool. Missing metadata is generated: the display name is
//!   the file name in Title Case, the description lists the tool names.
//! - A bad file is reported with its path and reason and skipped; the others
//!   still load. Each file registers all-or-nothing, so a skipped file leaves no
//!   trace in the catalog. So is a `*.json` entry that cannot be read (a
//!   symbolic link loop, a link to nothing, no permission) or is no regular
//!   file (a named pipe, socket or device, never opened); a directory named
//!   `*.json` is not a manifest and is passed over. Directories are not
//!   searched recursively.
//!
//! Files are read in name order within each directory, so which of two
//! colliding files wins does not depend on the file system.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::Catalog;
use crate::error::{ManifestError, ManifestErrorReason};
use crate::group::{ToolGroup, generated_group_description};
use crate::name::{GroupId, title_case};
use crate::origin::Origin;
use crate::tool::{ToolAnnotations, ToolDefinition, definition_from_parts, json_type};

/// One tool entry as written in a manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifestTool {
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default, alias = "inputSchema", alias = "input_schema")]
    parameters: Option<Value>,
    /// The JavaScript function that implements the tool; kept for the executor.
    #[serde(default)]
    function: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    annotations: Option<ToolAnnotations>,
}

/// The `_meta` entry of a group manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroupMeta {
    #[serde(rename = "_meta")]
    _meta: bool,
    display_name: Option<String>,
    description: Option<String>,
}

/// A parsed manifest tool: its definition and the JavaScript function it names.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestTool {
    /// The definition.
    pub definition: ToolDefinition,
    /// The JavaScript function named by the entry, if any.
    pub function: Option<String>,
}

/// A parsed manifest file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Manifest {
    /// A file holding one object: a core tool.
    CoreTool(ManifestTool),
    /// A file holding an array: a group and its tools.
    Group {
        /// Metadata from `_meta` or generated.
        group: ToolGroup,
        /// The tools, in file order.
        tools: Vec<ManifestTool>,
    },
}

/// What loading manifest directories did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ManifestReport {
    /// Files registered.
    pub loaded: Vec<PathBuf>,
    /// Files (or directories) skipped, with the reason.
    pub errors: Vec<ManifestError>,
}

/// Loads every `*.json` file of each directory into `catalog`.
pub fn load_manifest_dirs<P: AsRef<Path>>(catalog: &mut Catalog, dirs: &[P]) -> ManifestReport {
    let mut report = ManifestReport::default();
    for dir in dirs {
        let dir = dir.as_ref();
        let files = match scan_manifest_dir(dir) {
            Ok(files) => files,
            Err(error) => {
                report.errors.push(ManifestError {
                    path: dir.to_path_buf(),
                    reason: ManifestErrorReason::Io(error.to_string()),
                });
                continue;
            }
        };
        for ManifestFile { path, manifest } in files {
            match manifest.and_then(|manifest| register_manifest(catalog, &path, manifest)) {
                Ok(()) => report.loaded.push(path),
                Err(reason) => report.errors.push(ManifestError { path, reason }),
            }
        }
    }
    report
}

/// One `*.json` entry of a manifests directory, parsed or not.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    /// Its path: the directory joined with the file name (the directory
    /// itself for an entry the directory listing failed on).
    pub path: PathBuf,
    /// What it holds, or why it cannot be used.
    pub manifest: Result<Manifest, ManifestErrorReason>,
}

/// Reads and parses every `*.json` entry of `dir`, in name order, without
/// registering anything: what [`load_manifest_dirs`] loads, for a caller
/// that compares it with what it loaded before (a reload). `Err` when the
/// directory itself cannot be listed.
pub fn scan_manifest_dir(dir: &Path) -> std::io::Result<Vec<ManifestFile>> {
    let entries = manifest_entries(dir)?;
    Ok(entries
        .into_iter()
        .map(|(path, usable)| {
            let manifest = usable.and_then(|()| read_manifest_file(&path));
            ManifestFile { path, manifest }
        })
        .collect())
}

/// The `*.json` entries of `dir` in name order, each with whether it is a
/// file to load or why it cannot be (directories left out). An entry the
/// directory listing itself fails on is reported under `dir`.
fn manifest_entries(
    dir: &Path,
) -> std::io::Result<Vec<(PathBuf, Result<(), ManifestErrorReason>)>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(error) => {
                entries.push((
                    dir.to_path_buf(),
                    Err(ManifestErrorReason::Io(error.to_string())),
                ));
                continue;
            }
        };
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        // Links are followed: a manifest may be a symbolic link to one.
        let usable = match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(()),
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => Err(ManifestErrorReason::NotAFile),
            Err(error) => Err(unreadable(&path, &error)),
        };
        entries.push((path, usable));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// Why the entry at `path` cannot be read: a link to nothing is said so;
/// otherwise the system's reason (a symbolic link loop: "Too many levels of
/// symbolic links").
fn unreadable(path: &Path, error: &std::io::Error) -> ManifestErrorReason {
    let is_link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    if is_link && error.kind() == std::io::ErrorKind::NotFound {
        ManifestErrorReason::BrokenLink
    } else {
        ManifestErrorReason::Io(error.to_string())
    }
}

/// Reads and parses the manifest at `path`, its file stem naming its group.
fn read_manifest_file(path: &Path) -> Result<Manifest, ManifestErrorReason> {
    let text = fs::read_to_string(path).map_err(|e| ManifestErrorReason::Io(e.to_string()))?;
    let group_name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse_manifest(&group_name, &text)
}

/// Registers the manifest read from `path` into `catalog`, all or nothing:
/// a core tool, or a group with its tools. Each origin names the file (and
/// each tool's function).
pub fn register_manifest(
    catalog: &mut Catalog,
    path: &Path,
    manifest: Manifest,
) -> Result<(), ManifestErrorReason> {
    let origin_of = |function: Option<String>| Origin::Manifest {
        path: path.to_path_buf(),
        function,
    };
    match manifest {
        Manifest::CoreTool(tool) => {
            catalog.register_tool(tool.definition, None, origin_of(tool.function))
        }
        Manifest::Group { group, tools } => {
            let tools = tools
                .into_iter()
                .map(|tool| (tool.definition, origin_of(tool.function)));
            catalog.register_group_with_tools(group, origin_of(None), tools.collect())
        }
    }
    .map_err(|error| ManifestErrorReason::Catalog(Box::new(error)))
}

/// Parses one manifest's text. `group_name` (the file stem) names the group
/// when the manifest is an array.
pub fn parse_manifest(group_name: &str, text: &str) -> Result<Manifest, ManifestErrorReason> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ManifestErrorReason::Json(e.to_string()))?;
    match value {
        Value::Object(_) => {
            if value.get("_meta").is_some() {
                return Err(entry_error(
                    0,
                    "a `_meta` entry belongs in a group array, not alone",
                ));
            }
            Ok(Manifest::CoreTool(parse_tool(0, value)?))
        }
        Value::Array(entries) => parse_group(group_name, entries),
        other => Err(ManifestErrorReason::Shape(json_type(&other))),
    }
}

fn parse_group(group_name: &str, entries: Vec<Value>) -> Result<Manifest, ManifestErrorReason> {
    let id = GroupId::new(group_name).map_err(ManifestErrorReason::GroupName)?;
    let mut meta = None;
    let mut tools: Vec<ManifestTool> = Vec::with_capacity(entries.len());
    // One lookup per tool: a manifest of n tools costs n, not n^2.
    let mut names = HashSet::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        if entry.get("_meta").is_some() {
            if index != 0 {
                return Err(entry_error(
                    index,
                    "a `_meta` entry must be the first element",
                ));
            }
            let raw: RawGroupMeta =
                serde_json::from_value(entry).map_err(|e| entry_error(index, e.to_string()))?;
            if !raw._meta {
                return Err(entry_error(index, "`_meta` must be true"));
            }
            meta = Some(raw);
            continue;
        }
        let tool = parse_tool(index, entry)?;
        if !names.insert(tool.definition.name.clone()) {
            return Err(entry_error(
                index,
                format!("duplicate tool name `{}`", tool.definition.name),
            ));
        }
        tools.push(tool);
    }
    let (display_name, description) = meta
        .map(|meta| (meta.display_name, meta.description))
        .unwrap_or_default();
    let display_name = display_name
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| title_case(group_name));
    let description = description
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| {
            generated_group_description(tools.iter().map(|tool| tool.definition.name.as_str()))
        });
    Ok(Manifest::Group {
        group: ToolGroup::new(id, display_name, description),
        tools,
    })
}

fn parse_tool(index: usize, entry: Value) -> Result<ManifestTool, ManifestErrorReason> {
    if !entry.is_object() {
        return Err(entry_error(
            index,
            format!("a tool must be an object, not {}", json_type(&entry)),
        ));
    }
    let raw: RawManifestTool =
        serde_json::from_value(entry).map_err(|e| entry_error(index, e.to_string()))?;
    let name = raw
        .name
        .ok_or_else(|| entry_error(index, "missing `name`"))?;
    let mut definition = definition_from_parts(name, raw.description, raw.parameters)
        .map_err(|problem| entry_error(index, problem))?;
    definition.annotations = raw.annotations;
    definition.timeout = raw.timeout_seconds.map(Duration::from_secs);
    Ok(ManifestTool {
        definition,
        function: raw.function,
    })
}

fn entry_error(index: usize, problem: impl Into<String>) -> ManifestErrorReason {
    ManifestErrorReason::Entry {
        index,
        problem: problem.into(),
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
