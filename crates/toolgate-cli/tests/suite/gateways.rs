//! `toolgate` as the tests run it, and the `toolgate serve` children they
//! speak to: over stdio (one JSON-RPC line at a time), over HTTP on a free
//! port (its banner read, or its stderr logged to a file), and the raw HTTP
//! exchanges sent to one.

use std::path::Path;
use std::process::Output;

pub(super) fn toolgate(args: &[&str], cwd: &Path) -> Output {
    super::support::toolgate(cwd).args(args).output().unwrap()
}

pub(super) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Starts `toolgate serve` without the built-in groups on a free port;
/// returns it once it listens, with what it printed so far.
pub(super) fn serve_in(dir: &Path, extra: &[&str]) -> (std::process::Child, String) {
    serve_listening(dir, &[&["--no-builtins"], extra].concat())
}

/// Starts `toolgate serve` with `args` on a free port; returns it once it
/// listens, with what it printed so far.
pub(super) fn serve_listening(dir: &Path, args: &[&str]) -> (std::process::Child, String) {
    super::support::pin_deferred(dir);
    let (child, printed, _) = super::support::listening(
        super::support::toolgate(dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args),
    );
    (child, printed)
}

/// A `toolgate serve --stdio` child, spoken to one JSON-RPC line at a time.
pub(super) struct StdioGateway {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl StdioGateway {
    /// Starts `toolgate serve --stdio --memory-store` and the `extra`
    /// arguments in `dir`.
    pub(super) fn start(dir: &Path, extra: &[&str]) -> Self {
        let args: Vec<&str> = std::iter::once("--memory-store")
            .chain(extra.iter().copied())
            .collect();
        Self::start_with(dir, &args)
    }

    /// Starts `toolgate serve --stdio` with `args` (a store among them) in
    /// `dir`.
    pub(super) fn start_with(dir: &Path, args: &[&str]) -> Self {
        super::support::pin_deferred(dir);
        let mut command = super::support::toolgate(dir);
        command
            .args(["serve", "--stdio"])
            .args(args)
            .stderr(std::process::Stdio::null());
        Self::spawn(command)
    }

    /// Starts `command` (a `toolgate serve --stdio`, its stderr set by the
    /// caller) with piped stdin and stdout.
    pub(super) fn spawn(mut command: std::process::Command) -> Self {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;

        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
        }
    }

    pub(super) fn send(&mut self, message: serde_json::Value) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
    }

    /// Ends the session as a client does, closing stdin, and waits for the
    /// gateway to exit.
    pub(super) fn close(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }

    /// Sends request `id` and waits for its answer (notifications passed
    /// over).
    pub(super) fn request(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `tools/mathx.json` and `tools/mathx.js` into `dir`: a group of
/// two JavaScript tools, one adding, one throwing on line 5.
pub(super) fn write_mathx(dir: &Path) {
    let tools = dir.join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(
        tools.join("mathx.json"),
        r#"[
          {"_meta": true, "display_name": "Math", "description": "Arithmetic in JavaScript"},
          {"name": "mathx_add", "function": "add", "description": "Adds a and b",
           "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
          {"name": "mathx_divide", "function": "divide", "description": "Divides a by b",
           "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}
        ]"#,
    )
    .unwrap();
    std::fs::write(
        tools.join("mathx.js"),
        "async function add({ a, b }) {\n  return { sum: a + b };\n}\nfunction divide({ a, b }) {\n  if (b === 0) throw new RangeError(\"division by zero\");\n  return a / b;\n}\n",
    )
    .unwrap();
}

/// A `toolgate serve` child over HTTP, killed when dropped.
pub(super) struct HttpGateway {
    child: std::process::Child,
    /// Where its MCP endpoint listens.
    pub(super) url: String,
}

impl HttpGateway {
    pub(super) fn start(dir: &Path) -> Self {
        let (child, printed) = serve_in(dir, &["--memory-store"]);
        let url = listening_url(&printed);
        Self { child, url }
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` over an rmcp client, bounded in time.
pub(super) async fn call_over(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let serde_json::Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), client.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{name} timed out"))
        .unwrap();
    serde_json::to_value(result).unwrap()
}

/// The URL a `serve` banner says it listens on.
pub(super) fn listening_url(banner: &str) -> String {
    banner
        .lines()
        .find_map(|line| line.strip_prefix("Listening on "))
        .unwrap_or_else(|| panic!("no URL in:\n{banner}"))
        .trim()
        .to_owned()
}

/// One blocking POST of `initialize` to `url`, with `token` when given; the
/// status line.
pub(super) fn initialize_status(url: &str, token: Option<&str>) -> String {
    initialize_response(url, token)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The whole answer to an `initialize` sent with `token`.
pub(super) fn initialize_response(url: &str, token: Option<&str>) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli-test","version":"0"}}}"#;
    let auth = token.map_or(String::new(), |token| {
        format!("authorization: Bearer {token}\r\n")
    });
    exchange(
        url,
        &format!(
            "POST /mcp HTTP/1.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{auth}content-length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Sends `request` (its first lines, without `host` and `connection`) to
/// the gateway at `url` and reads the whole answer.
pub(super) fn exchange(url: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (head, rest) = request.split_once("\r\n").unwrap();
    let request = format!("{head}\r\nhost: {address}\r\nconnection: close\r\n{rest}");
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// `toolgate serve` on a free port of `listen` with its stderr in
/// `dir/serve.log`; the child and its MCP URL.
pub(super) fn serve_logged(dir: &Path, listen: &str) -> (std::process::Child, String) {
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let child = super::support::toolgate(dir)
        .args([
            "serve",
            "--listen",
            listen,
            "--no-builtins",
            "--memory-store",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let url = until_logged(dir, "Listening on ")
        .lines()
        .find_map(|line| line.strip_prefix("Listening on "))
        .unwrap()
        .trim()
        .to_owned();
    (child, url)
}

/// The log once it holds `text` (at most 20 s).
pub(super) fn until_logged(dir: &Path, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
        if log.contains(text) {
            return log;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in:\n{log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
