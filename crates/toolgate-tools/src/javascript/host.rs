//! [`ToolHost`]: what a JavaScript tool reaches outside its sandbox, and
//! the guards on it.
//!
//! - `fetch` goes through the `web` tool's address guard (no private,
//!   link-local or loopback address unless `[web] allow_private_addresses`;
//!   the address checked is the address connected to), follows at most
//!   [`MAX_REDIRECTS`] redirects, each checked again, drops credentials on a
//!   redirect to another origin, reads at most 10 MiB, and ends within the
//!   call's time limit and the `[web]` timeout, whichever comes first; at
//!   most [`MAX_FETCHES`] requests per call.
//! - `files` is the `files` tools' own code under the files root: the same
//!   resolution, the same refusals, writes only with `--allow-write`.
//! - Both act with the authority of the caller whose call runs the script:
//!   a host function the caller could not call as a tool (`files_read`,
//!   `files_list`, `files_write`, `web`'s `fetch`) is refused, and each use
//!   counts against the caller's rate limits.
//! - `console` lines go to the log under the tool's name, at most
//!   [`MAX_LOG_LINES`] a call, each cut to [`MAX_LOG_CHARS`].
//!
//! The methods run on the call's blocking thread; `fetch` blocks it on the
//! async runtime the call came from.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, COOKIE, HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use toolgate_js::{FetchRequest, FetchResponse, Host, LogLevel};

use crate::authority::Authority;
use crate::builtin::{Files, MAX_BODY_BYTES, WebConfig, checked_address, client, request_error};
use crate::output::ToolOutput;

/// Most redirects one `fetch` follows.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// Most `fetch` requests in one call.
pub(crate) const MAX_FETCHES: usize = 50;
/// Most `console` lines one call logs.
pub(crate) const MAX_LOG_LINES: usize = 200;
/// Longest `console` line logged, in characters.
pub(crate) const MAX_LOG_CHARS: usize = 4_000;

/// What one call of a JavaScript tool reaches: built for the call, dropped
/// with it.
#[derive(Debug)]
pub(crate) struct ToolHost {
    /// The tool, as the log names it.
    pub(crate) tool: String,
    /// Who the call acts for: what it may reach.
    pub(crate) authority: Authority,
    /// The files root, when the tools have one.
    pub(crate) files: Option<Files>,
    /// The `[web]` settings `fetch` keeps to.
    pub(crate) web: WebConfig,
    /// The async runtime the call came from, which `fetch` runs on.
    pub(crate) runtime: Handle,
    /// The call's cancellation.
    pub(crate) cancel: CancellationToken,
    pub(crate) fetches: AtomicUsize,
    pub(crate) lines: AtomicUsize,
}

impl Host for ToolHost {
    fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, String> {
        self.authority.reach("web", "web_fetch", "fetch")?;
        if self.fetches.fetch_add(1, Ordering::Relaxed) >= MAX_FETCHES {
            return Err(format!("at most {MAX_FETCHES} requests per call"));
        }
        let timeout = request.timeout.min(self.web.timeout);
        self.runtime.block_on(async {
            tokio::select! {
                answer = tokio::time::timeout(timeout, fetch(&self.web, request, timeout)) => {
                    answer.unwrap_or_else(|_| {
                        Err(format!("no answer within {} s", timeout.as_secs_f64()))
                    })
                }
                () = self.cancel.cancelled() => Err("the call was cancelled".to_owned()),
            }
        })
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        let files = self.files()?;
        self.authority.reach("files", "files_read", "read")?;
        answer(files.read(&json!({ "path": path }))).map(|output| output.model_text())
    }

    fn list_files(&self, path: &str) -> Result<Value, String> {
        let files = self.files()?;
        self.authority.reach("files", "files_list", "list")?;
        let output = answer(files.list(&json!({ "path": path })))?;
        let text = output.model_text();
        Ok(output.structured.unwrap_or(Value::String(text)))
    }

    fn write_file(&self, path: &str, text: &str) -> Result<(), String> {
        let files = self.files()?;
        if !files.writable() {
            return Err("files are read-only (toolgate was started without --allow-write)".into());
        }
        self.authority.reach("files", "files_write", "write")?;
        answer(files.write(&json!({ "path": path, "content": text }))).map(|_| ())
    }

    fn log(&self, level: LogLevel, message: &str) {
        let line = self.lines.fetch_add(1, Ordering::Relaxed);
        if line > MAX_LOG_LINES {
            return;
        }
        if line == MAX_LOG_LINES {
            tracing::warn!(target: "toolgate::javascript", tool = %self.tool, "more than {MAX_LOG_LINES} console lines in one call; the rest are dropped");
            return;
        }
        let message: String = message.chars().take(MAX_LOG_CHARS).collect();
        let tool = &self.tool;
        match level {
            LogLevel::Debug => {
                tracing::debug!(target: "toolgate::javascript", %tool, "{message}");
            }
            LogLevel::Info => tracing::info!(target: "toolgate::javascript", %tool, "{message}"),
            LogLevel::Warn => tracing::warn!(target: "toolgate::javascript", %tool, "{message}"),
            LogLevel::Error => {
                tracing::error!(target: "toolgate::javascript", %tool, "{message}");
            }
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl ToolHost {
    fn files(&self) -> Result<&Files, String> {
        self.files
            .as_ref()
            .ok_or_else(|| "there is no files root".to_owned())
    }
}

/// A `files` operation's answer: its output, or its error text.
fn answer(result: Result<ToolOutput, ToolOutput>) -> Result<ToolOutput, String> {
    match result {
        Ok(output) if !output.is_error => Ok(output),
        Ok(output) | Err(output) => Err(output.model_text()),
    }
}

/// Makes `request` through the address guard, following redirects.
async fn fetch(
    web: &WebConfig,
    request: FetchRequest,
    timeout: Duration,
) -> Result<FetchResponse, String> {
    let mut url = match Url::parse(request.url.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url,
        Ok(url) => return Err(format!("only http and https URLs, not {}", url.scheme())),
        Err(error) => return Err(format!("invalid URL `{}`: {error}", request.url)),
    };
    let mut method = Method::from_bytes(request.method.as_bytes())
        .map_err(|_| format!("invalid method {}", request.method))?;
    let mut headers = Vec::with_capacity(request.headers.len());
    for (name, value) in &request.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name `{name}`"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("invalid value for header `{name}`"))?;
        headers.push((name, value));
    }
    let mut body = request.body;
    for _ in 0..=MAX_REDIRECTS {
        let pinned = checked_address(web, &url).await?;
        let client = client(pinned, timeout)?;
        let mut builder = client.request(method.clone(), url.clone());
        for (name, value) in &headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = &body {
            builder = builder.body(body.clone());
        }
        let mut response = builder
            .send()
            .await
            .map_err(|failure| request_error(url.as_str(), &failure, timeout))?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok());
        if status.is_redirection()
            && let Some(location) = location
        {
            let next = url
                .join(location)
                .map_err(|error| format!("invalid redirect to `{location}`: {error}"))?;
            if next.origin() != url.origin() {
                headers.retain(|(name, _)| {
                    ![AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION].contains(name)
                });
            }
            let keeps_method = matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            if !keeps_method && method != Method::HEAD {
                method = Method::GET;
                body = None;
            }
            url = next;
            continue;
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|failure| request_error(url.as_str(), &failure, timeout))?
        {
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(format!(
                    "the response from {url} is larger than {} MiB",
                    MAX_BODY_BYTES >> 20
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        return Ok(FetchResponse {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or_default().to_owned(),
            url: url.to_string(),
            headers: response
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}
