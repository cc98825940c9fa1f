//! What both providers share on the wire: a JSON POST with retries on 429,
//! 5xx and failed connections (honouring `Retry-After`), error statuses
//! turned into [`LlmError`]s that carry the provider's own message, and
//! reading a body or a stream with the read timeout applied.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::model::{EventSink, StreamEvent};
use crate::sse::{SseEvent, SseParser};

/// Statuses worth sending again.
const RETRYABLE: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

/// Characters of a body quoted in an error.
const SNIPPET_CHARS: usize = 200;

/// An HTTP client bound to one provider configuration.
#[derive(Debug)]
pub(crate) struct Http {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl Http {
    pub(crate) fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .build()
            .map_err(|error| LlmError::Config(format!("cannot build the HTTP client: {error}")))?;
        Ok(Self { client, config })
    }

    pub(crate) fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Headers carrying the API key, if one is configured: `name` set to
    /// `prefix` + key, marked sensitive so it is never logged.
    pub(crate) fn key_headers(
        &self,
        name: HeaderName,
        prefix: &str,
    ) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.config.api_key {
            let mut value =
                HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
                    LlmError::Config(
                        "the API key holds characters a header cannot carry".to_owned(),
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// POSTs `body` to `url` and returns the first 2xx response, retrying
    /// what deserves it and reporting each retry to `events`.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        events: EventSink<'_>,
    ) -> Result<reqwest::Response, LlmError> {
        let retry = &self.config.retry;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let may_retry = attempts <= retry.max_retries;
            let backoff = backoff(retry.initial_backoff, retry.max_backoff, attempts);
            let sent = self
                .client
                .post(url)
                .headers(headers.clone())
                .json(body)
                .send()
                .await;
            let (delay, reason) = match sent {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let asked = retry_after(response.headers());
                    let text = response.text().await.unwrap_or_default();
                    let message = error_message(&text);
                    match status {
                        401 | 403 => {
                            return Err(LlmError::Unauthorized {
                                url: url.to_owned(),
                                status,
                                message,
                                key_source: self.config.key_source.clone(),
                            });
                        }
                        404 => {
                            return Err(LlmError::NotFound {
                                url: url.to_owned(),
                                model: self.config.model.clone(),
                                message,
                            });
                        }
                        _ if !RETRYABLE.contains(&status) || !may_retry => {
                            return Err(LlmError::Status {
                                url: url.to_owned(),
                                status,
                                message,
                                attempts,
                            });
                        }
                        _ => {}
                    }
                    let delay = match asked {
                        Some(asked) if asked > retry.max_retry_after => {
                            return Err(LlmError::Status {
                                url: url.to_owned(),
                                status,
                                message: format!(
                                    "{message} (it asked to retry after {} s, longer than the {} s this client waits)",
                                    asked.as_secs(),
                                    retry.max_retry_after.as_secs()
                                ),
                                attempts,
                            });
                        }
                        Some(asked) => asked,
                        None => backoff,
                    };
                    (delay, format!("HTTP {status}: {message}"))
                }
                // No answer came: the connection failed, or closed before the
                // response (a server dropping a kept-alive connection as it
                // was reused). Not a timeout: that wait was already long.
                Err(error) if error.is_connect() && may_retry => {
                    (backoff, format!("cannot connect: {}", describe(&error)))
                }
                Err(error) if error.is_request() && !error.is_timeout() && may_retry => {
                    (backoff, format!("no answer: {}", describe(&error)))
                }
                Err(error) => return Err(self.send_error(url, &error, attempts)),
            };
            events(StreamEvent::Retrying {
                attempt: attempts,
                delay,
                reason,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Reads a whole JSON body.
    pub(crate) async fn read_json(
        &self,
        url: &str,
        response: reqwest::Response,
    ) -> Result<Value, LlmError> {
        let bytes = response
            .bytes()
            .await
            .map_err(|error| self.read_error(url, &error))?;
        parse_json(url, "response body", &bytes)
    }

    /// Reads a `text/event-stream` body, handing each event to `on_event`
    /// until it returns `Ok(true)` (the stream's own end marker) or the body
    /// ends. Returns whether the end marker was seen.
    pub(crate) async fn read_events(
        &self,
        url: &str,
        mut response: reqwest::Response,
        mut on_event: impl FnMut(SseEvent) -> Result<bool, LlmError>,
    ) -> Result<bool, LlmError> {
        let mut parser = SseParser::default();
        loop {
            let chunk = match response.chunk().await {
                Ok(chunk) => chunk,
                Err(error) if error.is_timeout() => return Err(self.read_error(url, &error)),
                Err(error) => {
                    return Err(LlmError::TruncatedStream {
                        url: url.to_owned(),
                        detail: format!("the connection failed: {}", describe(&error)),
                    });
                }
            };
            let Some(chunk) = chunk else {
                if parser.has_partial() {
                    return Err(LlmError::TruncatedStream {
                        url: url.to_owned(),
                        detail: "the body ended inside an event".to_owned(),
                    });
                }
                return Ok(false);
            };
            for event in parser.feed(&chunk) {
                if on_event(event)? {
                    return Ok(true);
                }
            }
        }
    }

    fn send_error(&self, url: &str, error: &reqwest::Error, attempts: u32) -> LlmError {
        if error.is_timeout() {
            let (phase, limit) = if error.is_connect() {
                ("connect", self.config.connect_timeout)
            } else {
                ("read", self.config.read_timeout)
            };
            return LlmError::Timeout {
                url: url.to_owned(),
                phase,
                seconds: limit.as_secs_f64(),
            };
        }
        LlmError::Connect {
            url: url.to_owned(),
            message: describe(error),
            attempts,
        }
    }

    fn read_error(&self, url: &str, error: &reqwest::Error) -> LlmError {
        if error.is_timeout() {
            LlmError::Timeout {
                url: url.to_owned(),
                phase: "read",
                seconds: self.config.read_timeout.as_secs_f64(),
            }
        } else {
            LlmError::TruncatedStream {
                url: url.to_owned(),
                detail: format!("reading the body failed: {}", describe(error)),
            }
        }
    }
}

/// Whether a response is an event stream (some servers answer a streaming
/// request with plain JSON, an error for instance).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Parses JSON, or says what was received instead.
pub(crate) fn parse_json(
    url: &str,
    context: &'static str,
    bytes: &[u8],
) -> Result<Value, LlmError> {
    serde_json::from_slice(bytes).map_err(|error| LlmError::BadJson {
        url: url.to_owned(),
        context,
        error: error.to_string(),
        snippet: snippet(&String::from_utf8_lossy(bytes)),
    })
}

/// A body that is valid JSON but not what the wire format promises.
pub(crate) fn unexpected(url: &str, context: &'static str, what: &str, value: &Value) -> LlmError {
    LlmError::BadJson {
        url: url.to_owned(),
        context,
        error: what.to_owned(),
        snippet: snippet(&value.to_string()),
    }
}

/// The provider's message in an error body: `{"error": {"message": ...}}`
/// (both providers), `{"error": "..."}` or `{"message": ...}`; else the body.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|value| {
        value["error"]["message"]
            .as_str()
            .or(value["error"].as_str())
            .or(value["message"].as_str())
            .map(str::to_owned)
    });
    match found {
        Some(message) => message,
        None if body.trim().is_empty() => "(empty body)".to_owned(),
        None => snippet(body.trim()),
    }
}

fn snippet(text: &str) -> String {
    match text.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The root cause (`Connection refused (os error 111)`): reqwest's own
/// message repeats the URL the caller already names.
fn describe(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

fn backoff(initial: Duration, max: Duration, attempt: u32) -> Duration {
    initial
        .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
        .min(max)
}

/// The wait a response asks for: `retry-after-ms` (OpenAI), else
/// `Retry-After` in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        // A wait beyond any sensible one (1e300 ms) is cut, not a panic.
        return Some(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX));
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = http_date(value)?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only HTTP date
/// form servers send today.
fn http_date(text: &str) -> Option<SystemTime> {
    let rest = text.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [hours, minutes, seconds] = hms[..] else {
        return None;
    };
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hours * 3600 + minutes * 60 + seconds;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
