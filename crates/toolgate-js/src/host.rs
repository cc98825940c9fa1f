//! [`Host`]: everything a script can reach outside its own context.
//!
//! A script sees the ECMAScript built-ins and the globals the prelude
//! (`prelude.js`) defines on top of the host: `fetch`, `files` and
//! `console`. Each of them ends in one of these methods, which the embedder
//! implements and guards (which addresses `fetch` may reach, which files
//! exist); nothing else leaves the context. The methods run on the engine's
//! thread, inside the call: they block it, and a long one holds the call
//! past its time limit, so [`FetchRequest::timeout`] says how long is left.

use std::time::Duration;

/// An HTTP request a script made with `fetch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchRequest {
    /// The method, upper case (`GET` unless the script said otherwise).
    pub method: String,
    /// The address as the script wrote it (not yet checked).
    pub url: String,
    /// Headers, in the script's order.
    pub headers: Vec<(String, String)>,
    /// The body, when the script gave one.
    pub body: Option<String>,
    /// What is left of the call's time limit: the request must end by then.
    pub timeout: Duration,
}

/// What a [`FetchRequest`] got back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchResponse {
    /// The HTTP status code.
    pub status: u16,
    /// Its reason phrase (`OK`, `Not Found`), or empty.
    pub status_text: String,
    /// The address that answered (after redirects).
    pub url: String,
    /// Headers, names lower case.
    pub headers: Vec<(String, String)>,
    /// The body as text (invalid UTF-8 replaced).
    pub body: String,
}

/// How loud a `console` line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// `console.debug`.
    Debug,
    /// `console.log` and `console.info`.
    Info,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

/// What a script can reach outside its context. Every method has a default
/// that refuses (or, for [`Host::log`], drops), so an embedder grants only
/// what it implements. An `Err` becomes an `Error` thrown in the script with
/// that message.
pub trait Host: Send + Sync {
    /// Makes `request` (`fetch`).
    fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, String> {
        let _ = request;
        Err("fetch is not available to this script".to_owned())
    }

    /// The text of the file at `path` (`files.read`).
    fn read_file(&self, path: &str) -> Result<String, String> {
        let _ = path;
        Err("files are not available to this script".to_owned())
    }

    /// The entries of the directory at `path` (`files.list`), as the JSON
    /// value the script receives.
    fn list_files(&self, path: &str) -> Result<serde_json::Value, String> {
        let _ = path;
        Err("files are not available to this script".to_owned())
    }

    /// Writes `text` to the file at `path` (`files.write`).
    fn write_file(&self, path: &str, text: &str) -> Result<(), String> {
        let _ = (path, text);
        Err("files are not available to this script".to_owned())
    }

    /// A `console` line.
    fn log(&self, level: LogLevel, message: &str) {
        let _ = (level, message);
    }

    /// Whether whoever made the call gave up on it: polled while the script
    /// runs, which then stops as [`JsError::Cancelled`](crate::JsError::Cancelled).
    fn cancelled(&self) -> bool {
        false
    }
}

/// A host that grants nothing: every host function throws, `console` lines
/// are dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHost;

impl Host for NoHost {}
