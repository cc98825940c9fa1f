//! [`AuditLog`]: one JSON line per tool call, appended to a file: when,
//! which client and session, which tool, how it ended and how long it took.
//! Arguments are recorded as their SHA-256 unless the configuration asks
//! for them in clear, so the log holds no secret a call carried.
//!
//! Lines go to a writer task through a bounded queue: a call waits for room
//! rather than a line being dropped, and a slow disk delays calls instead
//! of losing their record.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::clients::{Owner, TokenHash};
use crate::metrics::Outcome;

/// Lines queued for the writer at most; a call beyond waits.
const QUEUE: usize = 4096;

/// How often a failing write is logged at most.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Where the audit log goes and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditConfig {
    /// The file lines are appended to (created when missing).
    pub path: PathBuf,
    /// Record each call's arguments in clear instead of their SHA-256.
    pub arguments: bool,
}

/// One tool call, as the audit log records it.
#[derive(Debug)]
pub(crate) struct AuditedCall<'a> {
    /// The client, and the user of an OAuth token.
    pub(crate) owner: &'a Owner,
    pub(crate) session: Option<&'a str>,
    /// The tool's name as the catalog holds it (`(unknown)` for a name no
    /// tool holds), and its group (`core` for a meta-tool).
    pub(crate) group: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) outcome: Outcome,
    pub(crate) took: Duration,
    pub(crate) arguments: &'a Value,
}

/// The writer's end of the audit log.
#[derive(Debug, Clone)]
pub struct AuditLog {
    lines: mpsc::Sender<String>,
    arguments: bool,
}

impl AuditLog {
    /// Opens (or creates) `config.path` for appending and starts its writer.
    pub async fn open(config: &AuditConfig) -> std::io::Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&config.path)
            .await
            .map_err(|error| {
                std::io::Error::new(
                    error.kind(),
                    format!("opening the audit log {}: {error}", config.path.display()),
                )
            })?;
        let (lines, queue) = mpsc::channel(QUEUE);
        tokio::spawn(write_lines(file, queue, config.path.clone()));
        Ok(Self {
            lines,
            arguments: config.arguments,
        })
    }

    /// Records a call; waits when the writer is behind.
    pub(crate) async fn record(&self, call: AuditedCall<'_>) {
        let mut line = json!({
            "time": jiff::Timestamp::now().to_string(),
            "client": call.owner.client.as_ref().map(|client| client.as_str()),
            "session": call.session,
            "group": call.group,
            "tool": call.tool,
            "outcome": call.outcome.label(),
            "duration_ms": (call.took.as_secs_f64() * 1e6).round() / 1e3,
        });
        if let Some(user) = &call.owner.subject {
            line["user"] = user.as_ref().into();
        }
        if self.arguments {
            line["arguments"] = call.arguments.clone();
        } else {
            line["arguments_sha256"] = hash(call.arguments).into();
        }
        let mut text = line.to_string();
        text.push('\n');
        if self.lines.send(text).await.is_err() {
            tracing::error!("the audit log's writer has stopped; a call went unrecorded");
        }
    }
}

/// The SHA-256 of the arguments' JSON text (keys in the order sent), hex.
fn hash(arguments: &Value) -> String {
    TokenHash::of(&arguments.to_string()).to_hex()
}

/// Appends queued lines to `file`, a batch at a time, until every sender
/// is gone.
async fn write_lines(mut file: tokio::fs::File, mut queue: mpsc::Receiver<String>, path: PathBuf) {
    let mut batch = Vec::with_capacity(64);
    let mut logged_at: Option<Instant> = None;
    while queue.recv_many(&mut batch, 256).await > 0 {
        let text: String = batch.drain(..).collect();
        let written = async {
            file.write_all(text.as_bytes()).await?;
            file.flush().await
        }
        .await;
        if let Err(error) = written {
            report(&path, &error, &mut logged_at);
        }
    }
}

fn report(path: &Path, error: &std::io::Error, logged_at: &mut Option<Instant>) {
    let now = Instant::now();
    if logged_at.is_none_or(|at| now.duration_since(at) >= ERROR_LOG_INTERVAL) {
        tracing::error!(path = %path.display(), %error, "writing the audit log failed; calls go on unrecorded");
        *logged_at = Some(now);
    }
}
