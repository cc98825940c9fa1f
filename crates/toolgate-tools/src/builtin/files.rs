//! The `files` group: list, read and search files under one root directory,
//! and write them when the root is writable. Nothing outside the root is
//! reachable: every path is resolved (symbolic links included) and checked.
//! Only regular files and directories are used: a named pipe, socket or
//! device is refused before it is opened, since opening one can block a
//! thread that no deadline stops.

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_core::ToolDefinition;

use super::{definition, optional_count, optional_string, string_argument};
use crate::error::ToolboxError;
use crate::output::ToolOutput;

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
/// Most symbolic links followed in one path.
const MAX_LINKS: usize = 40;

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

#[derive(Clone, Debug)]
pub(crate) struct Files {
    root: PathBuf,
    access: FilesAccess,
}

impl Files {
    /// `root` must be canonical.
    pub(crate) fn new(root: PathBuf, access: FilesAccess) -> Self {
        Self { root, access }
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
        let files = Self {
            root: self.root.clone(),
            access: self.access,
        };
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
        let directory = self.resolve_existing(requested)?;
        let read = fs::read_dir(&directory).map_err(|error| io_error(requested, &error))?;
        let mut entries = Vec::new();
        for entry in read {
            let entry = entry.map_err(|error| io_error(requested, &error))?;
            let kind = match entry.file_type() {
                Ok(kind) if kind.is_dir() => "directory",
                Ok(kind) if kind.is_symlink() => "symlink",
                Ok(_) => "file",
                Err(_) => "unknown",
            };
            let size = entry.metadata().map(|meta| meta.len()).unwrap_or(0);
            entries.push((entry.file_name().to_string_lossy().into_owned(), kind, size));
        }
        entries.sort();
        let truncated = entries.len() > MAX_LIST_ENTRIES;
        entries.truncate(MAX_LIST_ENTRIES);
        let entries: Vec<Value> = entries
            .into_iter()
            .map(|(name, kind, size)| json!({"name": name, "kind": kind, "size": size}))
            .collect();
        Ok(ToolOutput::json(json!({
            "path": self.display(&directory),
            "entries": entries,
            "truncated": truncated,
        })))
    }

    pub(crate) fn read(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let requested = string_argument(arguments, "path")?;
        let start = optional_count(arguments, "start_line")?.unwrap_or(1).max(1);
        let max_lines = optional_count(arguments, "max_lines")?;
        let path = self.resolve_existing(requested)?;
        let text = read_text(&path)
            .map_err(|reason| ToolOutput::error(format!("Cannot read '{requested}': {reason}.")))?;
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
        let query = string_argument(arguments, "query")?;
        if query.is_empty() {
            return Err(ToolOutput::error("Parameter 'query' must not be empty."));
        }
        let requested = optional_string(arguments, "path")?.unwrap_or(".");
        let limit = optional_count(arguments, "max_results")?
            .unwrap_or(DEFAULT_SEARCH_RESULTS)
            .clamp(1, MAX_SEARCH_RESULTS);
        let start = self.resolve_existing(requested)?;
        let needle = query.to_lowercase();
        let mut matches = Vec::new();
        let mut pending = vec![start];
        'walk: while let Some(directory) = pending.pop() {
            if cancel.is_cancelled() {
                return Err(ToolOutput::error(format!("{SEARCH} was cancelled.")));
            }
            let Ok(read) = fs::read_dir(&directory) else {
                continue;
            };
            let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
            entries.sort_by_key(fs::DirEntry::file_name);
            for entry in entries.into_iter().rev() {
                let name = entry.file_name().to_string_lossy().into_owned();
                // Hidden entries (.git and the like) are noise for a search.
                if name.starts_with('.') {
                    continue;
                }
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    pending.push(path.clone());
                }
                if name.to_lowercase().contains(&needle) {
                    matches.push(json!({"path": self.display(&path), "match": "name"}));
                }
                if kind.is_file()
                    && let Ok(text) = read_text(&path)
                {
                    for (number, line) in text.lines().enumerate() {
                        if matches.len() >= limit {
                            break 'walk;
                        }
                        if line.to_lowercase().contains(&needle) {
                            matches.push(json!({
                                "path": self.display(&path),
                                "match": "content",
                                "line": number + 1,
                                "text": line.trim(),
                            }));
                        }
                    }
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
        let relative = Path::new(requested);
        let Some(file_name) = relative.file_name() else {
            return Err(ToolOutput::error(format!(
                "Parameter 'path': '{requested}' does not name a file."
            )));
        };
        let parent = relative.parent().filter(|p| !p.as_os_str().is_empty());
        let directory =
            self.resolve_existing(&parent.unwrap_or(Path::new(".")).to_string_lossy())?;
        let path = directory.join(file_name);
        if let Ok(meta) = fs::symlink_metadata(&path) {
            let kind = meta.file_type();
            if kind.is_dir() || kind.is_symlink() {
                return Err(ToolOutput::error(format!(
                    "Cannot write '{requested}': it is a directory or a symbolic link."
                )));
            }
            if !kind.is_file() {
                return Err(not_a_file(requested, kind));
            }
        }
        fs::write(&path, content).map_err(|error| io_error(requested, &error))?;
        Ok(ToolOutput::json(json!({
            "path": self.display(&path),
            "bytes_written": content.len(),
        })))
    }

    /// An existing path under the root, symbolic links followed. A path
    /// that leads outside the root gets one answer, [`OUTSIDE_ROOT`],
    /// whether or not it exists, so no answer tells what exists outside.
    fn resolve_existing(&self, requested: &str) -> Result<PathBuf, ToolOutput> {
        let outside = || ToolOutput::error(OUTSIDE_ROOT);
        let candidate = Path::new(requested);
        // `..` is refused before the file system is touched.
        if !candidate.is_absolute()
            && candidate
                .components()
                .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(outside());
        }
        let joined = if candidate.is_absolute() {
            candidate.to_path_buf()
        } else {
            self.root.join(candidate)
        };
        if !leads_to(&joined).starts_with(&self.root) {
            return Err(outside());
        }
        let resolved = joined
            .canonicalize()
            .map_err(|error| io_error(requested, &error))?;
        if !resolved.starts_with(&self.root) {
            return Err(outside());
        }
        let kind = fs::metadata(&resolved)
            .map_err(|error| io_error(requested, &error))?
            .file_type();
        if kind.is_file() || kind.is_dir() {
            Ok(resolved)
        } else {
            Err(not_a_file(requested, kind))
        }
    }

    /// A path as the model sees it: relative to the root, `/`-separated.
    fn display(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let text = relative.to_string_lossy().replace('\\', "/");
        if text.is_empty() {
            ".".to_owned()
        } else {
            text
        }
    }
}

/// Where an absolute `path` leads: each symbolic link followed (at most
/// [`MAX_LINKS`] of them, as the kernel does) for as long as the path
/// exists, the rest taken as written, `..` applied. Unlike `canonicalize`,
/// it answers for a path that does not exist, so a missing path is judged
/// inside or outside the root like an existing one.
fn leads_to(path: &Path) -> PathBuf {
    /// One step of a path still to walk.
    enum Step {
        Prefix(OsString),
        Root(OsString),
        Up,
        Name(OsString),
    }
    fn steps(path: &Path) -> Vec<Step> {
        let mut steps: Vec<Step> = path
            .components()
            .filter_map(|component| match component {
                Component::Prefix(prefix) => Some(Step::Prefix(prefix.as_os_str().to_owned())),
                Component::RootDir => Some(Step::Root(component.as_os_str().to_owned())),
                Component::CurDir => None,
                Component::ParentDir => Some(Step::Up),
                Component::Normal(name) => Some(Step::Name(name.to_owned())),
            })
            .collect();
        steps.reverse();
        steps
    }
    let mut pending = steps(path);
    let mut links = 0;
    let mut at = PathBuf::new();
    while let Some(step) = pending.pop() {
        match step {
            Step::Prefix(prefix) => at = PathBuf::from(prefix),
            Step::Root(root) => at.push(root),
            Step::Up => {
                at.pop();
            }
            Step::Name(name) => {
                let next = at.join(&name);
                match fs::read_link(&next) {
                    // A relative target goes on from the link's directory,
                    // `at`; an absolute one starts over.
                    Ok(target) if links < MAX_LINKS => {
                        links += 1;
                        pending.extend(steps(&target));
                    }
                    _ => at = next,
                }
            }
        }
    }
    at
}

fn read_text(path: &Path) -> Result<String, String> {
    let file = fs::File::open(path).map_err(|error| error.to_string())?;
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

/// The answer for a path that is neither a regular file nor a directory.
fn not_a_file(requested: &str, kind: fs::FileType) -> ToolOutput {
    ToolOutput::error(format!(
        "Cannot use '{requested}': it is {}, not a regular file or directory.",
        special_kind(kind)
    ))
}

/// What a special file is, with its article.
fn special_kind(kind: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    let _ = kind;
    "a special file"
}

fn io_error(requested: &str, error: &std::io::Error) -> ToolOutput {
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        _ => error.to_string(),
    };
    ToolOutput::error(format!("Cannot use '{requested}': {reason}."))
}
