//! [`LlmError`]: why a model call failed. Every message names the endpoint and
//! what to do; none ever contains the API key.

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// HTTP 401 or 403: the key is missing, wrong or not allowed this model.
    #[error(
        "{url} refused the request (HTTP {status}): {}. Check the API key ({key_source})",
        without_period(message)
    )]
    Unauthorized {
        /// The endpoint called.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The provider's own message.
        message: String,
        /// Where the key came from (`the environment variable OPENAI_API_KEY`,
        /// `no API key configured`, ...), never the key.
        key_source: String,
    },
    /// HTTP 404: a wrong base URL or an unknown model.
    #[error(
        "{url} answered HTTP 404: {message}. Check the base URL and that model '{model}' exists there"
    )]
    NotFound {
        /// The endpoint called.
        url: String,
        /// The model asked for.
        model: String,
        /// The provider's own message.
        message: String,
    },
    /// Any other error status, after the retries it deserved.
    #[error("{url} answered HTTP {status}{}: {message}", attempts_note(*attempts))]
    Status {
        /// The endpoint called.
        url: String,
        /// The status code.
        status: u16,
        /// The provider's own message.
        message: String,
        /// How many times the request was sent.
        attempts: u32,
    },
    /// The endpoint could not be reached.
    #[error("cannot reach {url}{}: {message}", attempts_note(*attempts))]
    Connect {
        /// The endpoint called.
        url: String,
        /// Why.
        message: String,
        /// How many times the request was sent.
        attempts: u32,
    },
    /// The endpoint did not answer in time.
    #[error("{url} did not answer within {seconds} s ({phase})")]
    Timeout {
        /// The endpoint called.
        url: String,
        /// `connect` or `read`.
        phase: &'static str,
        /// The limit that was hit.
        seconds: f64,
    },
    /// The body (or a stream event) is not the JSON the wire format promises.
    #[error("{url} sent a {context} that is not valid: {error} (starts with: {snippet})")]
    BadJson {
        /// The endpoint called.
        url: String,
        /// What was being read: `response body`, `stream event`.
        context: &'static str,
        /// The parse error.
        error: String,
        /// The first characters of what was received.
        snippet: String,
    },
    /// The stream stopped before the provider said the answer was complete.
    #[error("the response stream from {url} ended before the answer was complete: {detail}")]
    TruncatedStream {
        /// The endpoint called.
        url: String,
        /// What was missing.
        detail: String,
    },
    /// The provider reported an error inside a successful response (an SSE
    /// `error` event, an `{"error": ...}` body).
    #[error("{url} reported an error: {message}")]
    Provider {
        /// The endpoint called.
        url: String,
        /// The provider's message.
        message: String,
    },
    /// The configuration cannot make a working client.
    #[error("{0}")]
    Config(String),
}

/// A provider's message without its closing period, for a sentence that
/// goes on after it (`...provided. Check`, not `...provided.. Check`).
fn without_period(message: &str) -> &str {
    message.trim_end().trim_end_matches('.')
}

fn attempts_note(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}
