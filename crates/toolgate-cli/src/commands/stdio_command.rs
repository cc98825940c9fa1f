//! The command a client that starts its servers itself (Claude Desktop, an
//! SDK's stdio client) runs to get the gateway `toolgate serve` is serving:
//! the binary by its absolute path, `serve --stdio`, and every option that
//! decides what is served and that such a client could not know, with
//! absolute paths. A desktop app starts its servers in `/`, from no shell:
//! without them the gateway it starts would read no `toolgate.toml`, find
//! no `./tools`, and root the `files` tools elsewhere.

use std::path::{Path, PathBuf};

use toolgate_tools::{FilesAccess, FilesRoot, ToolboxOptions};

use crate::cli::{DEFAULT_SEARCH_ABOVE_GROUPS, ServeArgs};
use crate::settings::Settings;

/// A program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StdioCommand {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
}

impl StdioCommand {
    /// The command serving over stdio what `args`, `settings` and the
    /// toolbox options `tools` (as the gateway was started with them) serve,
    /// by the binary running now.
    pub(crate) fn of(args: &ServeArgs, settings: &Settings, tools: &ToolboxOptions) -> Self {
        // The binary running now, by its absolute path: a client that starts
        // its servers itself finds it whatever its own PATH holds.
        let program = std::env::current_exe()
            .ok()
            .and_then(|path| path.to_str().map(str::to_owned))
            .unwrap_or_else(|| "toolgate".to_owned());
        let mut command = Self {
            program,
            args: vec!["serve".into(), "--stdio".into()],
        };
        if let Some(path) = settings.path() {
            command.path("--config", path);
        }
        for path in &args.tools.mcp_config {
            command.path("--mcp-config", path);
        }
        // The directories in use: the default ./tools included.
        for dir in &tools.manifest_dirs {
            command.path("--manifests", dir);
        }
        for path in &args.tools.jsonl {
            command.path("--jsonl", path);
        }
        if tools.builtins.is_none() {
            command.args.push("--no-builtins".into());
        }
        // What the files tools (or, without them, JavaScript tools) reach:
        // the same directory, resolved; nothing when it was withheld.
        let reach = tools.script_reach.as_ref().or(tools.builtins.as_ref());
        if let Some(reach) = reach
            && let FilesRoot::Dir(dir) = &reach.files_root
        {
            let root = dir.canonicalize().unwrap_or_else(|_| absolute(dir));
            command.path("--files-root", &root);
            if reach.files_access == FilesAccess::ReadWrite {
                command.args.push("--allow-write".into());
            }
        }
        if args.route {
            command.args.push("--route".into());
        }
        if args.search_above_groups != DEFAULT_SEARCH_ABOVE_GROUPS {
            command.args.push("--search-above-groups".into());
            command.args.push(args.search_above_groups.to_string());
        }
        if let Some(path) = &args.audit_log {
            command.path("--audit-log", path);
        }
        command
    }

    /// Adds `option` with `path` made absolute.
    pub(crate) fn path(&mut self, option: &str, path: &Path) {
        self.args.push(option.to_owned());
        self.args
            .push(absolute(path).to_string_lossy().into_owned());
    }

    /// The command as a shell runs it, each word quoted when it needs to be.
    pub(crate) fn shell(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|word| shell_word(word))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The `mcpServers` entry of a Claude-Desktop-style configuration.
    pub(crate) fn desktop_entry(&self) -> serde_json::Value {
        serde_json::json!({
            "mcpServers": {"toolgate": {"command": self.program, "args": self.args}}
        })
    }
}

/// `path` as an absolute path (as it is, when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `word` for a POSIX shell: as it is when it holds nothing the shell reads
/// specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "stdio_command_tests.rs"]
mod tests;
