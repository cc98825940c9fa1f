//! Three `toolgate serve` processes on one PostgreSQL database, behind a
//! round-robin proxy as a load balancer would put them, serve one session;
//! one of them is killed (SIGKILL, no goodbye) while the session works, and
//! the session goes on through the other two with nothing lost. And the
//! database restarting under a working session costs it nothing once back.
//!
//! The database is the one `scripts/test` starts (`scripts/with-postgres`),
//! named by `TOOLGATE_TEST_POSTGRES_URL`; the restart test starts a server of
//! its own with that one's programs, so the restart disturbs no other test.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

type Client = RunningService<rmcp::RoleClient, ()>;

/// The meta-tools every session lists first.
const CORE: [&str; 3] = ["load_tool_group", "unload_tool_group", "call_tool"];
const TIME_TOOLS: [&str; 2] = ["time_now", "time_convert"];
const FILES_TOOLS: [&str; 3] = ["files_list", "files_read", "files_search"];

/// How long one attempt at a request may take before it counts as failed.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

fn server_url() -> String {
    std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test")
    })
}

/// A `toolgate serve` child on a loopback port, its built-ins on, its
/// sessions in the shared database; killed when dropped.
struct Replica {
    child: Child,
    address: SocketAddr,
}

impl Replica {
    /// Starts the gateway in `dir` (its cache there too), with `files_root`
    /// as the built-in `files` tools' root; returns once it listens.
    fn start(dir: &Path, files_root: &Path, store: &str) -> Self {
        super::support::pin_deferred(dir);
        let (child, _, url) = super::support::listening(
            super::support::toolgate(dir)
                .args(["serve", "--listen", "127.0.0.1:0", "--store", store])
                .arg("--files-root")
                .arg(files_root),
        );
        let address = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected URL {url}"))
            .parse()
            .unwrap();
        Self { child, address }
    }

    /// SIGKILL: the process gets no chance to finish anything.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `count` replicas at once (each start migrates the database under
/// its advisory lock, so they also race there, as a deployment's do).
fn start_replicas(count: usize, dir: &Path, files_root: &Path, store: &str) -> Vec<Replica> {
    std::thread::scope(|scope| {
        let starts: Vec<_> = (0..count)
            .map(|_| scope.spawn(|| Replica::start(dir, files_root, store)))
            .collect();
        starts.into_iter().map(|s| s.join().unwrap()).collect()
    })
}

/// A TCP proxy on a loopback port that sends each new connection to the
/// next of its backends in turn, as a load balancer does. A backend that
/// refuses the connection (its process is gone) is passed over for the next
/// one, so no request is lost to a dead backend once it is dead; a request
/// already sent to it when it died is lost with it.
struct RoundRobin {
    address: SocketAddr,
    /// Connections each backend has taken.
    served: Arc<Vec<AtomicUsize>>,
}

impl RoundRobin {
    async fn start(backends: Vec<SocketAddr>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let served: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = Arc::clone(&served);
        tokio::spawn(async move {
            let next = Arc::new(AtomicUsize::new(0));
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let (backends, counts, next) =
                    (backends.clone(), Arc::clone(&counts), Arc::clone(&next));
                tokio::spawn(async move {
                    let first = next.fetch_add(1, Ordering::Relaxed);
                    for offset in 0..backends.len() {
                        let index = (first + offset) % backends.len();
                        if let Ok(mut outbound) = TcpStream::connect(backends[index]).await {
                            counts[index].fetch_add(1, Ordering::Relaxed);
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Self { address, served }
    }

    fn served(&self) -> Vec<usize> {
        self.served
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }
}

/// An rmcp client through `proxy`. It must not open a new session when the
/// gateway says its session is unknown (rmcp's default): a lost session
/// has to fail the test, not be replaced quietly.
async fn connect(proxy: SocketAddr) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{proxy}/mcp"))
        .reinit_on_expired_session(false);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// Calls tool `name`. An attempt that fails (its connection cut) or takes
/// longer than [`ATTEMPT_TIMEOUT`] is made once more, and counted in
/// `retries`: a request in flight to a replica when it is killed dies with
/// it, as it would behind any load balancer; the client's retry is what
/// carries the session over. Every attempt is a tool call the session may
/// record, so only idempotent tools are retried here.
async fn call(client: &Client, name: &str, arguments: Value, retries: &AtomicUsize) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let first = tokio::time::timeout(ATTEMPT_TIMEOUT, client.call_tool(params.clone())).await;
    let result = match first {
        Ok(Ok(result)) => result,
        failed => {
            retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::timeout(ATTEMPT_TIMEOUT, client.call_tool(params))
                .await
                .unwrap_or_else(|_| panic!("{name} timed out twice (first: {failed:?})"))
                .unwrap_or_else(|error| panic!("{name} failed twice: {error} (first: {failed:?})"))
        }
    };
    let result = serde_json::to_value(result).unwrap();
    assert_ne!(result["isError"], true, "{name}: {result}");
    result
}

/// The names `tools/list` gives the session now.
async fn tool_names(client: &Client) -> Vec<String> {
    tokio::time::timeout(ATTEMPT_TIMEOUT, client.list_all_tools())
        .await
        .unwrap_or_else(|_| panic!("tools/list timed out"))
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect()
}

fn expected(groups: &[&[&str]]) -> Vec<String> {
    std::iter::once(&CORE[..])
        .chain(groups.iter().copied())
        .flatten()
        .map(|name| (*name).to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_outlives_the_replica_killed_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let files_root = dir.path().join("files");
    std::fs::create_dir(&files_root).unwrap();
    std::fs::write(files_root.join("notes.txt"), "replicated").unwrap();
    let mut replicas = tokio::task::spawn_blocking({
        let (dir, files_root) = (dir.path().to_path_buf(), files_root.clone());
        move || start_replicas(3, &dir, &files_root, &server_url())
    })
    .await
    .unwrap();
    let proxy = RoundRobin::start(replicas.iter().map(|r| r.address).collect()).await;
    let client = connect(proxy.address).await;
    let retries = AtomicUsize::new(0);

    // load_tool_group is not idempotent in what it records: not retried.
    for group in ["time", "files"] {
        let params = CallToolRequestParams::new("load_tool_group")
            .with_arguments(json!({"group_name": group}).as_object().unwrap().clone());
        let loaded = tokio::time::timeout(ATTEMPT_TIMEOUT, client.call_tool(params))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(loaded.is_error, Some(true), "{loaded:?}");
    }
    let both = expected(&[&TIME_TOOLS, &FILES_TOOLS]);
    assert_eq!(tool_names(&client).await, both);

    // The session works; at round 5 the first replica is killed from
    // another task, while calls are on their way through the proxy.
    let mut victim = Some(replicas.remove(0));
    let mut kill = None;
    let mut served_at_kill = Vec::new();
    for round in 0..40 {
        if round == 5 {
            let mut victim = victim.take().unwrap();
            kill = Some(tokio::task::spawn_blocking(move || victim.kill()));
        }
        if round == 10 {
            kill.take().unwrap().await.unwrap();
            served_at_kill = proxy.served();
        }
        let now = call(&client, "time_now", json!({}), &retries).await;
        assert!(now["content"][0]["text"].is_string(), "{now}");
        let read = call(
            &client,
            "files_read",
            json!({"path": "notes.txt"}),
            &retries,
        )
        .await;
        assert!(
            read["content"][0]["text"]
                .as_str()
                .is_some_and(|text| text.contains("replicated")),
            "{read}"
        );
    }
    let served_after = proxy.served();
    assert!(served_at_kill[0] > 0, "{served_at_kill:?}");
    assert_eq!(
        served_after[0], served_at_kill[0],
        "the dead replica took connections: {served_after:?}"
    );
    for survivor in 1..3 {
        assert!(
            served_after[survivor] > served_at_kill[survivor],
            "survivor {survivor} served nothing after the kill: {served_at_kill:?} -> {served_after:?}"
        );
    }
    // At most the one request in flight to the killed replica was lost.
    assert!(retries.load(Ordering::Relaxed) <= 1, "{retries:?} retries");

    // Both survivors know both groups, in the order they were loaded.
    let before = proxy.served();
    for _ in 0..4 {
        assert_eq!(tool_names(&client).await, both);
    }
    // An unload through one survivor is seen by the other.
    let params = CallToolRequestParams::new("unload_tool_group")
        .with_arguments(json!({"group_name": "time"}).as_object().unwrap().clone());
    let unloaded = tokio::time::timeout(ATTEMPT_TIMEOUT, client.call_tool(params))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(unloaded.is_error, Some(true), "{unloaded:?}");
    for _ in 0..4 {
        assert_eq!(tool_names(&client).await, expected(&[&FILES_TOOLS]));
    }
    let after = proxy.served();
    for survivor in 1..3 {
        assert!(
            after[survivor] >= before[survivor] + 2,
            "survivor {survivor} took too few of the last requests: {before:?} -> {after:?}"
        );
    }
    client.cancel().await.unwrap();
}

/// A PostgreSQL server of the test's own, so restarting it disturbs no
/// other test (they share the one `scripts/with-postgres` starts). Built
/// with that server's programs; stopped when dropped.
struct PostgresServer {
    bin: PathBuf,
    /// The user servers run as, when not this one (PostgreSQL refuses
    /// root): every program runs as it.
    os_user: Option<String>,
    /// Holds the data directory and the socket.
    dir: tempfile::TempDir,
}

impl PostgresServer {
    /// Initializes a data directory and starts the server on a Unix
    /// socket beside it.
    fn start() -> Self {
        let bin = std::env::var("TOOLGATE_TEST_POSTGRES_BIN").unwrap_or_else(|_| {
            panic!("TOOLGATE_TEST_POSTGRES_BIN is not set: run the tests with ./scripts/test")
        });
        let server = Self {
            bin: bin.into(),
            os_user: std::env::var("TOOLGATE_TEST_POSTGRES_OS_USER").ok(),
            dir: tempfile::tempdir().unwrap(),
        };
        if let Some(user) = &server.os_user {
            use std::os::unix::fs::PermissionsExt;
            let status = Command::new("chown")
                .arg(user)
                .arg(server.dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown {user} failed");
            std::fs::set_permissions(server.dir.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        let data = server.data();
        server.run(
            "initdb",
            &[
                OsStr::new("--auth=trust"),
                OsStr::new("--encoding=utf8"),
                OsStr::new("-U"),
                OsStr::new("postgres"),
                OsStr::new("-D"),
                data.as_os_str(),
            ],
        );
        let socket = format!("-h \"\" -k {}", server.dir.path().display());
        server.pg_ctl("start", &["-o", &socket]);
        server
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Its libpq URL.
    fn url(&self) -> String {
        format!(
            "postgresql://postgres:@/postgres?host={}",
            self.dir.path().display()
        )
    }

    /// `restart -m fast`: every connection is cut, the server is down for a
    /// moment, then back on the same socket (`pg_ctl` keeps the options).
    fn restart(&self) {
        self.pg_ctl("restart", &[]);
    }

    /// `pg_ctl ACTION -D DATA -w -m fast -l LOG EXTRA...`, waiting for it.
    fn pg_ctl(&self, action: &str, extra: &[&str]) {
        let (data, log) = (self.data(), self.dir.path().join("log"));
        let mut args = vec![
            OsStr::new(action),
            OsStr::new("-D"),
            data.as_os_str(),
            OsStr::new("-w"),
            OsStr::new("-m"),
            OsStr::new("fast"),
            OsStr::new("-l"),
            log.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        self.run("pg_ctl", &args);
    }

    /// Runs one of the server's programs (as its user) and waits for it.
    fn run(&self, program: &str, args: &[&OsStr]) {
        let mut command = match &self.os_user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(self.bin.join(program));
                command
            }
            None => Command::new(self.bin.join(program)),
        };
        let output = command.args(args).stdin(Stdio::null()).output().unwrap();
        if !output.status.success() && !std::thread::panicking() {
            panic!(
                "{program} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.pg_ctl("stop", &[]);
    }
}

/// Calls `name` once: `Err` says how it failed (an error result, a
/// transport or protocol error, or no answer in 30 s); with how long it
/// took.
async fn attempt(client: &Client, name: &str) -> (Result<(), String>, Duration) {
    let started = std::time::Instant::now();
    let params = CallToolRequestParams::new(name.to_owned());
    let outcome =
        match tokio::time::timeout(Duration::from_secs(30), client.call_tool(params)).await {
            Ok(Ok(result)) if result.is_error == Some(true) => Err(format!(
                "error result: {}",
                serde_json::to_string(&result.content).unwrap()
            )),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(format!("failed: {error}")),
            Err(_) => Err("no answer in 30 s".to_owned()),
        };
    (outcome, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_go_on_after_the_database_restarts_under_them() {
    let dir = tempfile::tempdir().unwrap();
    let files_root = dir.path().join("files");
    std::fs::create_dir(&files_root).unwrap();
    let (server, replicas) = tokio::task::spawn_blocking({
        let (dir, files_root) = (dir.path().to_path_buf(), files_root.clone());
        move || {
            let server = PostgresServer::start();
            let replicas = start_replicas(2, &dir, &files_root, &server.url());
            (Arc::new(server), replicas)
        }
    })
    .await
    .unwrap();
    let proxy = RoundRobin::start(replicas.iter().map(|r| r.address).collect()).await;
    let client = connect(proxy.address).await;
    let retries = AtomicUsize::new(0);
    call(
        &client,
        "load_tool_group",
        json!({"group_name": "time"}),
        &retries,
    )
    .await;

    // Calls go on while the server restarts (all its connections cut, a
    // moment without a server). A replica answers from the session it
    // holds when the store fails it, so most of these succeed; none may
    // hang past the store's connect timeout (10 s), and none may find its
    // group gone: a replica that cannot read the history keeps the session
    // as it holds it.
    let restart = tokio::task::spawn_blocking({
        let server = Arc::clone(&server);
        move || server.restart()
    });
    let mut during = Vec::new();
    while !restart.is_finished() {
        during.push(attempt(&client, "time_now").await);
    }
    restart.await.unwrap();
    let slowest = during
        .iter()
        .map(|(_, took)| *took)
        .max()
        .unwrap_or_default();
    assert!(slowest < Duration::from_secs(12), "{during:#?}");
    assert!(
        during.iter().all(|(outcome, _)| outcome
            .as_ref()
            .err()
            .is_none_or(|error| !error.contains("not available"))),
        "{during:#?}"
    );

    // Afterwards, without restarting a replica, the session works as before.
    for _ in 0..10 {
        let (outcome, _) = attempt(&client, "time_now").await;
        outcome.unwrap();
    }
    assert_eq!(tool_names(&client).await, expected(&[&TIME_TOOLS]));
    // And the database is written and read again: a load through one
    // replica reaches the other only through it.
    let before = proxy.served();
    call(
        &client,
        "load_tool_group",
        json!({"group_name": "files"}),
        &retries,
    )
    .await;
    for _ in 0..4 {
        assert_eq!(
            tool_names(&client).await,
            expected(&[&TIME_TOOLS, &FILES_TOOLS])
        );
    }
    let after = proxy.served();
    assert!(
        after[0] > before[0] && after[1] > before[1],
        "{before:?} -> {after:?}"
    );
    assert_eq!(retries.load(Ordering::Relaxed), 0);
    client.cancel().await.unwrap();
}
