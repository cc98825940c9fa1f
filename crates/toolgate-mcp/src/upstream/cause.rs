//! Why an upstream could not be started, in plain words: the command not
//! found, the connection refused at a URL, a TLS error, the HTTP status the
//! server answered, the handshake that took too long. The banner, the
//! status page and the error the model reads all show this text, so it
//! names what the operator can act on and none of rmcp's or reqwest's
//! type names (rmcp's own `Display` of a transport error names the
//! transport's generic type).

use std::error::Error;
use std::fmt;
use std::io;
use std::time::Duration;

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// What the gateway tried to reach: a command it runs, or a URL.
#[derive(Clone, Copy, Debug)]
pub(super) enum Endpoint<'a> {
    /// A stdio server's command.
    Command(&'a str),
    /// A streamable HTTP server's URL.
    Url(&'a str),
}

impl fmt::Display for Endpoint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command(command) => write!(f, "`{command}`"),
            Self::Url(url) => f.write_str(url),
        }
    }
}

/// Why `command` could not be run.
pub(super) fn not_run(command: &str, error: &io::Error) -> String {
    let is_path = command.contains(std::path::MAIN_SEPARATOR) || command.contains('/');
    match error.kind() {
        io::ErrorKind::NotFound if is_path => format!("`{command}` does not exist"),
        io::ErrorKind::NotFound => format!("command `{command}` not found on PATH"),
        io::ErrorKind::PermissionDenied => {
            format!("`{command}` cannot be run: permission denied")
        }
        _ => format!("cannot run `{command}`: {error}"),
    }
}

/// Why the handshake with `endpoint` did not finish within `limit`.
pub(super) fn no_answer(endpoint: Endpoint<'_>, limit: Duration) -> String {
    format!(
        "{endpoint} did not complete the MCP handshake within {}s (startup_timeout_seconds)",
        limit.as_secs_f64()
    )
}

/// Why the handshake with `endpoint` failed.
pub(super) fn no_handshake(endpoint: Endpoint<'_>, error: &ClientInitializeError) -> String {
    match error {
        // Discovery failed and so did the older handshake tried after it:
        // the second says why the server cannot be used.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            no_handshake(endpoint, fallback)
        }
        ClientInitializeError::TransportError { error, .. } => {
            transport_failure(endpoint, error.error.as_ref())
        }
        ClientInitializeError::ConnectionClosed(_) => closed(endpoint),
        ClientInitializeError::JsonRpcError(error) => {
            format!("{endpoint} refused the MCP handshake: {}", error.message)
        }
        other => format!("{endpoint} did not complete the MCP handshake: {other}"),
    }
}

/// `endpoint` closed the connection: a command's output (it exited, or
/// died), or a server's socket.
fn closed(endpoint: Endpoint<'_>) -> String {
    match endpoint {
        Endpoint::Command(_) => format!("{endpoint} ended before completing the MCP handshake"),
        Endpoint::Url(_) => {
            format!("{endpoint} closed the connection before completing the MCP handshake")
        }
    }
}

/// Why sending to `endpoint` failed, from the transport's `error`.
fn transport_failure(endpoint: Endpoint<'_>, error: &(dyn Error + 'static)) -> String {
    let Endpoint::Url(url) = endpoint else {
        // A command that exits at once may be gone before the gateway
        // writes `initialize`: its input is closed.
        let gone = causes(error).any(|cause| {
            cause.downcast_ref::<io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    io::ErrorKind::BrokenPipe
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::UnexpectedEof
                )
            })
        });
        if gone {
            return closed(endpoint);
        }
        return format!(
            "{endpoint} did not complete the MCP handshake: {}",
            innermost(error)
        );
    };
    if let Some(http) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return http_failure(url, http);
    }
    network_failure(url, error)
}

/// Why an HTTP exchange with `url` failed.
fn http_failure(url: &str, error: &StreamableHttpError<reqwest::Error>) -> String {
    match error {
        StreamableHttpError::Client(error) => network_failure(url, error),
        StreamableHttpError::Io(error) => network_failure(url, error),
        StreamableHttpError::HttpStatus(status) => answered(url, status.status),
        StreamableHttpError::AuthRequired(_) => answered(url, 401),
        StreamableHttpError::InsufficientScope(_) => answered(url, 403),
        // rmcp writes the status first: `HTTP 404 Not Found: <body>`.
        StreamableHttpError::UnexpectedServerResponse(text) => {
            match text
                .strip_prefix("HTTP ")
                .and_then(|rest| rest.get(..3))
                .and_then(|code| code.parse().ok())
            {
                Some(code) => answered(url, code),
                None => format!("{url} answered what is not MCP: {text}"),
            }
        }
        StreamableHttpError::UnexpectedContentType(content_type) => format!(
            "{url} answered with content type {}, not MCP's JSON or event stream",
            content_type.as_deref().unwrap_or("(none)")
        ),
        other => format!("{url} did not complete the MCP handshake: {other}"),
    }
}

/// `url` answered HTTP `code` (with its reason phrase when it has one).
fn answered(url: &str, code: u16) -> String {
    let reason = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|status| status.canonical_reason());
    match reason {
        Some(reason) => format!("{url} answered HTTP {code} {reason}"),
        None => format!("{url} answered HTTP {code}"),
    }
}

/// Why `url` could not be reached: the connection refused, a TLS error,
/// else the innermost cause (a name that does not resolve, say).
fn network_failure(url: &str, error: &(dyn Error + 'static)) -> String {
    for cause in causes(error) {
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return format!("TLS error at {url}: {tls}");
        }
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::ConnectionRefused => {
                    return format!("connection refused at {url}");
                }
                io::ErrorKind::TimedOut => return format!("connecting to {url} timed out"),
                _ => {}
            }
        }
    }
    format!("cannot reach {url}: {}", innermost(error))
}

/// `error` and its causes, outermost first. An `io::Error` wrapping another
/// error is followed into it: its own `source` skips the error it wraps.
fn causes<'a>(error: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(
        Some(error),
        |&current: &&'a (dyn Error + 'static)| match current
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn Error + 'static)),
            None => current.source(),
        },
    )
}

/// The text of `error`'s innermost cause: the one that says what happened.
fn innermost(error: &(dyn Error + 'static)) -> String {
    causes(error)
        .last()
        .map_or_else(|| error.to_string(), ToString::to_string)
}

#[cfg(test)]
#[path = "cause_tests.rs"]
mod tests;
