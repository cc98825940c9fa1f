//! [`StdioChild`]: a stdio upstream's process and its MCP transport, with a
//! watch on what it writes. rmcp drops a line longer than 16 MiB (and logs
//! it), so a call whose answer was that line would wait for its timeout and
//! report one; the watch sees the oversized line go by, reads the request id
//! from its ends, and fails that call at once with the real reason.
//!
//! Its stderr is read through a pipe: each line goes to the gateway's log
//! at `info` (target `toolgate_mcp::upstream_stderr`), and the last ones are kept in a
//! [`StderrTail`], so a server that dies before the handshake is reported
//! with what it said (a TLS error, a missing module) rather than only
//! "connection closed".

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{NumberOrString, RequestId};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::relay::InFlight;

/// The longest line (one JSON-RPC message) rmcp reads from a stdio server.
pub(crate) const MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;

/// How long a closed server gets to exit before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// How much of each end of an oversized line is kept to find its id.
const END_BYTES: usize = 1024;

/// The stderr lines a [`StderrTail`] keeps, at most.
const TAIL_LINES: usize = 20;
/// The bytes a [`StderrTail`] keeps, at most.
const TAIL_BYTES: usize = 4096;
/// The bytes of one stderr line kept (and logged); the rest is dropped.
const LINE_BYTES: usize = 1024;
/// How long a failed start waits for the server's stderr to close, so the
/// lines it wrote as it died are in the error.
const STDERR_WAIT: Duration = Duration::from_secs(1);

/// A stdio server: its process and its transport.
pub(crate) struct StdioChild {
    child: Option<Child>,
    transport: AsyncRwTransport<RoleClient, LineWatch<ChildStdout>, ChildStdin>,
}

impl StdioChild {
    /// Starts `command` with piped stdin, stdout and stderr; an oversized
    /// message fails its call in `in_flight`, and what it writes on stderr
    /// is logged under `upstream` and kept in `stderr`.
    pub(crate) fn spawn(
        mut command: tokio::process::Command,
        in_flight: InFlight,
        upstream: &str,
        stderr: &StderrTail,
    ) -> io::Result<Self> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "the server's stdin or stdout is not a pipe",
            ));
        };
        if let Some(pipe) = child.stderr.take() {
            // Taken here, not in the task: a start that fails before the
            // task first runs still waits for it.
            let reading = stderr
                .reader
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            tokio::spawn(read_stderr(
                pipe,
                upstream.to_owned(),
                stderr.clone(),
                reading,
            ));
        }
        let watch = LineWatch::new(stdout, MAX_MESSAGE_BYTES, in_flight);
        Ok(Self {
            child: Some(child),
            transport: AsyncRwTransport::new(watch, stdin),
        })
    }
}

impl std::fmt::Debug for StdioChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioChild")
            .field("pid", &self.child.as_ref().and_then(Child::id))
            .finish_non_exhaustive()
    }
}

impl Transport<RoleClient> for StdioChild {
    type Error = io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes stdin, gives the server a moment to exit, then kills it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        if let Some(mut child) = self.child.take()
            && tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_err()
        {
            child.kill().await?;
        }
        Ok(())
    }
}

/// The last lines a stdio server wrote on stderr (at most [`TAIL_LINES`]
/// and [`TAIL_BYTES`]), shared between the task that reads them and the
/// start that reports them.
#[derive(Clone, Debug)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<Tail>>,
    /// Closed (its sender dropped) when the reading task ends: the server
    /// closed its stderr.
    done: watch::Receiver<()>,
    /// The sender, until a reading task takes it (or a failed start drops it).
    reader: Arc<Mutex<Option<watch::Sender<()>>>>,
}

#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Default for StderrTail {
    fn default() -> Self {
        let (sender, done) = watch::channel(());
        Self {
            lines: Arc::default(),
            done,
            reader: Arc::new(Mutex::new(Some(sender))),
        }
    }
}

impl StderrTail {
    /// Keeps `line`, dropping the oldest lines beyond the limits.
    fn push(&self, line: String) {
        let mut tail = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        tail.bytes += line.len();
        tail.lines.push_back(line);
        while tail.lines.len() > TAIL_LINES || (tail.bytes > TAIL_BYTES && tail.lines.len() > 1) {
            if let Some(old) = tail.lines.pop_front() {
                tail.bytes -= old.len();
            }
        }
    }

    /// `reason`, followed by `; stderr: ` and the lines kept, one per line,
    /// when there are any. Waits a moment for the server's stderr to close
    /// first (it has exited, or is being killed), so its last words are in.
    pub(crate) async fn explain(&self, reason: String) -> String {
        // Nobody reads (the spawn failed): there is nothing to wait for.
        drop(
            self.reader
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(STDERR_WAIT, done.changed()).await;
        let tail = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.lines.is_empty() {
            return reason;
        }
        let lines: Vec<&str> = tail.lines.iter().map(String::as_str).collect();
        format!("{reason}; stderr: {}", lines.join("\n"))
    }
}

/// Reads a server's stderr to its end: each line is logged and kept in
/// `tail`. Control characters are dropped, and a line is cut at
/// [`LINE_BYTES`]. `_reading` is dropped when it ends.
async fn read_stderr(
    mut pipe: ChildStderr,
    upstream: String,
    tail: StderrTail,
    _reading: Option<watch::Sender<()>>,
) {
    let mut buffer = [0u8; 4096];
    let mut line = Vec::new();
    loop {
        let mut read = ReadBuf::new(&mut buffer);
        let filled = std::future::poll_fn(|cx| Pin::new(&mut pipe).poll_read(cx, &mut read)).await;
        let bytes = read.filled();
        if filled.is_err() || bytes.is_empty() {
            break;
        }
        for part in bytes.split_inclusive(|&byte| byte == b'\n') {
            let (text, end) = match part.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (part, false),
            };
            let room = LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&text[..text.len().min(room)]);
            if end {
                keep_line(&upstream, &tail, &line);
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        keep_line(&upstream, &tail, &line);
    }
}

/// Logs one stderr line of `upstream` and keeps it in `tail`.
fn keep_line(upstream: &str, tail: &StderrTail, line: &[u8]) {
    let text: String = String::from_utf8_lossy(line)
        .chars()
        .filter(|c| !c.is_control() || *c == '\t')
        .collect();
    let text = text.trim_end();
    if text.is_empty() {
        return;
    }
    // What a server says of itself at start ("running on stdio") is no
    // warning; when it fails to start, its last lines end the warning of
    // the failure.
    tracing::info!(target: "toolgate_mcp::upstream_stderr", upstream, "{text}");
    tail.push(text.to_owned());
}

/// Passes a stream through, watching for lines longer than `limit`.
#[derive(Debug)]
pub(crate) struct LineWatch<R> {
    inner: R,
    limit: usize,
    in_flight: InFlight,
    /// Bytes of the current line so far.
    line: usize,
    /// Its first bytes.
    head: Vec<u8>,
    /// Its last bytes, kept once it is longer than the limit.
    tail: Vec<u8>,
}

impl<R> LineWatch<R> {
    fn new(inner: R, limit: usize, in_flight: InFlight) -> Self {
        Self {
            inner,
            limit,
            in_flight,
            line: 0,
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// Follows the bytes just read.
    fn watch(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&byte| byte == b'\n');
            let part = &bytes[..end.unwrap_or(bytes.len())];
            if self.head.len() < END_BYTES {
                let room = END_BYTES - self.head.len();
                self.head.extend_from_slice(&part[..part.len().min(room)]);
            }
            self.line += part.len();
            if self.line > self.limit {
                self.tail
                    .extend_from_slice(&part[part.len().saturating_sub(END_BYTES)..]);
                let excess = self.tail.len().saturating_sub(END_BYTES);
                self.tail.drain(..excess);
            }
            let Some(end) = end else { return };
            if self.line > self.limit {
                let id = message_id(&self.head, &self.tail);
                self.in_flight.too_large(id.as_ref(), self.line);
            }
            self.line = 0;
            self.head.clear();
            self.tail.clear();
            bytes = &bytes[end + 1..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.watch(&buf.filled()[before..]);
        }
        polled
    }
}

/// The `id` of a JSON-RPC message from its first and last bytes: SDKs put
/// it near the start (`{"jsonrpc":"2.0","id":7,"result":...`) or at the
/// very end (`...,"jsonrpc":"2.0","id":7}`).
fn message_id(head: &[u8], tail: &[u8]) -> Option<RequestId> {
    let head = String::from_utf8_lossy(head);
    let compact: String = head
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(64)
        .collect();
    for start in [r#"{"jsonrpc":"2.0","id":"#, r#"{"id":"#] {
        if let Some(rest) = compact.strip_prefix(start) {
            return leading_id(rest);
        }
    }
    let tail = String::from_utf8_lossy(tail);
    let tail = tail.trim_end().strip_suffix('}')?;
    let (_, value) = tail.rsplit_once(r#""id""#)?;
    let value = value.trim_start().strip_prefix(':')?.trim();
    leading_id(value).filter(|_| !value.contains(','))
}

/// A number or a string at the start of `text`.
fn leading_id(text: &str) -> Option<RequestId> {
    if let Some(quoted) = text.strip_prefix('"') {
        let (id, _) = quoted.split_once('"')?;
        return Some(NumberOrString::String(id.into()));
    }
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok().map(NumberOrString::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_an_oversized_message_is_read_from_either_end() {
        let number = |n| Some(NumberOrString::Number(n));
        assert_eq!(
            message_id(br#"{"jsonrpc":"2.0","id":7,"result":{"content":["#, b"]}}"),
            number(7)
        );
        assert_eq!(
            message_id(
                br#"{"result":{"id":9,"x":"#,
                br#"x"},"jsonrpc":"2.0","id":12}"#
            ),
            number(12)
        );
        assert_eq!(
            message_id(br#"{"jsonrpc": "2.0", "id": "req-1", "result": {"#, b"}}"),
            Some(NumberOrString::String("req-1".into()))
        );
        assert_eq!(message_id(br#"{"result":{"#, br#"{"id":3,"b":1}}}"#), None);
    }

    #[tokio::test]
    async fn the_stderr_tail_keeps_the_last_lines_within_its_limits() {
        let tail = StderrTail::default();
        for n in 1..=30 {
            tail.push(format!("line {n}"));
        }
        // No reader was started: nothing to wait for.
        let explained = tail.explain("it failed".into()).await;
        let kept: Vec<String> = (11..=30).map(|n| format!("line {n}")).collect();
        assert_eq!(explained, format!("it failed; stderr: {}", kept.join("\n")));

        let tail = StderrTail::default();
        for n in 0..6 {
            tail.push(format!("{n}{}", "x".repeat(LINE_BYTES - 1)));
        }
        let explained = tail.explain("it failed".into()).await;
        let lines: Vec<&str> = explained.split('\n').collect();
        assert_eq!(lines.len(), TAIL_BYTES / LINE_BYTES);
        assert!(lines[lines.len() - 1].starts_with('5'), "{explained}");
        assert_eq!(StderrTail::default().explain("quiet".into()).await, "quiet");
    }

    #[test]
    fn lines_over_the_limit_are_reported_once_each() {
        let in_flight = InFlight::default();
        let (relay, _events) = tokio::sync::mpsc::channel(1);
        let token = rmcp::model::ProgressToken(NumberOrString::Number(7));
        let (guard, mut too_large) = in_flight.register(None, relay);
        guard.sent(RequestId::Number(7), token);
        let mut watch = LineWatch::new(tokio::io::empty(), 64, in_flight);
        watch.watch(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"short\":1}\n");
        assert!(
            too_large.try_recv().is_err(),
            "a line under the limit was reported"
        );
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}\n",
            "x".repeat(100)
        );
        for chunk in long.as_bytes().chunks(10) {
            watch.watch(chunk);
        }
        assert_eq!(too_large.try_recv().unwrap(), long.len() - 1);
    }
}
