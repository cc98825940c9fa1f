//! The `web` group: search through a SearXNG-compatible JSON endpoint, and
//! fetch a page as text. Exposed as one polymorphic `web` tool by default
//! (actions `search` and `fetch`).
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

use reqwest::{StatusCode, Url, redirect};
use serde_json::{Value, json};
use toolgate_core::ToolDefinition;
use toolgate_store::ConversationId;

use super::{definition, string_argument};
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
                &format!(
                    "Search the web. Returns up to {} results (url, title, snippet). At most {} searches per response.",
                    self.config.max_results.min(MAX_SEARCH_RESULTS),
                    self.config.searches_per_turn
                ),
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
                Ok(url) => self.fetch(url).await,
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
        let body: Value = match response.json().await {
            Ok(body) => body,
            Err(failure) => {
                return error(format!(
                    "Invalid response from the search service: {failure}"
                ));
            }
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

    async fn fetch(&self, text: &str) -> ToolOutput {
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
        let mut response = match client.get(url.clone()).send().await {
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
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    body.extend_from_slice(&chunk);
                    if body.len() > MAX_BODY_BYTES {
                        body.truncate(MAX_BODY_BYTES);
                        break;
                    }
                }
                Ok(None) => break,
                Err(failure) => {
                    return error(request_error("The page", &failure, self.config.timeout));
                }
            }
        }
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
        let raw = String::from_utf8_lossy(&body);
        let looks_html = content_type.contains("html")
            || (content_type.is_empty() && raw.trim_start().starts_with('<'));
        let text_content = if looks_html {
            html_to_text(&raw)
        } else {
            raw.trim().to_owned()
        };
        let total_chars = text_content.chars().count();
        let truncated = total_chars > self.config.max_content_chars;
        let content: String = text_content
            .chars()
            .take(self.config.max_content_chars)
            .collect();
        let mut value = json!({
            "type": "fetched_page",
            "url": text,
            "content": content,
            "fetched_at": jiff::Timestamp::now().to_string(),
        });
        if truncated {
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

/// The readable text of an HTML page: tags dropped, scripts and styles left
/// out, block elements on their own lines, entities decoded, white space
/// collapsed and blank lines dropped.
pub(super) fn html_to_text(html: &str) -> String {
    const SKIPPED: [&str; 5] = ["script", "style", "noscript", "template", "svg"];
    const BLOCKS: [&str; 24] = [
        "p",
        "div",
        "br",
        "li",
        "ul",
        "ol",
        "tr",
        "table",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "nav",
        "pre",
        "blockquote",
        "title",
        "hr",
        "main",
    ];
    let lower = html.to_ascii_lowercase();
    let mut text = String::with_capacity(html.len() / 2);
    let mut position = 0;
    while position < html.len() {
        // Line breaks in the source are white space; only elements break lines.
        let mut push_text =
            |raw: &str| text.push_str(&decode_entities(raw).replace(['\n', '\r'], " "));
        let Some(offset) = html[position..].find('<') else {
            push_text(&html[position..]);
            break;
        };
        push_text(&html[position..position + offset]);
        let start = position + offset;
        if lower[start..].starts_with("<!--") {
            position = lower[start..]
                .find("-->")
                .map_or(html.len(), |end| start + end + 3);
            continue;
        }
        let Some(end) = html[start..].find('>') else {
            break;
        };
        let tag = &lower[start + 1..start + end];
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        position = start + end + 1;
        if !tag.starts_with('/') && SKIPPED.contains(&name.as_str()) {
            let closing = format!("</{name}");
            position = lower[position..]
                .find(&closing)
                .and_then(|close| {
                    let after = position + close;
                    lower[after..].find('>').map(|gt| after + gt + 1)
                })
                .unwrap_or(html.len());
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            text.push('\n');
        }
    }
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest[1..]
            .find(';')
            .filter(|&semi| semi <= 10)
            .and_then(|semi| {
                let entity = &rest[1..=semi];
                let character = match entity {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" | "#39" => Some('\''),
                    "nbsp" => Some(' '),
                    _ => entity
                        .strip_prefix("#x")
                        .or_else(|| entity.strip_prefix("#X"))
                        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                        .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                        .and_then(char::from_u32),
                }?;
                Some((character, semi + 2))
            });
        match decoded {
            Some((character, length)) => {
                out.push(character);
                rest = &rest[length..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}
