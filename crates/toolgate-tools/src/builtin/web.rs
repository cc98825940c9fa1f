//! The `web` group: search through a SearXNG-compatible JSON endpoint, and
//! fetch a page as text. Exposed as one polymorphic `web` tool by default
//! (actions `search` and `fetch`). Without an endpoint, search's description
//! says it needs one, and a search answers an error.
//!
//! Every result is JSON with a `type`: `search_results`, `fetched_page`,
//! `redirect` or `error`. Fetch refuses private, link-local and loopback
//! addresses unless configured, checks the address it connects to (so a DNS
//! answer cannot change between the check and the request), never follows a
//! redirect (the model sees it and decides), and truncates long pages.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use reqwest::{Response, StatusCode, Url, redirect};
use serde_json::{Value, json};
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;
use toolgate_core::ToolDefinition;
use toolgate_store::ConversationId;

use super::arguments::{definition, string_argument};
use super::html::{ConversionCancelled, html_to_text_until};
use crate::context::CallContext;
use crate::error::ToolboxError;
use crate::output::ToolOutput;

pub(super) const GROUP: &str = "web";
pub(super) const DISPLAY_NAME: &str = "Web";
pub(super) const DESCRIPTION: &str = "Search the web and fetch web pages as text";

const SEARCH: &str = "web_search";
const FETCH: &str = "web_fetch";

/// Most results one search returns, whatever the configuration says.
pub const MAX_SEARCH_RESULTS: usize = 10;
/// Largest response body read, before text extraction and truncation.
pub(crate) const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// How the `web` tools reach the web.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConfig {
    /// A SearXNG instance (or anything answering its `/search?format=json`
    /// API); search answers an error while it is unset.
    pub search_url: Option<String>,
    /// Results per search, at most [`MAX_SEARCH_RESULTS`].
    pub max_results: usize,
    /// Searches allowed in one agent turn.
    pub searches_per_turn: usize,
    /// Longest page text returned, in characters.
    pub max_content_chars: usize,
    /// Whether fetch may reach private, link-local and loopback addresses.
    pub allow_private_addresses: bool,
    /// Longest a search or fetch may take.
    pub timeout: Duration,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            search_url: None,
            max_results: MAX_SEARCH_RESULTS,
            searches_per_turn: 10,
            max_content_chars: 40_000,
            allow_private_addresses: false,
            timeout: Duration::from_secs(15),
        }
    }
}

#[derive(Debug)]
pub(super) struct Web {
    config: WebConfig,
    /// Per conversation: the turn searches were last counted in, and how many.
    searches: Mutex<HashMap<Option<ConversationId>, (u64, usize)>>,
}

impl Web {
    pub(super) fn new(config: WebConfig) -> Self {
        Self {
            config,
            searches: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn definitions(&self) -> Result<Vec<ToolDefinition>, ToolboxError> {
        Ok(vec![
            definition(
                SEARCH,
                &self.search_description(),
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to search for"}
                    },
                    "required": ["query"]
                }),
            )?,
            definition(
                FETCH,
                "Fetch an http or https page and return its text. A redirect is returned as such, not followed.",
                json!({
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "description": "The http or https URL to fetch"}
                    },
                    "required": ["url"]
                }),
            )?,
        ])
    }

    /// What the model reads of `web_search`: what a search returns, or,
    /// while no search endpoint is configured, that it needs one (the tool
    /// stays, so a configuration or policy naming it keeps working).
    fn search_description(&self) -> String {
        if self.config.search_url.is_none() {
            return "Search the web. Needs a search endpoint, and none is configured: every search answers an error until `search_url` is set in the [web] table.".to_owned();
        }
        format!(
            "Search the web. Returns up to {} results (url, title, snippet). At most {} searches per response.",
            self.config.max_results.min(MAX_SEARCH_RESULTS),
            self.config.searches_per_turn
        )
    }

    /// Runs a `web` tool; `None` when `tool` is not one.
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        context: &CallContext,
    ) -> Option<ToolOutput> {
        let output = match tool {
            SEARCH => match string_argument(arguments, "query") {
                Ok(query) => self.search(query, context).await,
                Err(error) => error,
            },
            FETCH => match string_argument(arguments, "url") {
                Ok(url) => self.fetch(url, context).await,
                Err(error) => error,
            },
            _ => return None,
        };
        Some(output)
    }

    async fn search(&self, query: &str, context: &CallContext) -> ToolOutput {
        let error = |message: String| error_output(message, "query", query);
        if let Err(message) = self.count_search(context) {
            return error(message);
        }
        let Some(base) = &self.config.search_url else {
            return error(
                "No search endpoint is configured: set search_url in the [web] table to a SearXNG instance with its JSON format enabled".to_owned(),
            );
        };
        let mut url = match Url::parse(base) {
            Ok(url) => url,
            Err(parse) => {
                return error(format!(
                    "The configured search_url `{base}` is not a URL: {parse}"
                ));
            }
        };
        if !url.path().trim_end_matches('/').ends_with("/search") {
            let path = format!("{}/search", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let client = match client(None, self.config.timeout) {
            Ok(client) => client,
            Err(message) => return error(message),
        };
        let response = match client.get(url).send().await {
            Ok(response) => response,
            Err(failure) => {
                return error(request_error(
                    "The search service",
                    &failure,
                    self.config.timeout,
                ));
            }
        };
        let status = response.status();
        if !status.is_success() {
            return error(format!(
                "HTTP {} from the search service",
                status_text(status)
            ));
        }
        let invalid = |reason: String| {
            error(format!(
                "Invalid response from the search service: {reason}"
            ))
        };
        let bytes = match read_body(response).await {
            Ok(bytes) => bytes,
            Err(failure) => return invalid(failure.to_string()),
        };
        // Parsed off the async workers: the answer is outside input of up
        // to MAX_BODY_BYTES.
        let parsed = off_worker(&context.cancel, move |_| {
            serde_json::from_slice::<Value>(&bytes)
        })
        .await;
        let body = match parsed {
            Ok(Ok(body)) => body,
            Ok(Err(failure)) => return invalid(failure.to_string()),
            Err(failure) => return invalid(failure.to_string()),
        };
        let limit = self.config.max_results.min(MAX_SEARCH_RESULTS);
        let results: Vec<Value> = body
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(limit)
            .map(|result| {
                json!({
                    "url": result.get("url").cloned().unwrap_or(Value::Null),
                    "title": result.get("title").cloned().unwrap_or(Value::Null),
                    "snippet": result.get("content").cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        let mut value = json!({
            "type": "search_results",
            "query": query,
            "results": results,
        });
        if let Some(total) = body.get("number_of_results").filter(|n| n.is_number()) {
            value["total_results"] = total.clone();
        }
        ToolOutput::json(value)
    }

    /// Counts a search against the turn's limit; `Err` past it. Callers
    /// without turns (the gateway) have no per-turn limit.
    fn count_search(&self, context: &CallContext) -> Result<(), String> {
        let Some(turn) = context.turn else {
            return Ok(());
        };
        let mut searches = self.searches.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = searches
            .entry(context.conversation.clone())
            .or_insert((turn, 0));
        if entry.0 != turn {
            *entry = (turn, 0);
        }
        if entry.1 >= self.config.searches_per_turn {
            return Err(format!(
                "Search limit reached ({} searches per response)",
                self.config.searches_per_turn
            ));
        }
        entry.1 += 1;
        Ok(())
    }

    /// Fetches `text` and returns its text. Everything proportional to the
    /// page's size (UTF-8 repair, HTML conversion, counting and truncating
    /// characters) runs off the async workers under the call's
    /// cancellation, so a large or hostile page neither holds a worker nor
    /// outlives its deadline.
    async fn fetch(&self, text: &str, context: &CallContext) -> ToolOutput {
        let error = |message: String| error_output(message, "url", text);
        let url = match Url::parse(text.trim()) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => url,
            Ok(url) => {
                return error(format!(
                    "Invalid URL: must be http or https, not {}",
                    url.scheme()
                ));
            }
            Err(parse) => return error(format!("Invalid URL: {parse}")),
        };
        let pinned = match checked_address(&self.config, &url).await {
            Ok(pinned) => pinned,
            Err(message) => return error(message),
        };
        let client = match client(pinned, self.config.timeout) {
            Ok(client) => client,
            Err(message) => return error(message),
        };
        let response = match client.get(url.clone()).send().await {
            Ok(response) => response,
            Err(failure) => return error(request_error("The page", &failure, self.config.timeout)),
        };
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok());
            let Some(location) = location else {
                return error(format!(
                    "HTTP {} without a Location header",
                    status_text(status)
                ));
            };
            let target = url
                .join(location)
                .map_or_else(|_| location.to_owned(), String::from);
            return ToolOutput::json(json!({
                "type": "redirect",
                "original_url": text,
                "redirect_url": target,
                "status": status.as_u16(),
            }));
        }
        if !status.is_success() {
            return error(format!("HTTP {}", status_text(status)));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let is_text = content_type.is_empty()
            || content_type.starts_with("text/")
            || content_type.contains("json")
            || content_type.contains("xml")
            || content_type.contains("javascript");
        if !is_text {
            return error(format!(
                "Unsupported content type `{content_type}`: only text pages can be fetched"
            ));
        }
        let body = match read_body(response).await {
            Ok(body) => body,
            Err(failure) => return error(request_error("The page", &failure, self.config.timeout)),
        };
        let max_chars = self.config.max_content_chars;
        let page = off_worker(&context.cancel, move |cancel| {
            page_text(&body, &content_type, max_chars, cancel)
        })
        .await;
        let page = match page {
            Ok(Ok(page)) => page,
            Ok(Err(ConversionCancelled)) => {
                // The call was cancelled (its deadline passed or its caller
                // gave up) while the page converted: whoever cancelled it
                // answers, not this call.
                return std::future::pending().await;
            }
            Err(failure) => return error(format!("The page could not be converted: {failure}")),
        };
        let mut value = json!({
            "type": "fetched_page",
            "url": text,
            "content": page.content,
            "fetched_at": jiff::Timestamp::now().to_string(),
        });
        if let Some(total_chars) = page.truncated_from {
            value["truncated"] = json!(true);
            value["total_chars"] = json!(total_chars);
        }
        ToolOutput::json(value)
    }
}

/// The address to connect to, checked against the private-address rule:
/// `Some((host, address))` pins a name to the checked address.
pub(crate) async fn checked_address(
    config: &WebConfig,
    url: &Url,
) -> Result<Option<(String, SocketAddr)>, String> {
    if config.allow_private_addresses {
        return Ok(None);
    }
    let Some(host) = url.host_str() else {
        return Err("Invalid URL: it has no host".to_owned());
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|failure| format!("Cannot resolve {host}: {failure}"))?
            .collect(),
    };
    if let Some(refused) = addresses
        .iter()
        .find_map(|a| restricted_kind(a.ip()).map(|kind| (a.ip(), kind)))
    {
        let (ip, kind) = refused;
        return Err(format!(
            "Refused to fetch {url}: {host} is a {kind} address ({ip}). Private, link-local and loopback addresses are refused unless allow_private_addresses is set in the [web] table"
        ));
    }
    let first = addresses
        .first()
        .copied()
        .ok_or_else(|| format!("Cannot resolve {host}: no address"))?;
    Ok((bare.parse::<IpAddr>().is_err()).then(|| (bare.to_owned(), first)))
}

/// A client that follows no redirect, gives up after `timeout`, and
/// connects a pinned name to its checked address.
pub(crate) fn client(
    pinned: Option<(String, SocketAddr)>,
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .timeout(timeout)
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")));
    if let Some((host, address)) = pinned {
        builder = builder.resolve(&host, address);
    }
    builder
        .build()
        .map_err(|failure| format!("HTTP client: {failure}"))
}

/// Why a request failed, for the model: a timeout says how long was waited;
/// anything else names its causes.
pub(crate) fn request_error(what: &str, failure: &reqwest::Error, timeout: Duration) -> String {
    if failure.is_timeout() {
        return format!("{what} did not answer within {} s", timeout.as_secs_f64());
    }
    let mut message = failure.to_string();
    let mut source = std::error::Error::source(failure);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    format!("{what} could not be reached: {message}")
}

fn error_output(message: String, key: &str, input: &str) -> ToolOutput {
    let mut output = ToolOutput::json(json!({"type": "error", "error": message, key: input}));
    output.is_error = true;
    output
}

pub(crate) fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// What kind of restricted address `ip` is, if it is one.
fn restricted_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_private() || (a == 100 && (64..128).contains(&b)) {
                Some("private")
            } else if v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() {
                Some("non-routable")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return restricted_kind(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if first & 0xfe00 == 0xfc00 {
                Some("private")
            } else if v6.is_unspecified() || v6.is_multicast() {
                Some("non-routable")
            } else {
                None
            }
        }
    }
}

/// A fetched page's text, cut to the configured length.
struct FetchedText {
    content: String,
    /// The text's length in characters when it was cut.
    truncated_from: Option<usize>,
}

/// The text of a fetched `body`: HTML converted (stopping when `cancel` is
/// cancelled), anything else trimmed; cut to `max_chars` characters.
fn page_text(
    body: &[u8],
    content_type: &str,
    max_chars: usize,
    cancel: &CancellationToken,
) -> Result<FetchedText, ConversionCancelled> {
    let raw = String::from_utf8_lossy(body);
    let looks_html = content_type.contains("html")
        || (content_type.is_empty() && raw.trim_start().starts_with('<'));
    let text = if looks_html {
        html_to_text_until(&raw, cancel)?.text
    } else {
        raw.trim().to_owned()
    };
    let total_chars = text.chars().count();
    if total_chars <= max_chars {
        return Ok(FetchedText {
            content: text,
            truncated_from: None,
        });
    }
    Ok(FetchedText {
        content: text.chars().take(max_chars).collect(),
        truncated_from: Some(total_chars),
    })
}

/// The response's body, at most [`MAX_BODY_BYTES`] of it. Takes the
/// response, so its connection is released once the body is read.
async fn read_body(mut response: Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY_BYTES {
            body.truncate(MAX_BODY_BYTES);
            break;
        }
    }
    Ok(body)
}

/// Runs `work` on tokio's blocking threads, so work proportional to an
/// outside input never holds an async worker (where no deadline could fire
/// and every other call on that worker would wait). `work` gets a token
/// cancelled with `cancel`, and also when this future is dropped, so
/// abandoned work stops too.
async fn off_worker<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce(&CancellationToken) -> T + Send + 'static,
) -> Result<T, JoinError> {
    let token = cancel.child_token();
    let _stop_when_dropped = token.clone().drop_guard();
    tokio::task::spawn_blocking(move || work(&token)).await
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;
