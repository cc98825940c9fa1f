//! The `files` group: list, read and search files under one root directory,
//! and write them when the root is writable. Nothing outside the root is
//! reachable: the root is held open, and every path is opened beneath that
//! handle (`files/root.rs`), symbolic links followed and judged on the way,
//! with no gap between the check and the open, so another process swapping
//! a link in cannot lead a call outside. A search walks directories through
//! their handles too. Only regular files and directories are used: a named
//! pipe, socket or device is refused before it is opened, since opening one
//! can block a thread that no deadline stops.
//!
//! The JavaScript host's `files.*` calls `Files::read`, `Files::list`
//! and `Files::write`: one resolver serves both.

#[cfg_attr(not(unix), path = "files/root_other.rs")]
mod root;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::ToolDefinition;

use super::arguments::{definition, optional_count, optional_string, string_argument};
use crate::error::ToolboxError;
use crate::output::ToolOutput;
use root::{Directory, EntryKind, Opened, Refusal, Resolution, RootDir, Special};

pub(super) const GROUP: &str = "files";
pub(super) const DISPLAY_NAME: &str = "Files";
pub(super) const DESCRIPTION: &str = "List, read and search files under the files root";

const LIST: &str = "files_list";
const READ: &str = "files_read";
const SEARCH: &str = "files_search";
const WRITE: &str = "files_write";

/// The answer for any path that leads outside the root, the same whether it
/// exists or not.
const OUTSIDE_ROOT: &str = "Parameter 'path' is outside the files root.";

/// Largest file `files_read` returns or `files_search` looks into.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most entries `files_list` returns.
const MAX_LIST_ENTRIES: usize = 1000;
/// Default and largest number of `files_search` matches.
const DEFAULT_SEARCH_RESULTS: usize = 50;
const MAX_SEARCH_RESULTS: usize = 500;

/// Whether the `files` tools may change anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilesAccess {
    /// List, read and search only.
    ReadOnly,
    /// Also `files_write`.
    ReadWrite,
}

/// The `files` tools over one root, held open: clones share the handle.
#[derive(Clone, Debug)]
pub(crate) struct Files {
    root: Arc<RootDir>,
    access: FilesAccess,
}

impl Files {
    /// Opens `root`, which must be canonical, for the tools' lifetime.
    pub(crate) fn new(root: PathBuf, access: FilesAccess) -> Result<Self, ToolboxError> {
        Self::resolving(root, access, Resolution::native())
    }

    fn resolving(
        root: PathBuf,
        access: FilesAccess,
        resolution: Resolution,
    ) -> Result<Self, ToolboxError> {
        match RootDir::open(root.clone(), resolution) {
            Ok(root) => Ok(Self {
                root: Arc::new(root),
                access,
            }),
            Err(source) => Err(ToolboxError::FilesRoot { path: root, source }),
        }
    }

    /// Whether `files_write` (and a JavaScript tool's `files.write`) may
    /// write.
    pub(crate) fn writable(&self) -> bool {
        self.access == FilesAccess::ReadWrite
    }

    pub(super) fn definitions(&self) -> Result<Vec<ToolDefinition>, ToolboxError> {
        let path = |what: &str| json!({"type": "string", "description": what});
        let mut tools = vec![
            definition(
                LIST,
                "List a directory under the files root: name, kind and size of each entry.",
                json!({
                    "type": "object",
                    "properties": {"path": path("Directory relative to the files root (default: the root)")}
                }),
            )?,
            definition(
                READ,
                "Read a UTF-8 text file under the files root, optionally a range of lines.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path("File relative to the files root"),
                        "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)"},
                        "max_lines": {"type": "integer", "minimum": 1, "description": "Most lines to return"}
                    },
                    "required": ["path"]
                }),
            )?,
            definition(
                SEARCH,
                "Search file names and text contents under the files root (case-insensitive).",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1, "description": "Text to look for"},
                        "path": path("Directory to search (default: the root)"),
                        "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS, "description": "Most matches to return (default 50)"}
                    },
                    "required": ["query"]
                }),
            )?,
        ];
        if self.access == FilesAccess::ReadWrite {
            tools.push(definition(
                WRITE,
                "Create or overwrite a text file under the files root.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path("File relative to the files root"),
                        "content": {"type": "string", "description": "The whole new content"}
                    },
                    "required": ["path", "content"]
                }),
            )?);
        }
        Ok(tools)
    }

    /// Runs a `files` tool; `None` when `tool` is not one. A search stops
    /// early once `cancel` is cancelled.
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Option<ToolOutput> {
        type Operation = fn(&Files, &Value, &CancellationToken) -> Result<ToolOutput, ToolOutput>;
        let operation: Operation = match tool {
            LIST => |files, arguments, _| files.list(arguments),
            READ => |files, arguments, _| files.read(arguments),
            SEARCH => Self::search,
            WRITE if self.access == FilesAccess::ReadWrite => {
                |files, arguments, _| files.write(arguments)
            }
            _ => return None,
        };
        let files = self.clone();
        let cancel = cancel.clone();
        let result =
            tokio::task::spawn_blocking(move || operation(&files, &arguments, &cancel)).await;
        Some(match result {
            Ok(Ok(output) | Err(output)) => output,
            Err(join) => ToolOutput::error(format!("{tool} stopped: {join}")),
        })
    }

    pub(crate) fn list(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let requested = optional_string(arguments, "path")?.unwrap_or(".");
        let relative = self.beneath(requested)?;
        let mut directory = self
            .resolve(requested, &relative)?
            .into_directory()
            .map_err(|error| io_error(requested, &error))?;
        let listed = directory
            .entries()
            .map_err(|error| io_error(requested, &error))?;
        let mut entries: Vec<_> = listed
            .into_iter()
            .map(|entry| {
                let kind = match entry.kind {
                    EntryKind::Directory => "directory",
                    EntryKind::Symlink => "symlink",
                    EntryKind::File | EntryKind::Special => "file",
                    EntryKind::Unknown => "unknown",
                };
                let size = directory.size(&entry.name).unwrap_or(0);
                (entry.name.to_string_lossy().into_owned(), kind, size)
            })
            .collect();
        entries.sort();
        let truncated = entries.len() > MAX_LIST_ENTRIES;
        entries.truncate(MAX_LIST_ENTRIES);
        let entries: Vec<Value> = entries
            .into_iter()
            .map(|(name, kind, size)| json!({"name": name, "kind": kind, "size": size}))
            .collect();
        Ok(ToolOutput::json(json!({
            "path": display(&relative),
            "entries": entries,
            "truncated": truncated,
        })))
    }

    pub(crate) fn read(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let requested = string_argument(arguments, "path")?;
        let start = optional_count(arguments, "start_line")?.unwrap_or(1).max(1);
        let max_lines = optional_count(arguments, "max_lines")?;
        let relative = self.beneath(requested)?;
        let cannot_read =
            |reason: String| ToolOutput::error(format!("Cannot read '{requested}': {reason}."));
        let file = self
            .resolve(requested, &relative)?
            .into_file()
            .map_err(|error| cannot_read(error.to_string()))?;
        let text = read_text(file).map_err(cannot_read)?;
        let lines = text.lines().skip(start - 1);
        let selected: Vec<&str> = match max_lines {
            Some(max) => lines.take(max).collect(),
            None => lines.collect(),
        };
        if start > 1 || max_lines.is_some() {
            return Ok(ToolOutput::text(selected.join("\n")));
        }
        Ok(ToolOutput::text(text))
    }

    fn search(
        &self,
        arguments: &Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolOutput> {
        /// A directory still to look into.
        enum Pending {
            Open(Directory, String),
            /// Entry `name` of `parent`, opened when its turn comes, so
            /// that only the directories on the way down are held open.
            Entry {
                parent: Rc<Directory>,
                name: std::ffi::OsString,
                path: String,
            },
        }
        let query = string_argument(arguments, "query")?;
        if query.is_empty() {
            return Err(ToolOutput::error("Parameter 'query' must not be empty."));
        }
        let requested = optional_string(arguments, "path")?.unwrap_or(".");
        let limit = optional_count(arguments, "max_results")?
            .unwrap_or(DEFAULT_SEARCH_RESULTS)
            .clamp(1, MAX_SEARCH_RESULTS);
        let relative = self.beneath(requested)?;
        let needle = query.to_lowercase();
        let mut matches = Vec::new();
        let mut pending = Vec::new();
        // A file to start from has nothing to walk.
        if let Opened::Directory(start) = self.resolve(requested, &relative)? {
            pending.push(Pending::Open(start, display(&relative)));
        }
        'walk: while let Some(next) = pending.pop() {
            if cancel.is_cancelled() {
                return Err(ToolOutput::error(format!("{SEARCH} was cancelled.")));
            }
            let (mut directory, shown) = match next {
                Pending::Open(directory, shown) => (directory, shown),
                Pending::Entry { parent, name, path } => match parent.directory(&name) {
                    Ok(directory) => (directory, path),
                    Err(_) => continue,
                },
            };
            let Ok(mut entries) = directory.entries() else {
                continue;
            };
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            let directory = Rc::new(directory);
            for entry in entries.into_iter().rev() {
                let name = entry.name.to_string_lossy().into_owned();
                // Hidden entries (.git and the like) are noise for a search.
                if name.starts_with('.') {
                    continue;
                }
                let path = if shown == "." {
                    name.clone()
                } else {
                    format!("{shown}/{name}")
                };
                if name.to_lowercase().contains(&needle) {
                    matches.push(json!({"path": path, "match": "name"}));
                }
                if entry.kind == EntryKind::File
                    && let Some(text) = directory
                        .file(&entry.name)
                        .ok()
                        .and_then(|file| read_text(file).ok())
                {
                    content_matches(&text, &path, &needle, limit, &mut matches);
                    if matches.len() >= limit {
                        break 'walk;
                    }
                }
                if entry.kind == EntryKind::Directory {
                    pending.push(Pending::Entry {
                        parent: Rc::clone(&directory),
                        name: entry.name,
                        path,
                    });
                }
                if matches.len() >= limit {
                    break 'walk;
                }
            }
        }
        let truncated = matches.len() >= limit;
        Ok(ToolOutput::json(json!({
            "query": query,
            "matches": matches,
            "truncated": truncated,
        })))
    }

    pub(crate) fn write(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let requested = string_argument(arguments, "path")?;
        let content = string_argument(arguments, "content")?;
        let relative = self.beneath(requested)?;
        let Some(file_name) = relative.file_name() else {
            return Err(ToolOutput::error(format!(
                "Parameter 'path': '{requested}' does not name a file."
            )));
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let directory = self
            .resolve(&display(parent), parent)?
            .into_directory()
            .map_err(|error| io_error(requested, &error))?;
        let mut file = directory
            .create_file(file_name)
            .map_err(|refusal| refused(requested, refusal))?;
        file.write_all(content.as_bytes())
            .map_err(|error| io_error(requested, &error))?;
        Ok(ToolOutput::json(json!({
            "path": display(&relative),
            "bytes_written": content.len(),
        })))
    }

    /// `requested` as a path beneath the root, or the answer for one that
    /// leads outside.
    fn beneath(&self, requested: &str) -> Result<PathBuf, ToolOutput> {
        self.root
            .beneath(requested)
            .map_err(|refusal| refused(requested, refusal))
    }

    /// What `relative` leads to, open. A path that leads outside the root
    /// gets one answer, [`OUTSIDE_ROOT`], whether or not it exists, so no
    /// answer tells what exists outside.
    fn resolve(&self, requested: &str, relative: &Path) -> Result<Opened, ToolOutput> {
        self.root
            .resolve(relative)
            .map_err(|refusal| refused(requested, refusal))
    }
}

/// A path as the model sees it: relative to the root, `/`-separated.
fn display(relative: &Path) -> String {
    let text = relative.to_string_lossy().into_owned();
    if text.is_empty() {
        ".".to_owned()
    } else {
        text
    }
}

fn read_text(file: File) -> Result<String, String> {
    let size = file.metadata().map_err(|error| error.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "it is {size} bytes, more than the {MAX_FILE_BYTES}-byte limit"
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

/// The answer for a path the root did not open.
fn refused(requested: &str, refusal: Refusal) -> ToolOutput {
    match refusal {
        Refusal::Outside => ToolOutput::error(OUTSIDE_ROOT),
        Refusal::Special(kind) => ToolOutput::error(format!(
            "Cannot use '{requested}': it is {}, not a regular file or directory.",
            special_kind(kind)
        )),
        Refusal::LinkOrDirectory => ToolOutput::error(format!(
            "Cannot write '{requested}': it is a directory or a symbolic link."
        )),
        Refusal::Io(error) => io_error(requested, &error),
    }
}

/// What a special file is, with its article.
fn special_kind(kind: Special) -> &'static str {
    match kind {
        Special::Fifo => "a named pipe (FIFO)",
        Special::Socket => "a socket",
        Special::Device => "a device",
        Special::Other => "a special file",
    }
}

fn io_error(requested: &str, error: &std::io::Error) -> ToolOutput {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        _ => error.to_string(),
    };
    ToolOutput::error(format!("Cannot use '{requested}': {reason}."))
}

/// The lines of `text` (the file at `path`) holding `needle` (lowercase),
/// added to `matches` as content matches until it holds `limit`.
fn content_matches(text: &str, path: &str, needle: &str, limit: usize, matches: &mut Vec<Value>) {
    for (number, line) in text.lines().enumerate() {
        if matches.len() >= limit {
            return;
        }
        if line.to_lowercase().contains(needle) {
            matches.push(json!({
                "path": path,
                "match": "content",
                "line": number + 1,
                "text": line.trim(),
            }));
        }
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
