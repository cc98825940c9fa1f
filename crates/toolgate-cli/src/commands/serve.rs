//! `toolgate serve`: the MCP gateway, over streamable HTTP or stdio.
//!
//! Everything it says goes to stderr: on stdio, stdout is the protocol.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;
use toolgate_core::GroupId;
use toolgate_mcp::{
    AuditConfig, AuditLog, Gateway, GatewayOptions, HELD_IN_MEMORY, HttpLimits, HttpOptions,
    MCP_PATH, RateLimits, StdioOptions, UpstreamHealth, serve_http, serve_stdio,
};
use toolgate_store::{ConversationId, ConversationStore, JsToolStore, MemoryStore};
use toolgate_tools::{StartReport, ToolOwnership, ToolboxError, ToolboxOptions, UserJsTools};

use super::access::{
    TOKEN_VARIABLE, check_policies, open_to_other_machines, start_oauth, unknown_limited_tools,
};
use super::reload::WithoutTokens;
use super::stdio_command::StdioCommand;
use super::tool_setup::{TerminalProgress, ToolSetup};
use crate::cli::ServeArgs;
use crate::settings::Settings;
use crate::store::StoreLocation;

/// The longest `--shutdown-grace-seconds` taken: an hour.
const MAX_GRACE_SECONDS: u64 = 3600;

/// The longest `--session-idle-minutes` taken: a year.
const MAX_IDLE_MINUTES: u64 = 366 * 24 * 60;

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::output::init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let settings = Settings::load(args.tools.config.as_deref())?;
        match crate::store::location(args.store.as_deref(), &settings.store) {
            _ if args.memory_store => {
                let shown = StoreShown {
                    label: "memory (sessions end with the process)".into(),
                    options: vec!["--memory-store".into()],
                };
                // The JavaScript tools agents write live in memory too, as
                // long as the process.
                let js_tools = Arc::new(MemoryStore::new());
                serve(args, settings, MemoryStore::new(), js_tools, shown).await
            }
            StoreLocation::Postgres(uri) => {
                let store = crate::store::open_postgres(&uri, &settings.store).await?;
                let redacted = crate::store::redacted(&uri);
                let shown = StoreShown {
                    label: format!("PostgreSQL {redacted}"),
                    // From the configuration, which the command names,
                    // else as given: a password in it is never printed
                    // (PGPASSWORD or [store] password_file gives it).
                    options: match &args.store {
                        Some(_) => vec!["--store".into(), redacted],
                        None => Vec::new(),
                    },
                };
                let js_tools = Arc::new(store.clone());
                serve(args, settings, store, js_tools, shown).await
            }
            StoreLocation::Sqlite(path) => {
                let (store, path) = crate::store::open_sqlite(path.as_deref(), "sessions.db")?;
                let file = store.clone();
                let js_tools = Arc::new(store.clone());
                let shown = StoreShown {
                    label: format!("SQLite {}", path.display()),
                    // The file in use, wherever the client starts the
                    // gateway and whatever its data directory.
                    options: vec![
                        "--store".into(),
                        std::path::absolute(&path)
                            .unwrap_or_else(|_| path.clone())
                            .to_string_lossy()
                            .into_owned(),
                    ],
                };
                serve(args, settings, store, js_tools, shown).await?;
                file.checkpoint()
                    .await
                    .with_context(|| format!("checkpointing {}", path.display()))
            }
        }
    })
}

/// The store as the banner shows it, and the options that give it to a
/// gateway started elsewhere.
struct StoreShown {
    label: String,
    options: Vec<String>,
}

async fn serve<S: ConversationStore + 'static>(
    args: ServeArgs,
    settings: Settings,
    store: S,
    js_tools: Arc<dyn JsToolStore>,
    store_shown: StoreShown,
) -> anyhow::Result<()> {
    let token = bearer_token(&args)?;
    let without_tokens = refuse_open_without_tokens(&args, &settings, token.as_deref())?;
    let telemetry = super::telemetry::Telemetry::start(&settings.telemetry)?;
    let mut started = start_gateway(&args, &settings, store, js_tools).await?;
    started.stdio_command.args.extend(store_shown.options);
    let gateway = Arc::clone(&started.gateway);
    let grace = shutdown_grace(&args);
    let mut stop = StopSignals::new()?;
    let shutdown = CancellationToken::new();
    watch(
        &gateway,
        &args,
        &settings,
        &started,
        without_tokens,
        &shutdown,
    )?;
    let mut banner = started_banner(
        &started,
        &args,
        &settings,
        telemetry.as_ref(),
        &store_shown.label,
    );
    if args.stdio {
        let session = args.session.clone().unwrap_or_else(new_session_name);
        banner.push_str(&format!("Serving MCP on stdio, session '{session}'.\n"));
        crate::output::eprint(&banner);
        let options = StdioOptions {
            session: ConversationId::new(session),
            shutdown_grace: grace,
        };
        let stop_serving = shutdown.child_token();
        let serving = serve_stdio(Arc::clone(&gateway), options, stop_serving.clone());
        tokio::pin!(serving);
        tokio::select! {
            result = &mut serving => result.context("starting the MCP session on stdio")?,
            signal = stop.recv() => {
                crate::output::eprint(&stopping_message(signal?, grace));
                stop_serving.cancel();
                serving.await.context("starting the MCP session on stdio")?;
            }
        }
    } else {
        let serving = Serving {
            gateway: &gateway,
            token,
            stdio_command: &started.stdio_command,
        };
        serve_over_http(&args, &settings, serving, banner, &mut stop, &shutdown).await?;
    }
    shutdown.cancel();
    gateway.shutdown().await;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown().await;
    }
    Ok(())
}

/// How long calls in flight get to finish at a stop.
fn shutdown_grace(args: &ServeArgs) -> Duration {
    Duration::from_secs(args.shutdown_grace_seconds.min(MAX_GRACE_SECONDS))
}

/// How long a session may stay idle before it is deleted.
fn session_idle(args: &ServeArgs) -> Duration {
    Duration::from_secs(args.session_idle_minutes.clamp(1, MAX_IDLE_MINUTES) * 60)
}

/// Whether the gateway is reachable from other machines with nothing but
/// the clients' tokens to keep strangers out; an error when it would be
/// and no client has one (nor is there OAuth). A reload keeps to the
/// answer.
fn refuse_open_without_tokens(
    args: &ServeArgs,
    settings: &Settings,
    token: Option<&str>,
) -> anyhow::Result<WithoutTokens> {
    let without_tokens = WithoutTokens::of((!args.stdio).then_some(args.listen), token);
    if let WithoutTokens::OpenToOtherMachines(listen) = without_tokens
        && settings.clients.has_no_tokens()
        && settings.oauth.is_none()
    {
        bail!("{}", open_to_other_machines(listen));
    }
    Ok(without_tokens)
}

/// The gateway as started, and what the banner says of its start.
struct Started<S: ConversationStore + 'static> {
    gateway: Arc<Gateway<S>>,
    report: StartReport,
    config_files: Vec<PathBuf>,
    manifest_dirs: Vec<PathBuf>,
    /// Why the local embedding model is missing, when it is: said only
    /// where the gateway searches.
    missing_model: Option<String>,
    audit_path: Option<PathBuf>,
    /// The warnings of the clients' policies checked against the catalog.
    policy_warnings: String,
    /// The JavaScript tools agents write, when offered.
    user_js_tools: Option<UserJsTools>,
    /// What a client that starts its servers runs to get this gateway.
    stdio_command: StdioCommand,
}

/// Starts the gateway over `store` with the tools, upstreams, audit log and
/// access settings of `args` and `settings` (on a terminal, the upstreams
/// starting are shown), and checks `[routing]` and the policies against its
/// catalog.
async fn start_gateway<S: ConversationStore + 'static>(
    args: &ServeArgs,
    settings: &Settings,
    store: S,
    js_tools: Arc<dyn JsToolStore>,
) -> anyhow::Result<Started<S>> {
    let mut setup = ToolSetup::new(&args.tools, settings)?;
    setup.withhold_broad_files_root(&args.tools);
    // On a terminal, the upstreams starting before the banner are shown.
    let progress = TerminalProgress::on_stderr();
    if let Some(line) = &progress {
        setup.show_progress(line);
    }
    let owner = settings.tools.javascript.owner.clone();
    let user_js_tools = setup.add_user_js_tools(js_tools, owner)?;
    let manifest_dirs = setup.options.manifest_dirs.clone();
    let stdio_command = StdioCommand::of(args, settings, &setup.options);
    let (tools, missing_model) = gateway_tools(args, settings, setup.options);
    let audit_path = args.audit_log.clone().or(settings.audit.path.clone());
    let options = GatewayOptions {
        tools,
        upstreams: setup.upstreams,
        session_idle_timeout: session_idle(args),
        routing: if args.route {
            Some(settings.routing.clone())
        } else {
            None
        },
        audit: open_audit(audit_path.as_ref(), settings).await?,
        rate_limits: Arc::new(RateLimits::new(
            &settings.rate_limits,
            settings.clients.names(),
        )),
        policies: Arc::new(settings.policies.clone()),
        loaded_schemas: settings.gateway_loaded_schemas(),
        load_budget: settings.load_budget,
        deferral: settings.deferral,
        context_window: settings.gateway_context_window(),
    };
    let started = Gateway::start(options, store).await;
    if let Some(line) = &progress {
        line.finish();
    }
    let (gateway, report) = started.map_err(|error| match error {
        ToolboxError::Routing(error) => settings.routing_error(&error),
        other => other.into(),
    })?;
    // [routing] names groups of this catalog, whether or not it searches.
    gateway.with_catalog(|catalog| settings.routing_taxonomy(catalog))?;
    let policy_warnings = check_policies(&gateway, &settings.policies)?;
    if let Some(user_js_tools) = &user_js_tools {
        user_js_tools.attach(gateway.toolbox());
    }
    Ok(Started {
        gateway,
        report,
        config_files: setup.config_files,
        manifest_dirs,
        missing_model,
        audit_path,
        policy_warnings,
        user_js_tools,
        stdio_command,
    })
}

/// The toolbox options of the gateway: `tools` searching above
/// `--search-above-groups` with `[routing]`, with the local embedding
/// model when there is one (else why not).
fn gateway_tools(
    args: &ServeArgs,
    settings: &Settings,
    mut tools: ToolboxOptions,
) -> (ToolboxOptions, Option<String>) {
    // A missing model matters only where the gateway searches: said in the
    // banner, once the catalog says whether it does.
    let (embeddings, missing_model) =
        match super::tool_setup::find_local_embeddings(&settings.routing, true) {
            Ok(embeddings) => (embeddings, None),
            Err(note) => (None, Some(note)),
        };
    super::tool_setup::offer_search(
        &mut tools,
        &settings.routing,
        args.search_above_groups,
        embeddings,
    );
    (tools, missing_model)
}

/// The audit log at `path`, when one is configured.
async fn open_audit(
    path: Option<&PathBuf>,
    settings: &Settings,
) -> anyhow::Result<Option<AuditLog>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let config = AuditConfig {
        path: path.clone(),
        arguments: settings.audit.arguments,
    };
    Ok(Some(AuditLog::open(&config).await?))
}

/// Until `shutdown`: idle sessions expire, the manifests reload when they
/// change, and so does `toolgate.toml` (when there is one).
fn watch<S: ConversationStore + 'static>(
    gateway: &Arc<Gateway<S>>,
    args: &ServeArgs,
    settings: &Settings,
    started: &Started<S>,
    without_tokens: WithoutTokens,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    tokio::spawn(expire_sessions(Arc::clone(gateway), shutdown.clone()));
    super::reload::watch_manifests(
        Arc::clone(gateway.toolbox()),
        &started.manifest_dirs,
        shutdown.clone(),
    )?;
    if let Some(path) = settings.path() {
        let reload = super::reload::ConfigReload {
            path: path.to_path_buf(),
            mcp_config: args.tools.mcp_config.clone(),
            without_tokens,
            serves_http: !args.stdio,
        };
        super::reload::watch_config(Arc::clone(gateway), reload, shutdown.clone())?;
    }
    Ok(())
}

/// What the gateway says once started, before its transport's lines: the
/// warnings, then what it serves and where it keeps and sends things.
fn started_banner<S: ConversationStore + 'static>(
    started: &Started<S>,
    args: &ServeArgs,
    settings: &Settings,
    telemetry: Option<&super::telemetry::Telemetry>,
    store_label: &str,
) -> String {
    let mut banner = String::new();
    if let Some(note) = &started.missing_model
        && (args.route || started.report.search_added.is_some())
    {
        banner.push_str(note);
    }
    banner.push_str(&unknown_limited_tools(
        &started.gateway,
        &settings.rate_limits,
    ));
    banner.push_str(&started.policy_warnings);
    describe_start(
        &mut banner,
        &started.gateway,
        &started.report,
        &started.config_files,
        &started.manifest_dirs,
        store_label,
    );
    banner.push_str(&format!(
        "  tools sent: {}\n",
        started.gateway.delivery().explained()
    ));
    if let Some(path) = &started.audit_path {
        banner.push_str(&format!(
            "  audit log: {} (one line per tool call)\n",
            path.display()
        ));
    }
    if let Some(telemetry) = telemetry {
        banner.push_str(&format!(
            "  traces:    OTLP to {} ([telemetry])\n",
            telemetry.endpoint
        ));
    }
    if started.user_js_tools.is_some() {
        let owner = &settings.tools.javascript.owner;
        let whose = match settings.tools.javascript.ownership {
            ToolOwnership::PerCaller => format!(
                "each client's own; owner '{owner}' for the operator ([tools.javascript] owner \
                 makes one shared set)"
            ),
            ToolOwnership::Shared => {
                format!("owner '{owner}', shared by every client ([tools.javascript] owner)")
            }
        };
        banner.push_str(&format!("  JavaScript tools agents write: {whose}\n"));
    }
    banner
}

/// What the HTTP server serves, and what its banner tells clients.
struct Serving<'a, S: ConversationStore + 'static> {
    gateway: &'a Arc<Gateway<S>>,
    /// The bearer token, when there is one.
    token: Option<String>,
    stdio_command: &'a StdioCommand,
}

/// Serves streamable HTTP on `--listen` until the server ends or a signal
/// stops it (calls in flight get the grace to finish); prints the banner
/// with how to connect once listening.
async fn serve_over_http<S: ConversationStore + 'static>(
    args: &ServeArgs,
    settings: &Settings,
    serving: Serving<'_, S>,
    mut banner: String,
    stop: &mut StopSignals,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let Serving {
        gateway,
        token,
        stdio_command,
    } = serving;
    let grace = shutdown_grace(args);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|error| listen_error(args.listen, error))?;
    let address = listener.local_addr()?;
    let url = format!("http://{address}{MCP_PATH}");
    let clients = settings.clients.clone();
    if !clients.is_empty() {
        banner.push_str(&format!(
            "  clients:   {} ([clients] in the config)\n",
            clients.len()
        ));
    }
    let oauth = match &settings.oauth {
        Some(oauth) => Some(Arc::new(start_oauth(oauth.clone(), &mut banner).await?)),
        None => None,
    };
    banner.push_str(&connect_help(
        &url,
        token.is_some() || !clients.has_no_tokens(),
        stdio_command,
    ));
    crate::output::eprint(&banner);
    let http = HttpOptions {
        bearer_token: token,
        clients,
        oauth,
        allowed_hosts: args.allowed_host.clone(),
        allowed_origins: args.allowed_origin.clone(),
        session_keep_alive: Some(session_idle(args).min(HELD_IN_MEMORY)),
        limits: HttpLimits {
            max_sessions: args.max_sessions.max(1),
            idle_in_memory: Duration::from_secs(args.session_memory_seconds.max(1)),
            shutdown_grace: grace,
            ..HttpLimits::default()
        },
    };
    let server = serve_http(Arc::clone(gateway), listener, http, shutdown.clone());
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result.context("serving HTTP")?,
        signal = stop.recv() => {
            crate::output::eprint(&stopping_message(signal?, grace));
            shutdown.cancel();
            server.await.context("serving HTTP")?;
        }
    }
    Ok(())
}

/// SIGTERM and SIGINT (Ctrl-C), listened for from when they are made: made
/// before the banner, so a signal sent as soon as the gateway says it
/// listens stops it cleanly instead of killing it.
struct StopSignals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn new() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// Waits for one; returns its name.
    async fn recv(&mut self) -> anyhow::Result<&'static str> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => Ok("SIGTERM"),
                _ = self.interrupt.recv() => Ok("SIGINT"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c()
                .await
                .context("listening for Ctrl-C")?;
            Ok("Ctrl-C")
        }
    }
}

fn stopping_message(signal: &str, grace: Duration) -> String {
    format!(
        "{signal}: shutting down; calls in flight get up to {}s to finish.\n",
        grace.as_secs()
    )
}

/// Why `--listen` could not be bound; for an address in use, how to pick
/// another.
fn listen_error(listen: std::net::SocketAddr, error: std::io::Error) -> anyhow::Error {
    let hint = match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            let next = std::net::SocketAddr::new(
                listen.ip(),
                listen.port().checked_add(1).unwrap_or(1024),
            );
            format!(
                " (another process listens there: stop it, or give another address with \
                 --listen <addr>, e.g. --listen {next})"
            )
        }
        _ => String::new(),
    };
    anyhow::anyhow!("listening on {listen}: {error}{hint}")
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
    super::banner::describe_sources(out, report, config_files, manifest_dirs);
    let _ = writeln!(out, "  sessions:  {store}");
    let failed: Vec<(GroupId, String)> = gateway
        .upstream_health()
        .into_iter()
        .filter_map(|(name, health)| match health {
            UpstreamHealth::Failed { reason, .. } => Some((name, reason)),
            UpstreamHealth::Idle
            | UpstreamHealth::Busy
            | UpstreamHealth::Running { .. }
            | UpstreamHealth::Exited
            | UpstreamHealth::Closed => None,
        })
        .collect();
    gateway.with_catalog(|catalog| {
        super::banner::describe_catalog(out, catalog, report, &failed);
    });
}

fn connect_help(url: &str, token: bool, stdio_command: &StdioCommand) -> String {
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
         stdio clients:   command `{}`\n  \
         Claude Desktop:  {}\n\
         Status page: {status}\n\
         Press Ctrl-C to stop.\n",
        stdio_command.shell(),
        stdio_command.desktop_entry(),
        status = url
            .strip_suffix(MCP_PATH)
            .map_or_else(|| url.to_owned(), |base| format!("{base}/")),
    )
}
