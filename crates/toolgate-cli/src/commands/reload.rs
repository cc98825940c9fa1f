//! Live reload for `toolgate serve`: a change of a `*.json` or `*.js` file
//! in a manifests directory (a file watch), or SIGHUP, reads them again
//! ([`Toolbox::reload_manifests`]); a change of `toolgate.toml`, or SIGHUP,
//! applies its upstreams, clients, policies and rate limits
//! ([`Gateway::update_upstreams`], [`Gateway::update_access`]). Events
//! closer together than [`DEBOUNCE`] make one reload, so an editor's save
//! (often a write, a rename and a metadata change) reloads once. Each
//! reload prints one line; each file it could not load is logged with its
//! path and reason.
//!
//! `toolgate.toml` may be a symbolic link, or lie behind one (a Kubernetes
//! ConfigMap: `toolgate.toml -> ..data/toolgate.toml`, `..data` swapped for
//! a link to a new directory on each update). The watch follows the links:
//! it watches the directory of every link on the way and of the file
//! reached, and resolves them again before each reload, so an update shows
//! wherever it lands.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolgate_core::GroupId;
use toolgate_mcp::{Access, Gateway, RateLimits};
use toolgate_store::ConversationStore;
use toolgate_tools::{ReloadReport, Toolbox};

use super::access::{check_policies_against, open_to_other_machines, start_oauth};
use super::tool_setup::ToolSetup;
use crate::settings::Settings;

/// How long the files must be quiet before a reload.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Reloads `toolbox`'s manifests when a file of `dirs` changes or the
/// process gets SIGHUP, until `stop` is cancelled. A directory that cannot
/// be watched (one that does not exist) is passed over: SIGHUP still
/// reloads it.
pub(crate) fn watch_manifests(
    toolbox: Arc<Toolbox>,
    dirs: &[PathBuf],
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let trigger = Arc::new(Notify::new());
    let watcher = watch_dirs(dirs, &trigger);
    let hangup = hangup_signal()?;
    tokio::spawn(async move {
        // Dropping the watcher ends the watch: kept as long as the loop.
        let _watcher = watcher;
        reload_loop(toolbox, trigger, hangup, stop).await;
    });
    Ok(())
}

/// A watcher of the directories that exist, poking `trigger` on every
/// change of a manifest or a script; `None` when none can be watched.
fn watch_dirs(dirs: &[PathBuf], trigger: &Arc<Notify>) -> Option<RecommendedWatcher> {
    let poke = Arc::clone(trigger);
    let handler = move |event: notify::Result<notify::Event>| match event {
        Ok(event) if concerns_manifests(&event) => poke.notify_one(),
        Ok(_) => {}
        // Events may have been lost: read everything again.
        Err(error) => {
            tracing::warn!(%error, "watching the manifests directories");
            poke.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(watcher) => watcher,
        Err(error) => {
            tracing::warn!(%error, "manifests are not watched; SIGHUP reloads them");
            return None;
        }
    };
    let mut watching = false;
    for dir in dirs.iter().filter(|dir| dir.is_dir()) {
        match watcher.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => watching = true,
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "not watched; SIGHUP reloads it");
            }
        }
    }
    watching.then_some(watcher)
}

/// Whether `event` may change what the manifests load: a change (not a
/// mere read) of a `.json` or `.js` file, or of a ConfigMap's `..` entries.
fn concerns_manifests(event: &notify::Event) -> bool {
    // A manifest or its script; or, in a folder mounted from a Kubernetes
    // ConfigMap, the `..data` link (and the `..<timestamp>` folder it
    // names) swapped on each update: its files are links through it, and
    // no event names them.
    let relevant = |path: &PathBuf| {
        path.extension()
            .is_some_and(|ext| ext == "json" || ext == "js")
            || path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(".."))
    };
    !matches!(event.kind, EventKind::Access(_)) && event.paths.iter().any(relevant)
}

/// SIGHUP, where there are signals.
#[cfg(unix)]
type Hangup = tokio::signal::unix::Signal;

/// No SIGHUP elsewhere: never comes.
#[cfg(not(unix))]
type Hangup = ();

#[cfg(unix)]
fn hangup_signal() -> anyhow::Result<Hangup> {
    use tokio::signal::unix::{SignalKind, signal};
    signal(SignalKind::hangup()).context("listening for SIGHUP")
}

#[cfg(not(unix))]
fn hangup_signal() -> anyhow::Result<Hangup> {
    Ok(())
}

#[cfg(unix)]
async fn hung_up(hangup: &mut Hangup) {
    if hangup.recv().await.is_none() {
        std::future::pending::<()>().await;
    }
}

#[cfg(not(unix))]
async fn hung_up(_: &mut Hangup) {
    std::future::pending::<()>().await;
}

/// Waits for a file event (and lets the files settle) or SIGHUP; false
/// once `stop` is cancelled.
async fn next_reload(trigger: &Notify, hangup: &mut Hangup, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = trigger.notified() => {
            // More events within the debounce push the reload back.
            loop {
                tokio::select! {
                    () = trigger.notified() => {}
                    () = tokio::time::sleep(DEBOUNCE) => return true,
                    () = stop.cancelled() => return false,
                }
            }
        }
        () = hung_up(hangup) => true,
        () = stop.cancelled() => false,
    }
}

/// Waits for a trigger, lets the files settle, reloads; until `stop`.
async fn reload_loop(
    toolbox: Arc<Toolbox>,
    trigger: Arc<Notify>,
    mut hangup: Hangup,
    stop: CancellationToken,
) {
    while next_reload(&trigger, &mut hangup, &stop).await {
        let reloading = Arc::clone(&toolbox);
        match tokio::task::spawn_blocking(move || reloading.reload_manifests()).await {
            Ok(report) => tell(&report),
            Err(error) => tracing::error!(%error, "reloading the manifests"),
        }
    }
}

/// Prints the reload's summary, and logs each file it could not load.
fn tell(report: &ReloadReport) {
    for error in &report.errors {
        tracing::warn!(
            path = %error.path.display(),
            reason = %error.reason,
            "manifest not loaded; its previous version, if any, stays"
        );
    }
    crate::output::eprint(&format!("{report}\n"));
}

/// What a reload of the configuration reads, and what it must keep true.
#[derive(Debug)]
pub(crate) struct ConfigReload {
    /// `toolgate.toml`.
    pub(crate) path: PathBuf,
    /// The `--mcp-config` files, whose upstreams join the file's.
    pub(crate) mcp_config: Vec<PathBuf>,
    /// What a configuration that leaves no client with a token, and no
    /// OAuth, would open.
    pub(crate) without_tokens: WithoutTokens,
    /// Whether the gateway serves HTTP, where `[auth.oauth]` applies.
    pub(crate) serves_http: bool,
}

/// What a configuration that leaves no client with a token, and no OAuth,
/// does to the gateway: on stdio, or behind a shared token, nothing; on an
/// HTTP listener with nothing else to keep callers out, it opens it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WithoutTokens {
    /// stdio, or a shared token guards every request.
    Guarded,
    /// A loopback listener: every process on this machine gets in. A reload
    /// that does it is applied, as a start without tokens is, with a
    /// warning.
    OpenToThisMachine(SocketAddr),
    /// A listener reachable from other machines: anyone who reaches it gets
    /// in. A reload that would do it is refused.
    OpenToOtherMachines(SocketAddr),
}

impl WithoutTokens {
    /// For a gateway listening on `listen` (`None`: on stdio), with a
    /// shared token or not.
    pub(crate) fn of(listen: Option<SocketAddr>, shared_token: Option<&str>) -> Self {
        match (listen, shared_token) {
            (None, _) | (Some(_), Some(_)) => Self::Guarded,
            (Some(listen), None) if listen.ip().is_loopback() => Self::OpenToThisMachine(listen),
            (Some(listen), None) => Self::OpenToOtherMachines(listen),
        }
    }
}

/// Applies the upstreams, clients, policies and rate limits of the
/// configuration file (and the upstreams of the `--mcp-config` files)
/// again when it changes or the process gets SIGHUP, until `stop`. A file
/// that does not check is refused with its reason, and what runs stays as
/// it was.
pub(crate) fn watch_config<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    reload: ConfigReload,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let path = reload.path.clone();
    let trigger = Arc::new(Notify::new());
    let mut watch = ConfigWatch::start(&path, &trigger);
    let mut hangup = hangup_signal()?;
    tokio::spawn(async move {
        while next_reload(&trigger, &mut hangup, &stop).await {
            // Before the file is read: a change after this is seen by the
            // watch, one before it is in what is read.
            if let Some(watch) = &mut watch {
                watch.follow();
            }
            match apply_config(&gateway, &reload).await {
                Ok(told) => crate::output::eprint(&told),
                Err(error) => crate::output::eprint(&format!(
                    "{}: not applied, the configuration before it keeps running: {error:#}\n",
                    path.display()
                )),
            }
        }
    });
    Ok(())
}

/// The watch of the configuration file through its symbolic links: the
/// directories of its [`Chain`], where an update shows (editors replace a
/// file by renaming another onto it; a Kubernetes ConfigMap swaps its
/// `..data` link), followed again before each reload.
struct ConfigWatch {
    path: PathBuf,
    watcher: RecommendedWatcher,
    /// The directories watched.
    watched: BTreeSet<PathBuf>,
    /// The chain as of the last reload, which events are checked against.
    chain: Arc<Mutex<Chain>>,
}

impl ConfigWatch {
    /// A watch of `path` poking `trigger` on every event that names a file
    /// of its chain or changes where the chain leads; `None` when nothing
    /// can be watched (SIGHUP still applies the file).
    fn start(path: &Path, trigger: &Arc<Notify>) -> Option<Self> {
        let chain = Arc::new(Mutex::new(Chain::of(path)));
        let handler = {
            let chain = Arc::clone(&chain);
            let path = path.to_path_buf();
            let poke = Arc::clone(trigger);
            move |event: notify::Result<notify::Event>| match event {
                Ok(event) if !matches!(event.kind, EventKind::Access(_)) => {
                    let now = Chain::of(&path);
                    let known = chain.lock().unwrap_or_else(PoisonError::into_inner);
                    if now != *known || event.paths.iter().any(|changed| known.holds(changed)) {
                        poke.notify_one();
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "watching the configuration file");
                    poke.notify_one();
                }
            }
        };
        let watcher = notify::recommended_watcher(handler)
            .inspect_err(|error| {
                tracing::warn!(%error, "the configuration file is not watched; SIGHUP applies it");
            })
            .ok()?;
        let mut watch = Self {
            path: path.to_path_buf(),
            watcher,
            watched: BTreeSet::new(),
            chain,
        };
        watch.follow();
        Some(watch)
    }

    /// Resolves the chain again and watches its directories, and no
    /// others.
    fn follow(&mut self) {
        let chain = Chain::of(&self.path);
        let dirs = chain.dirs();
        for gone in self.watched.difference(&dirs) {
            // Already unwatched when the directory was removed.
            if let Err(error) = self.watcher.unwatch(gone) {
                tracing::debug!(dir = %gone.display(), %error, "unwatching");
            }
        }
        self.watched.retain(|dir| dirs.contains(dir));
        for dir in dirs {
            if self.watched.contains(&dir) {
                continue;
            }
            match self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir);
                }
                Err(error) => tracing::warn!(
                    dir = %dir.display(),
                    %error,
                    "not watched: a change of the configuration there is applied on SIGHUP"
                ),
            }
        }
        *self.chain.lock().unwrap_or_else(PoisonError::into_inner) = chain;
    }
}

/// The most symbolic links followed: a loop ends there (Linux's limit).
const MAX_LINKS: usize = 40;

/// The files a path resolves through: every symbolic link met on the way
/// (the path itself, one of its directories, or one a link points to) and
/// the file reached. An update of the configuration changes one of them.
#[derive(Debug, Default, PartialEq, Eq)]
struct Chain {
    links: Vec<PathBuf>,
    file: PathBuf,
}

impl Chain {
    /// Resolves `path` component by component, as the kernel does, noting
    /// each link. A component that does not exist is taken as it is.
    fn of(path: &Path) -> Self {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut links = Vec::new();
        let mut file = PathBuf::new();
        // What is left to walk, the next component last.
        let mut left: Vec<OsString> = components_reversed(&absolute);
        while let Some(step) = left.pop() {
            match Path::new(&step).components().next() {
                Some(Component::Normal(name)) => {
                    let next = file.join(name);
                    match std::fs::read_link(&next) {
                        Ok(target) if links.len() < MAX_LINKS => {
                            // Relative to the link's directory, `file` now.
                            left.extend(components_reversed(&target));
                            links.push(next);
                        }
                        _ => file = next,
                    }
                }
                Some(Component::ParentDir) => {
                    file.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => file.push(&step),
                Some(Component::CurDir) | None => {}
            }
        }
        Self { links, file }
    }

    /// The directories holding its links and its file.
    fn dirs(&self) -> BTreeSet<PathBuf> {
        self.links
            .iter()
            .chain([&self.file])
            .filter_map(|path| path.parent())
            .map(Path::to_path_buf)
            .collect()
    }

    /// Whether `path` is one of its links or its file.
    fn holds(&self, path: &Path) -> bool {
        self.file == path || self.links.iter().any(|link| link == path)
    }
}

fn components_reversed(path: &Path) -> Vec<OsString> {
    path.components()
        .rev()
        .map(|component| component.as_os_str().to_owned())
        .collect()
}

/// Reads the configuration again and applies its upstreams and access
/// settings; the lines to print. Everything is checked before anything is
/// applied.
async fn apply_config<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    reload: &ConfigReload,
) -> anyhow::Result<String> {
    let path = &reload.path;
    let settings = Settings::load(Some(path))?;
    let opens = settings.clients.has_no_tokens() && settings.oauth.is_none();
    if let WithoutTokens::OpenToOtherMachines(listen) = reload.without_tokens
        && opens
    {
        anyhow::bail!(
            "no client would have a token: {}",
            open_to_other_machines(listen)
        );
    }
    let before = gateway.access();
    let was_guarded = !before.clients.has_no_tokens() || before.oauth.is_some();
    let running = before.oauth.clone();
    let (oauth, oauth_told) = match (&settings.oauth, reload.serves_http) {
        (Some(wanted), true) => match running {
            Some(oauth) if oauth.settings() == wanted => (Some(oauth), String::new()),
            _ => {
                let mut told = String::new();
                let oauth = start_oauth(wanted.clone(), &mut told).await?;
                let told = told.trim().trim_start_matches("OAuth:").trim_start();
                (
                    Some(Arc::new(oauth)),
                    format!("; [auth.oauth] applied: {told}"),
                )
            }
        },
        (None, true) if running.is_some() => (None, "; [auth.oauth] removed".to_owned()),
        _ => (None, String::new()),
    };
    let upstreams = ToolSetup::upstreams(&settings, &reload.mcp_config)?.upstreams;
    let names: Vec<GroupId> = upstreams.iter().map(|u| u.name.clone()).collect();
    let warnings = check_policies_against(gateway, &settings.policies, Some(&names))?;
    let clients = settings.clients.len();
    let restricted = settings.policies.len();
    let rate_limits = Arc::new(RateLimits::new(
        &settings.rate_limits,
        settings.clients.names(),
    ));
    if let WithoutTokens::OpenToThisMachine(listen) = reload.without_tokens
        && opens
        && was_guarded
    {
        tracing::warn!(
            "{}: no client has a token any more and there is no [auth.oauth]: --listen {listen} \
             now lets in every process on this machine without one",
            path.display()
        );
    }
    gateway
        .update_access(Access {
            policies: settings
                .policies
                .into_iter()
                .map(|(client, policy)| (client, Arc::new(policy)))
                .collect(),
            clients: settings.clients,
            rate_limits,
            oauth,
        })
        .await;
    // Access first: a policy denying a new upstream's tools is in force
    // before they appear, and a revoked client is out at once, not after
    // a removed upstream has let its calls under way finish.
    let upstreams = gateway.update_upstreams(upstreams).await;
    Ok(format!(
        "{warnings}{}: {upstreams}; applied {clients} client(s), {restricted} with a policy, \
         and the rate limits{oauth_told} (other settings apply at the next start)\n",
        path.display(),
    ))
}

#[cfg(test)]
#[path = "reload_tests.rs"]
mod tests;
