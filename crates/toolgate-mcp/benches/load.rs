//! Load benchmark of `toolgate serve` over streamable HTTP: many concurrent
//! MCP sessions, each initialising, loading the built-in `time` group and
//! calling `time_convert` again and again, every answer checked to be the
//! one its session asked for. Prints calls/s, errors, latency per call and
//! resident memory per idle session. Not a test: run it on a quiet machine.
//!
//! ```sh
//! cargo build --release -p toolgate-cli
//! cargo bench -p toolgate-mcp --bench load -- --sessions 1000 --seconds 30
//! ```
//!
//! See `bench/load/README.md` for what is measured and how.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The MCP revision the client speaks (the last with `initialize`).
const PROTOCOL: &str = "2025-11-25";
/// Every call's nonce is a UTC time this many seconds after 2000-01-01.
const EPOCH_2000: i64 = 946_684_800;

#[derive(Debug)]
struct Options {
    sessions: usize,
    seconds: f64,
    toolgate: PathBuf,
    client_threads: usize,
    settle: Duration,
    after: Duration,
    /// `--store` for every gateway; `None`: `--memory-store`.
    store: Option<String>,
    /// Gateways sharing the store; each session's requests go to them in
    /// turn.
    replicas: usize,
}

impl Options {
    fn parse() -> Result<Self, String> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut options = Self {
            sessions: 1000,
            seconds: 30.0,
            toolgate: root.join("target/release/toolgate"),
            client_threads: 1,
            settle: Duration::from_secs(2),
            after: Duration::ZERO,
            store: None,
            replicas: 1,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--sessions" => options.sessions = number(&value("--sessions")?)?,
                "--seconds" => options.seconds = number(&value("--seconds")?)?,
                "--toolgate-bin" => options.toolgate = PathBuf::from(value("--toolgate-bin")?),
                "--client-threads" => options.client_threads = number(&value("--client-threads")?)?,
                "--settle" => {
                    options.settle = Duration::from_secs_f64(number(&value("--settle")?)?)
                }
                "--after" => options.after = Duration::from_secs_f64(number(&value("--after")?)?),
                "--store" => options.store = Some(value("--store")?),
                "--replicas" => options.replicas = number::<usize>(&value("--replicas")?)?.max(1),
                // What `cargo bench` passes to every bench binary.
                "--bench" => {}
                other => return Err(format!("unknown option {other}\n{USAGE}")),
            }
        }
        options.toolgate = options.toolgate.canonicalize().unwrap_or(options.toolgate);
        Ok(options)
    }
}

const USAGE: &str = "options: --sessions N (1000) --seconds S (30) --toolgate-bin PATH \
    (target/release/toolgate) --client-threads N (1) --settle S (2) --after S (0) \
    --store FILE|URI (memory) --replicas N (1)";

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("not a number: {text}"))
}

/// The gateway under test, a `toolgate serve` process stopped when dropped.
struct GatewayProcess {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl GatewayProcess {
    /// Starts a gateway on `store` (`None`: in memory).
    fn start(binary: &PathBuf, store: Option<&str>) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let store_args = match store {
            Some(store) => vec!["--store", store],
            None => vec!["--memory-store"],
        };
        let child = Command::new(binary)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(store_args)
            .current_dir(dir.path())
            .env("TOOLGATE_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let gateway = Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            _dir: dir,
        };
        let address: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(address).is_err() {
            if Instant::now() > deadline {
                return Err("the gateway did not listen within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(gateway)
    }

    /// The gateway's resident memory (`VmRSS`), in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why a request did not give the answer it should have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Failure {
    /// The HTTP exchange failed or gave no JSON-RPC answer.
    Transport,
    /// A JSON-RPC error, or a tool result with `isError`.
    Error,
    /// A result that is not the one this call asked for: another session's
    /// or another call's answer.
    Mismatch,
}

/// One MCP session over streamable HTTP, spoken by hand with reqwest: the
/// same messages an SDK client sends, without the SDK's cost on the client
/// side of a two-core machine.
struct Session {
    http: reqwest::Client,
    /// The gateways, each request to the next in turn.
    urls: Vec<String>,
    id: String,
    next_request: u64,
}

impl Session {
    /// Opens a session on `urls[0]`; its later requests go to each of
    /// `urls` in turn.
    async fn open(http: &reqwest::Client, urls: Vec<String>) -> Result<Self, Failure> {
        let url = urls[0].as_str();
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "toolgate-load", "version": "0"}}});
        let response = post(http, url, None, &initialize).await?;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or(Failure::Transport)?
            .to_owned();
        let answer = answer(response, 0).await?;
        if answer["result"]["serverInfo"]["name"] != "toolgate" {
            return Err(Failure::Mismatch);
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post(http, url, Some(&id), &initialized).await?;
        if response.status() != reqwest::StatusCode::ACCEPTED {
            return Err(Failure::Transport);
        }
        let mut session = Self {
            http: http.clone(),
            urls,
            id,
            next_request: 1,
        };
        let loaded = session
            .call("load_tool_group", json!({"group_name": "time"}))
            .await?;
        if !tool_text(&loaded).starts_with("Loaded 2 tools from group 'Time'") {
            return Err(Failure::Mismatch);
        }
        Ok(session)
    }

    /// `tools/call` of `tool`; the result, or why there is none.
    async fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, Failure> {
        let request_id = self.next_request;
        self.next_request += 1;
        let request = json!({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let url = &self.urls[(request_id as usize) % self.urls.len()];
        let response = post(&self.http, url, Some(&self.id), &request).await?;
        let answer = answer(response, request_id).await?;
        let result = answer.get("result").ok_or(Failure::Error)?;
        if result["isError"] == true {
            return Err(Failure::Error);
        }
        Ok(result.clone())
    }

    /// Converts this call's nonce (a time unique to the session and call)
    /// and checks the answer carries it back.
    async fn echo(&mut self, nonce: i64) -> Result<(), Failure> {
        let time = utc(nonce);
        let result = self
            .call(
                "time_convert",
                json!({"time": time, "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"}),
            )
            .await?;
        let echoed = &result["structuredContent"]["source"]["datetime"];
        if *echoed == Value::String(time.replace('Z', "+00:00")) {
            Ok(())
        } else {
            Err(Failure::Mismatch)
        }
    }
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> Result<reqwest::Response, Failure> {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", PROTOCOL)
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.map_err(|_| Failure::Transport)
}

/// The JSON-RPC answer to `id` in a response: its JSON body, or the SSE
/// event carrying it.
async fn answer(response: reqwest::Response, id: u64) -> Result<Value, Failure> {
    if !response.status().is_success() {
        return Err(Failure::Transport);
    }
    let body = response.bytes().await.map_err(|_| Failure::Transport)?;
    let text = std::str::from_utf8(&body).map_err(|_| Failure::Transport)?;
    let messages = match serde_json::from_str::<Value>(text) {
        Ok(message) => vec![message],
        Err(_) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect(),
    };
    let message = messages
        .into_iter()
        .find(|m| m["id"] == id)
        .ok_or(Failure::Transport)?;
    if message.get("error").is_some() {
        return Err(Failure::Error);
    }
    Ok(message)
}

fn tool_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// `seconds` after 2000-01-01 as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(seconds: i64) -> String {
    let days = (EPOCH_2000 + seconds).div_euclid(86_400);
    let rest = (EPOCH_2000 + seconds).rem_euclid(86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// What one session's calls gave.
#[derive(Default)]
struct Outcome {
    latencies_us: Vec<u32>,
    failures: Vec<Failure>,
}

/// Calls until `deadline`, one at a time, each with a nonce no other call
/// of any session has.
async fn run_session(mut session: Session, index: usize, deadline: Instant) -> Outcome {
    let mut outcome = Outcome::default();
    let mut call = 0_i64;
    while Instant::now() < deadline {
        let nonce = (index as i64) * 1_000_000 + call;
        call += 1;
        let started = Instant::now();
        let result = session.echo(nonce).await;
        let micros = started.elapsed().as_micros();
        outcome
            .latencies_us
            .push(u32::try_from(micros).unwrap_or(u32::MAX));
        if let Err(failure) = result {
            outcome.failures.push(failure);
        }
    }
    outcome
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// CPU seconds (user and system) process `pid` has used, from
/// `/proc/<pid>/stat` (Linux counts them in ticks of 1/100 s).
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // After the command: state is field 3, utime 14 and stime 15.
    let ticks = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(14) + ticks(15)) / 100.0
}

/// CPU seconds the whole machine has spent busy (all cores), from the
/// first line of `/proc/stat`: everything but idle and iowait.
fn machine_busy_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|field| field.parse().ok())
        .collect();
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    (ticks.iter().sum::<f64>() - idle) / 100.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("{cores} cores, {cpu}")
}

/// Opens `count` sessions at once (initialize, initialized,
/// load_tool_group time), each on a gateway of its own to start with.
async fn open_sessions(
    http: &reqwest::Client,
    gateways: &[GatewayProcess],
    count: usize,
) -> Vec<Result<Session, Failure>> {
    let tasks: Vec<_> = (0..count)
        .map(|index| {
            let http = http.clone();
            // Each session starts on a gateway of its own and goes
            // round them from there.
            let mut urls: Vec<String> = gateways.iter().map(|g| g.url.clone()).collect();
            urls.rotate_left(index % gateways.len());
            tokio::spawn(async move { Session::open(&http, urls).await })
        })
        .collect();
    let mut sessions = Vec::with_capacity(tasks.len());
    for task in tasks {
        sessions.push(task.await.unwrap_or(Err(Failure::Transport)));
    }
    sessions
}

/// Every session calling at once for `seconds`; what each got, and how
/// long the calls took in all.
async fn call_until(sessions: Vec<Session>, seconds: f64) -> (Vec<Outcome>, f64) {
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let deadline = (start + Duration::from_secs_f64(seconds)).into_std();
    let tasks: Vec<_> = sessions
        .into_iter()
        .enumerate()
        .map(|(index, session)| {
            tokio::spawn(async move {
                tokio::time::sleep_until(start).await;
                run_session(session, index, deadline).await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        outcomes.push(task.await.unwrap_or_default());
    }
    (outcomes, start.elapsed().as_secs_f64())
}

/// Prints how many calls went through, how many failed and how, and
/// their latencies; returns how many failed.
#[expect(clippy::print_stdout, reason = "a benchmark prints its report")]
fn report_calls(outcomes: &[Outcome], seconds: f64) -> usize {
    let mut latencies: Vec<u32> = outcomes
        .iter()
        .flat_map(|o| o.latencies_us.clone())
        .collect();
    latencies.sort_unstable();
    let mut failures: Vec<Failure> = outcomes.iter().flat_map(|o| o.failures.clone()).collect();
    failures.sort_unstable();
    let count = |kind: Failure| failures.iter().filter(|f| **f == kind).count();
    let calls = latencies.len();
    let mean = latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / calls.max(1) as f64;
    println!(
        "calls: {calls} in {seconds:.1} s = {:.0} calls/s; errors: {} (transport {}, error results {}, mismatched answers {})",
        calls as f64 / seconds,
        failures.len(),
        count(Failure::Transport),
        count(Failure::Error),
        count(Failure::Mismatch)
    );
    println!(
        "latency per call: p50 {} µs, p99 {} µs, mean {mean:.0} µs, max {} µs",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.last().copied().unwrap_or(0)
    );
    failures.len()
}

#[expect(clippy::print_stdout, reason = "a benchmark prints its report")]
fn main() -> Result<(), String> {
    let options = Options::parse()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let gateways = (0..options.replicas)
        .map(|_| GatewayProcess::start(&options.toolgate, options.store.as_deref()))
        .collect::<Result<Vec<_>, String>>()?;
    let rss = || gateways.iter().map(GatewayProcess::rss).sum::<u64>();
    std::thread::sleep(options.settle);
    let rss_start = rss();
    let http = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "toolgate load: {} sessions, {} s of calls, {} ({}); client threads {}; {} gateway(s) on {}",
        options.sessions,
        options.seconds,
        options.toolgate.display(),
        machine(),
        options.client_threads,
        options.replicas,
        options.store.as_deref().unwrap_or("memory"),
    );

    // Open every session (initialize, initialized, load_tool_group time).
    let opened = Instant::now();
    let sessions = runtime.block_on(open_sessions(&http, &gateways, options.sessions));
    let open_seconds = opened.elapsed().as_secs_f64();
    let open_failures = sessions.iter().filter(|s| s.is_err()).count();
    let sessions: Vec<Session> = sessions.into_iter().filter_map(Result::ok).collect();
    std::thread::sleep(options.settle);
    let rss_idle = rss();
    println!(
        "opened {} sessions in {open_seconds:.2} s ({open_failures} failed); VmRSS {:.1} MiB before, {:.1} MiB with them idle: {:.0} bytes per idle session",
        sessions.len(),
        mib(rss_start),
        mib(rss_idle),
        (rss_idle.saturating_sub(rss_start)) as f64 / sessions.len().max(1) as f64
    );

    // Every session calls at once until the deadline.
    let gateway_pids: Vec<String> = gateways.iter().map(|g| g.child.id().to_string()).collect();
    let gateways_cpu = || gateway_pids.iter().map(|pid| cpu_seconds(pid)).sum::<f64>();
    let (gateway_cpu, client_cpu) = (gateways_cpu(), cpu_seconds("self"));
    let machine_busy = machine_busy_seconds();
    let (outcomes, seconds) = runtime.block_on(call_until(sessions, options.seconds));
    let rss_after = rss();
    let gateway_cpu = gateways_cpu() - gateway_cpu;
    let client_cpu = cpu_seconds("self") - client_cpu;
    let others_cpu = (machine_busy_seconds() - machine_busy - gateway_cpu - client_cpu).max(0.0);

    let failures = report_calls(&outcomes, seconds);
    println!(
        "CPU during the calls (100% = one core): gateway {:.0}%, this client {:.0}%, other processes {:.0}%; VmRSS after the calls: {:.1} MiB",
        100.0 * gateway_cpu / seconds,
        100.0 * client_cpu / seconds,
        100.0 * others_cpu / seconds,
        mib(rss_after)
    );
    if !options.after.is_zero() {
        std::thread::sleep(options.after);
        println!(
            "VmRSS {:.0} s after the calls, the sessions idle: {:.1} MiB",
            options.after.as_secs_f64(),
            mib(rss())
        );
    }
    if failures == 0 && open_failures == 0 {
        Ok(())
    } else {
        Err("some requests failed".into())
    }
}
