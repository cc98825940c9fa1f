//! `toolgate serve`: the MCP gateway, over streamable HTTP or stdio.
//!
//! Everything it says goes to stderr: on stdio, stdout is the protocol.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{BuiltinConfig, FilesAccess};
use toolgate_mcp::config::{self, UpstreamConfig};
use toolgate_mcp::{
    Gateway, GatewayHandler, GatewayOptions, HttpOptions, MCP_PATH, SessionSource, StartReport,
    ToolboxOptions, serve_http,
};
use toolgate_store::{ConversationId, ConversationStore, MemoryStore, SqliteStore};

use crate::cli::ServeArgs;

/// The environment variable holding the HTTP bearer token.
const TOKEN_VARIABLE: &str = "TOOLGATE_TOKEN";

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        if args.memory_store {
            serve(
                args,
                MemoryStore::new(),
                "memory (sessions end with the process)".into(),
            )
            .await
        } else {
            let path = match &args.store {
                Some(path) => path.clone(),
                None => default_store_path()?,
            };
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            let store = SqliteStore::open(&path)
                .with_context(|| format!("opening the session store {}", path.display()))?;
            serve(args, store, format!("SQLite {}", path.display())).await
        }
    })
}

async fn serve<S: ConversationStore + 'static>(
    args: ServeArgs,
    store: S,
    store_label: String,
) -> anyhow::Result<()> {
    let token = bearer_token(&args)?;
    if !args.stdio && !args.listen.ip().is_loopback() && token.is_none() {
        bail!(
            "--listen {} is reachable from other machines: set {TOKEN_VARIABLE} or --token-file \
             so only clients with the token get in",
            args.listen
        );
    }
    let (upstreams, config_files) = load_upstreams(&args)?;
    let manifest_dirs = manifest_dirs(&args.manifests);
    let options = GatewayOptions {
        tools: ToolboxOptions {
            upstreams,
            manifest_dirs: manifest_dirs.clone(),
            jsonl_catalogs: args.jsonl.clone(),
            builtins: (!args.no_builtins).then(|| BuiltinConfig {
                files_root: args.files_root.clone(),
                files_access: if args.allow_write {
                    FilesAccess::ReadWrite
                } else {
                    FilesAccess::ReadOnly
                },
            }),
        },
        session_idle_timeout: Duration::from_secs(args.session_idle_minutes.max(1) * 60),
    };
    let (gateway, report) = Gateway::start(options, store).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(expire_sessions(Arc::clone(&gateway), shutdown.clone()));

    let mut banner = String::new();
    describe_start(
        &mut banner,
        &gateway,
        &report,
        &config_files,
        &manifest_dirs,
        &store_label,
    );
    if args.stdio {
        let session = args.session.clone().unwrap_or_else(new_session_name);
        banner.push_str(&format!("Serving MCP on stdio, session '{session}'.\n"));
        eprint_banner(&banner);
        let handler = GatewayHandler::new(
            Arc::clone(&gateway),
            SessionSource::Fixed(ConversationId::new(session)),
        );
        let running = handler
            .serve(rmcp::transport::stdio())
            .await
            .context("starting the MCP session on stdio")?;
        let _ = running.waiting().await;
    } else {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let address = listener.local_addr()?;
        let url = format!("http://{address}{MCP_PATH}");
        banner.push_str(&connect_help(&url, token.is_some()));
        eprint_banner(&banner);
        let http = HttpOptions {
            bearer_token: token,
            allowed_hosts: args.allowed_host.clone(),
            allowed_origins: args.allowed_origin.clone(),
            session_keep_alive: Some(Duration::from_secs(args.session_idle_minutes.max(1) * 60)),
        };
        let server = serve_http(Arc::clone(&gateway), listener, http, shutdown.clone());
        tokio::select! {
            result = server => result.context("serving HTTP")?,
            _ = tokio::signal::ctrl_c() => eprint_banner("Shutting down.\n"),
        }
    }
    shutdown.cancel();
    gateway.shutdown().await;
    Ok(())
}

fn load_upstreams(args: &ServeArgs) -> anyhow::Result<(Vec<UpstreamConfig>, Vec<PathBuf>)> {
    upstream_configs(args.config.as_deref(), &args.mcp_config)
}

/// The upstreams of a TOML file (default: ./toolgate.toml when it exists) and
/// `mcpServers` files, with the files read. A name declared twice is an error.
pub(crate) fn upstream_configs(
    config: Option<&Path>,
    mcp_config: &[PathBuf],
) -> anyhow::Result<(Vec<UpstreamConfig>, Vec<PathBuf>)> {
    let mut upstreams = Vec::new();
    let mut files = Vec::new();
    let toml = match config {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from("toolgate.toml")).filter(|p| p.is_file()),
    };
    if let Some(path) = toml {
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

fn bearer_token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the token file {}", path.display()))?,
        ),
        None => std::env::var(TOKEN_VARIABLE).ok(),
    };
    let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    if let Some(token) = &token
        && token.len() < 16
    {
        bail!(
            "the bearer token is {} characters long; use at least 16",
            token.len()
        );
    }
    Ok(token)
}

fn default_store_path() -> anyhow::Result<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))
        .context("no HOME or XDG_DATA_HOME to put the session store in; pass --store FILE or --memory-store")?;
    Ok(data.join("toolgate").join("sessions.db"))
}

fn new_session_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("stdio-{nanos:x}-{}", std::process::id())
}

async fn expire_sessions<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    shutdown: CancellationToken,
) {
    let interval = gateway.sessions().expiry_interval();
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = shutdown.cancelled() => return,
        }
        let expired = gateway.sessions().expire_idle().await;
        if expired > 0 {
            tracing::info!(expired, "idle sessions deleted");
        }
    }
}

fn describe_start<S: ConversationStore + 'static>(
    out: &mut String,
    gateway: &Gateway<S>,
    report: &StartReport,
    config_files: &[PathBuf],
    manifest_dirs: &[PathBuf],
    store: &str,
) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "toolgate {} MCP gateway", env!("CARGO_PKG_VERSION"));
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
    let _ = writeln!(out, "  sessions:  {store}");
    gateway.with_catalog(|catalog| {
        let core: Vec<&str> = catalog.core_tools().map(|t| t.name.as_str()).collect();
        let _ = writeln!(out, "  core tools: {}", core.join(", "));
        let _ = writeln!(out, "  groups:");
        for group in catalog.groups() {
            let count = catalog.group_tools(group.id.as_str()).count();
            let state = match report.upstreams.iter().find(|(id, _)| id == &group.id) {
                Some((_, Err(error))) => format!("FAILED: {error}"),
                Some((_, Ok(_))) => format!("{count} tools (upstream, started)"),
                None if matches!(
                    catalog.group_listing(group.id.as_str()),
                    Some(toolgate_core::GroupListing::Deferred)
                ) =>
                {
                    "upstream, starts on first load".to_owned()
                }
                None => format!("{count} tools"),
            };
            let _ = writeln!(out, "    - {}: {state}", group.id);
        }
    });
}

fn connect_help(url: &str, token: bool) -> String {
    let auth = if token {
        " --header \"Authorization: Bearer $TOOLGATE_TOKEN\""
    } else {
        ""
    };
    format!(
        "Listening on {url}\n\
         Connect:\n  \
         Claude Code:     claude mcp add --transport http toolgate {url}{auth}\n  \
         MCP Inspector:   npx @modelcontextprotocol/inspector  (Transport: Streamable HTTP, URL: {url})\n  \
         stdio clients:   command `toolgate serve --stdio`\n\
         Press Ctrl-C to stop.\n"
    )
}

fn eprint_banner(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
