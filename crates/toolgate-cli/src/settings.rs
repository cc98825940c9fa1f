//! `toolgate.toml`, read once. The command line is the only owner of the
//! file: it reads it here, each section into the type of the crate that uses
//! it (`[[upstream]]` for toolgate-mcp, `[groups]`, `[aliases]`, `[web]` and
//! `[tools]` for toolgate-tools, `[routing]` for toolgate-core, `[model]` for
//! toolgate-llm, `[agent]` for `toolgate chat`), and hands each its own.
//!
//! An error names the file, the line and the table or key at fault.
//! Unknown tables and keys are errors, so a typo is never silently ignored.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolgate_agent::Compaction;
use toolgate_core::routing::{DEFAULT_ROUTE_TOOLS, RoutingConfig, RoutingError, Taxonomy};
use toolgate_core::{
    Catalog, DEFAULT_CONTEXT_WINDOW, Deferral, LoadBudget, LoadedSchemas, ToolPolicy,
};
use toolgate_llm::{ModelSettings, ToolCalls};
use toolgate_mcp::config::{UpstreamConfig, UpstreamTransport};
use toolgate_mcp::{ClientName, Clients, OAuthSettings, RateLimitSettings};
use toolgate_tools::ToolSettings;

use self::routing::RoutingPlaces;
use crate::commands::telemetry::TelemetrySettings;

mod parse;
mod raw;
mod routing;

/// The configuration file read when `--config` is not given, if it exists.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "toolgate.toml";

/// The `[agent]` table: the agent `toolgate chat` speaks as, created from it
/// on first use, and how its conversations are compacted.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AgentSettings {
    /// Its id (default `default`).
    pub(crate) id: Option<String>,
    /// Its name.
    pub(crate) name: Option<String>,
    /// Its system prompt.
    pub(crate) system_prompt: Option<String>,
    /// Other prompts, by type.
    pub(crate) prompts: BTreeMap<String, String>,
    /// The groups and tools it may use; empty: all of them.
    pub(crate) tools: Vec<String>,
    /// `compact_at`: the share of the model's context window past which a
    /// conversation is compacted (checked: at most 1; 0 turns it off);
    /// [`DEFAULT_COMPACT_AT`] when not set.
    pub(crate) compact_at: Option<f64>,
}

/// The `[agent] compact_at` of a file that sets none: compaction leaves a
/// fifth of the window for the summary call's answer and the next turn.
pub(crate) const DEFAULT_COMPACT_AT: f64 = 0.8;

impl AgentSettings {
    /// When the agent loop compacts by itself: past `compact_at` of the
    /// model's window ([`DEFAULT_COMPACT_AT`] when not set), never at 0.
    pub(crate) fn compaction(&self) -> Compaction {
        match self.compact_at.unwrap_or(DEFAULT_COMPACT_AT) {
            share if share > 0.0 => Compaction::AtShare(share),
            _ => Compaction::Off,
        }
    }
}

/// Every section of the configuration, checked, with the file it came from.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// The file, when there is one.
    pub(crate) file: Option<SettingsFile>,
    /// `[[upstream]]`: the MCP servers.
    pub(crate) upstreams: Vec<UpstreamConfig>,
    /// `[groups]`, `[aliases]`, `[web]` and `[tools]`.
    pub(crate) tools: ToolSettings,
    /// `[tools] loaded_schemas`: where a loaded group's schemas go, for
    /// `toolgate chat` and `toolgate serve`; `None` when not set, each
    /// command then taking its own default ([`Self::chat_loaded_schemas`],
    /// [`Self::gateway_loaded_schemas`]).
    pub(crate) loaded_schemas: Option<LoadedSchemas>,
    /// `[tools] max_loaded_tokens`: the bound on the tokens of the loaded
    /// groups' schemas, for `toolgate chat` and `toolgate serve`.
    pub(crate) load_budget: LoadBudget,
    /// `[tools] defer` and `defer_share`: when `toolgate chat` and
    /// `toolgate serve` defer the tools or send them all.
    pub(crate) deferral: Deferral,
    /// `[tools] context_window`: the model's context window `toolgate
    /// serve` assumes for `defer_share` ([`Self::gateway_context_window`]).
    pub(crate) context_window: Option<usize>,
    /// `[routing]`: checked but for the groups it names, which
    /// [`Settings::routing_taxonomy`] checks against the catalog.
    pub(crate) routing: RoutingConfig,
    /// Where `[routing]`'s parts sit in the file, for its errors.
    routing_places: RoutingPlaces,
    /// `[model]`.
    pub(crate) model: ModelSettings,
    /// `[agent]`.
    pub(crate) agent: AgentSettings,
    /// `[store]`.
    pub(crate) store: StoreSettings,
    /// `[clients.<name>]`: who may use the HTTP gateway, each with a token.
    pub(crate) clients: Clients,
    /// `[audit]`.
    pub(crate) audit: AuditSettings,
    /// `[rate_limits]` and each client's `rate_limit`.
    pub(crate) rate_limits: RateLimitSettings,
    /// Each client's allow and deny lists, for those that have any.
    pub(crate) policies: HashMap<ClientName, ToolPolicy>,
    /// `[auth.oauth]`: bearer JWTs from an identity provider.
    pub(crate) oauth: Option<OAuthSettings>,
    /// `[telemetry]`: where spans go.
    pub(crate) telemetry: TelemetrySettings,
}

/// `[store]`: where conversations live when `--store` does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreSettings {
    /// A PostgreSQL URI (`postgres://...`) or a SQLite file's path.
    #[serde(default)]
    pub(crate) url: Option<String>,
    /// A file holding the PostgreSQL password (relative to the
    /// configuration file), when the URI has none; else `PGPASSWORD`.
    #[serde(default)]
    pub(crate) password_file: Option<PathBuf>,
    /// PostgreSQL connections per process, at most (default 16).
    #[serde(default)]
    pub(crate) pool_size: Option<usize>,
}

/// A configuration file as read.
#[derive(Debug)]
pub(crate) struct SettingsFile {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its text.
    pub(crate) text: String,
    /// Where the `[agent] tools` array sits in the text, for `toolgate
    /// migrate` to rewrite it in place.
    pub(crate) agent_tools: Option<Range<usize>>,
}

/// A configuration that does not check: the file, the line (when one is at
/// fault), the table or key, and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SettingsError {
    path: PathBuf,
    line: Option<usize>,
    place: Option<String>,
    reason: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(place) = &self.place {
            write!(f, ": {place}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// Where `toolgate chat` puts loaded schemas for a model making
    /// `tool_calls`, unless set: the conversation, which the episode cost
    /// chose (the tool list, and with it the provider's cached prefix, stays
    /// the same on every turn: 4-22 points of all-tools' bill less with a
    /// busy cache, 1-4 with light traffic, 0-2 more uncached, on seven
    /// catalogs left out). With prompted tool calls, the tool list: only a
    /// listed tool's arguments are held to its schema by the reply's
    /// `response_format`, and a real small model calling through `call_tool`
    /// kept a wrong argument name through four refusals
    /// (BENCHMARKS.md, "The local model").
    pub(crate) fn chat_loaded_schemas(&self, tool_calls: ToolCalls) -> LoadedSchemas {
        self.loaded_schemas.unwrap_or(match tool_calls {
            ToolCalls::Prompted => LoadedSchemas::ToolList,
            ToolCalls::Native | ToolCalls::PromptedText => LoadedSchemas::Conversation,
        })
    }

    /// The context window `toolgate serve` measures `defer_share` against:
    /// `[tools] context_window`, else a 200,000-token window.
    pub(crate) fn gateway_context_window(&self) -> usize {
        self.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// Where `toolgate serve` puts loaded schemas: the tool list unless set,
    /// as MCP clients expect (`tools/list` and `list_changed`).
    pub(crate) fn gateway_loaded_schemas(&self) -> LoadedSchemas {
        self.loaded_schemas.unwrap_or(LoadedSchemas::ToolList)
    }

    /// The configuration in use: `given`, else `./toolgate.toml` when it
    /// exists; the defaults when there is neither.
    pub(crate) fn load(given: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = config_file(given) else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|error| anyhow::anyhow!("reading {}: {error}", path.display()))?;
        Ok(Self::parse(text, path)?)
    }

    /// `[routing]` checked against `catalog`: every group it names must be
    /// one. The error names the file and the line, like those of
    /// [`Settings::parse`].
    pub(crate) fn routing_taxonomy(&self, catalog: &Catalog) -> anyhow::Result<Taxonomy> {
        self.routing
            .validate(catalog)
            .map_err(|error| self.routing_error(&error))
    }

    /// The taxonomy a router of turns reads (`chat --route`, `route`):
    /// [`Self::routing_taxonomy`], a turn arriving with the best
    /// [`DEFAULT_ROUTE_TOOLS`] tools across groups unless `[routing]
    /// route_tools` says otherwise (0: the routed groups).
    pub(crate) fn turn_taxonomy(&self, catalog: &Catalog) -> anyhow::Result<Taxonomy> {
        let mut taxonomy = self.routing_taxonomy(catalog)?;
        if self.routing.route_tools.is_none() {
            taxonomy.route_tools = Some(DEFAULT_ROUTE_TOOLS);
        }
        Ok(taxonomy)
    }

    /// `error` (about `[routing]`) with the file and line it is about.
    pub(crate) fn routing_error(&self, error: &RoutingError) -> anyhow::Error {
        match &self.file {
            Some(file) => routing_error(&file.path, &file.text, &self.routing_places, error).into(),
            None => anyhow::anyhow!("{error}"),
        }
    }

    /// The configuration file's path, when there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|file| file.path.as_path())
    }

    /// `path` as written in the configuration: relative to the file.
    pub(crate) fn relative_to_file(&self, path: &Path) -> PathBuf {
        match self.path().and_then(Path::parent) {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }
}

/// The configuration file in use: `given`, else `./toolgate.toml` when it
/// exists.
pub(crate) fn config_file(given: Option<&Path>) -> Option<PathBuf> {
    match given {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.is_file()),
    }
}

/// Starts a stdio `upstream` declared in `file` in that file's directory
/// (its `cwd` relative to it), not wherever the command runs: a client
/// that starts the gateway in `/` with `--config FILE` then runs the same
/// servers on the same directories (`args = ["--repository", "."]`).
pub(crate) fn start_in_dir_of(file: &Path, upstream: &mut UpstreamConfig) {
    let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty()) else {
        // A file in the working directory: it is that directory already.
        return;
    };
    if let UpstreamTransport::Stdio { cwd, .. } = &mut upstream.transport {
        *cwd = Some(match cwd.take() {
            Some(cwd) => dir.join(cwd),
            None => dir.to_path_buf(),
        });
    }
}

/// `[audit]`: the log of every tool call `toolgate serve` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditSettings {
    /// The file lines are appended to (relative to the configuration file).
    #[serde(default)]
    pub(crate) path: Option<PathBuf>,
    /// Record arguments in clear rather than as their SHA-256.
    #[serde(default)]
    pub(crate) arguments: bool,
}

/// A `[routing]` error of the file at `path`, at the line of the key (or
/// intent, or table) it is about.
fn routing_error(
    path: &Path,
    text: &str,
    places: &RoutingPlaces,
    error: &RoutingError,
) -> SettingsError {
    SettingsError {
        path: path.to_path_buf(),
        line: places.of(error).map(|span| line_of(text, span.start)),
        place: None,
        reason: error.to_string(),
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count()
        + 1
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "settings_fuzz_tests.rs"]
mod fuzz_tests;
