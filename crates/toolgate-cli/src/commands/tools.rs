//! What `serve` and `chat` share: the toolbox options from the command line
//! and the configuration files, the SQLite store, and the start-up summary.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use anyhow::{Context, bail};
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{Catalog, GroupListing};
use toolgate_mcp::Upstream;
use toolgate_mcp::config::{self, UpstreamConfig};
use toolgate_store::SqliteStore;
use toolgate_tools::{
    BuiltinConfig, FilesAccess, ListedSource, StartReport, Startup, ToolboxOptions,
};

use crate::cli::ToolArgs;

/// The tools the arguments describe: the toolbox options, the upstream MCP
/// servers, and the configuration files they came from.
pub(crate) struct ToolSetup {
    pub(crate) options: ToolboxOptions,
    pub(crate) upstreams: Vec<UpstreamConfig>,
    pub(crate) config_files: Vec<PathBuf>,
}

impl ToolSetup {
    /// Starts every upstream with the toolbox, so its tools are known at
    /// once (to route over them, or to report on them).
    pub(crate) fn start_upstreams_eagerly(&mut self) {
        for upstream in &mut self.upstreams {
            upstream.startup = Startup::Eager;
        }
    }

    /// The toolbox options with the upstreams as its listed sources.
    pub(crate) fn into_options(self) -> ToolboxOptions {
        let mut options = self.options;
        options.listed = self
            .upstreams
            .into_iter()
            .map(|config| Arc::new(Upstream::new(config)) as Arc<dyn ListedSource>)
            .collect();
        options
    }
}

/// The tools the arguments describe, with the configuration files read.
pub(crate) fn tool_setup(args: &ToolArgs) -> anyhow::Result<ToolSetup> {
    let (upstreams, config_files) = upstream_configs(args.config.as_deref(), &args.mcp_config)?;
    let settings = tool_settings(args.config.as_deref())?;
    let options = ToolboxOptions {
        manifest_dirs: manifest_dirs(&args.manifests),
        jsonl_catalogs: args.jsonl.clone(),
        builtins: (!args.no_builtins).then(|| BuiltinConfig {
            files_access: if args.allow_write {
                FilesAccess::ReadWrite
            } else {
                FilesAccess::ReadOnly
            },
            web: settings.web.clone(),
            ..BuiltinConfig::new(&args.files_root)
        }),
        groups: settings.groups,
        aliases: settings.aliases,
        ..ToolboxOptions::default()
    };
    Ok(ToolSetup {
        options,
        upstreams,
        config_files,
    })
}

/// The client of a `[routing.embeddings]` endpoint, with its key from the
/// environment variable the settings name.
pub(crate) fn embeddings_client(
    settings: &toolgate_core::routing::semantic::EmbeddingsConfig,
) -> anyhow::Result<toolgate_llm::EmbeddingsClient> {
    use toolgate_llm::{ApiKey, ProviderConfig, ProviderKind};
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, &settings.base_url, &settings.model);
    if let Some(variable) = &settings.api_key_env {
        let key = std::env::var(variable)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .with_context(|| {
                format!("[routing.embeddings] api_key_env names {variable}, which is not set")
            })?;
        config.api_key = Some(ApiKey::new(key.trim()));
        config.key_source = format!("the environment variable {variable}");
    }
    Ok(toolgate_llm::EmbeddingsClient::new(config)?)
}

/// The `[groups]`, `[aliases]` and `[web]` settings of the configuration
/// file in use; defaults without one.
pub(crate) fn tool_settings(config: Option<&Path>) -> anyhow::Result<toolgate_tools::ToolSettings> {
    match config_file(config) {
        Some(path) => Ok(config::load_tool_settings(&path)?),
        None => Ok(toolgate_tools::ToolSettings::default()),
    }
}

/// The TOML configuration in use: `--config`, else ./toolgate.toml when it
/// exists.
pub(crate) fn config_file(given: Option<&Path>) -> Option<PathBuf> {
    match given {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from("toolgate.toml")).filter(|p| p.is_file()),
    }
}

/// The upstreams of a TOML file (default: ./toolgate.toml when it exists) and
/// `mcpServers` files, with the files read. A name declared twice is an error.
pub(crate) fn upstream_configs(
    config: Option<&Path>,
    mcp_config: &[PathBuf],
) -> anyhow::Result<(Vec<UpstreamConfig>, Vec<PathBuf>)> {
    let mut upstreams = Vec::new();
    let mut files = Vec::new();
    if let Some(path) = config_file(config) {
        upstreams.extend(config::load_toml(&path)?);
        files.push(path);
    }
    for path in mcp_config {
        for upstream in config::load_mcp_servers_json(path)? {
            if upstreams
                .iter()
                .any(|u: &UpstreamConfig| u.name == upstream.name)
            {
                bail!(
                    "{}: upstream '{}' is already declared in {}",
                    path.display(),
                    upstream.name,
                    files
                        .iter()
                        .map(|f| f.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            upstreams.push(upstream);
        }
        files.push(path.clone());
    }
    Ok((upstreams, files))
}

fn manifest_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    if given.is_empty() {
        let default = PathBuf::from("tools");
        if default.is_dir() {
            return vec![default];
        }
    }
    given.to_vec()
}

/// Opens (creating it and its directory) the SQLite store at `path`, or at
/// `toolgate/{default_name}` in the user's data directory.
pub(crate) fn open_sqlite(
    path: Option<&Path>,
    default_name: &str,
) -> anyhow::Result<(SqliteStore, PathBuf)> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => data_dir()?.join("toolgate").join(default_name),
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let store = SqliteStore::open(&path)
        .with_context(|| format!("opening the store {}", path.display()))?;
    Ok((store, path))
}

fn data_dir() -> anyhow::Result<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))
        .context(
            "no HOME or XDG_DATA_HOME to put the store in; pass --store FILE or --memory-store",
        )
}

/// Where the tools came from and what was skipped, one line each.
pub(crate) fn describe_sources(
    out: &mut String,
    report: &StartReport,
    config_files: &[PathBuf],
    manifest_dirs: &[PathBuf],
) {
    for file in config_files {
        let _ = writeln!(out, "  config:    {}", file.display());
    }
    for dir in manifest_dirs {
        let _ = writeln!(
            out,
            "  manifests: {} ({} files loaded)",
            dir.display(),
            report.manifest_files
        );
    }
    for error in &report.manifest_errors {
        let _ = writeln!(out, "  skipped:   {error}");
    }
    if report.imported_tools > 0 {
        let _ = writeln!(
            out,
            "  imported:  {} tools from tools.jsonl catalogs",
            report.imported_tools
        );
    }
    for error in &report.import_errors {
        let _ = writeln!(out, "  skipped:   {error}");
    }
    for group in &report.shadowed_builtins {
        let _ = writeln!(
            out,
            "  note:      built-in group '{group}' replaced by the upstream of that name"
        );
    }
}

/// The core tools and each group with its state.
pub(crate) fn describe_catalog(out: &mut String, catalog: &Catalog, report: &StartReport) {
    let core: Vec<&str> = catalog.core_tools().map(|t| t.name.as_str()).collect();
    let _ = writeln!(out, "  core tools: {}", core.join(", "));
    let _ = writeln!(out, "  groups:");
    for group in catalog.groups() {
        let count = tool_count(catalog, group.id.as_str());
        let state = match report.listed.iter().find(|(id, _)| id == &group.id) {
            Some((_, Err(error))) => format!("FAILED: {error}"),
            Some((_, Ok(_))) => format!("{count} (upstream, started)"),
            None if matches!(
                catalog.group_listing(group.id.as_str()),
                Some(GroupListing::Deferred)
            ) =>
            {
                "upstream, starts on first load".to_owned()
            }
            None => count,
        };
        let _ = writeln!(out, "    - {}: {state}", group.id);
    }
}

/// "3 tools", or for a group offered as one polymorphic tool "1 tool
/// (actions: search, fetch)", read from the schema the model is sent.
fn tool_count(catalog: &Catalog, group: &str) -> String {
    let tools: Vec<_> = catalog.group_tools(group).collect();
    if let [tool] = tools.as_slice() {
        let actions = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.get(toolgate_core::ACTION_PARAMETER))
            .and_then(|a| a.get("enum"))
            .and_then(|e| e.as_array());
        return match actions {
            Some(actions) if tool.name.as_str() == group => {
                let names: Vec<&str> = actions.iter().filter_map(|a| a.as_str()).collect();
                format!("1 tool (actions: {})", names.join(", "))
            }
            _ => "1 tool".to_owned(),
        };
    }
    format!("{} tools", tools.len())
}

/// Logs to stderr, at `warn` unless TOOLGATE_LOG says otherwise.
pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Writes `text` to stdout at once.
pub(crate) fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes `text` to stderr at once.
pub(crate) fn eprint(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// The `[routing]` table of the configuration in use (`--config`, else
/// ./toolgate.toml when it exists); the built-in settings without one.
pub(crate) fn routing_config(config: Option<&Path>) -> anyhow::Result<RoutingConfig> {
    let Some(path) = config_file(config) else {
        return Ok(RoutingConfig::default());
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    match table.get("routing") {
        None => Ok(RoutingConfig::default()),
        Some(routing) => routing
            .clone()
            .try_into()
            .with_context(|| format!("{}: [routing]", path.display())),
    }
}
