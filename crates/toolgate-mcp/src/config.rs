//! Upstream configuration: an `[[upstream]]` table of `toolgate.toml`, or an
//! entry of a Claude-Desktop-style `mcpServers` JSON file.
//!
//! This crate opens no file: the command line reads `toolgate.toml` once
//! and hands over each `[[upstream]]` as written ([`RawUpstream`]);
//! [`RawUpstream::into_config`] checks it into an [`UpstreamConfig`], and an
//! error names the upstream and what is wrong with it. `mcpServers` text is
//! parsed by [`parse_mcp_servers_json`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolgate_core::{GroupId, GroupVisibility, NameError, is_tool_name_char, timeout_from_seconds};
use toolgate_tools::{Progress, Startup};

/// The only variables of the gateway's environment a stdio upstream gets
/// unless its `inherit_env` names more: what programs need to run (TLS
/// certificates and proxies included, without which a server that fetches
/// anything fails its handshake), and nothing that holds a secret (the
/// gateway's token, model API keys). Each is passed when it is set.
pub const SAFE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "WINDIR",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "PROGRAMFILES",
    "COMSPEC",
    "PATHEXT",
    // Where TLS stacks find certificates: OpenSSL and rustls-native-certs,
    // Python's requests, Node.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    // Proxies, in both spellings programs read.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
];

/// The environment a stdio upstream starts with: [`SAFE_ENV`] and the
/// variables `inherit` names (all of them for `*`) from `gateway`'s, then
/// its own `env`.
pub fn upstream_env(
    gateway: impl Iterator<Item = (String, String)>,
    inherit: &[String],
    own: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let everything = inherit.iter().any(|name| name == "*");
    let mut env: BTreeMap<String, String> = gateway
        .filter(|(name, _)| {
            everything || SAFE_ENV.contains(&name.as_str()) || inherit.contains(name)
        })
        .collect();
    env.extend(
        own.iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    env
}

/// Default per-call timeout for upstream tools.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time an upstream may take to start and answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// One upstream MCP server, validated.
#[derive(Clone, Debug)]
pub struct UpstreamConfig {
    /// Its name: the group id of its tools, and the qualifier on collisions.
    pub name: GroupId,
    /// The group description; `None` takes the server's instructions, else a
    /// sentence naming the server.
    pub description: Option<String>,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// When it starts.
    pub startup: Startup,
    /// Whether its tools sit behind `load_tool_group` (the default) or are
    /// always listed, like core tools.
    pub visibility: GroupVisibility,
    /// Longest a tool call may take before it is cancelled.
    pub call_timeout: Duration,
    /// Longest start-up (process spawn or connection, then `initialize`).
    pub startup_timeout: Duration,
    /// Hears each start ([`Step::Starting`](toolgate_tools::Step), then
    /// `Started`): the command line shows a slow start on a terminal. Not
    /// part of what the upstream is: configurations that differ only here
    /// are equal.
    pub progress: Option<Progress>,
}

impl PartialEq for UpstreamConfig {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            name,
            description,
            transport,
            startup,
            visibility,
            call_timeout,
            startup_timeout,
            progress: _,
        } = self;
        *name == other.name
            && *description == other.description
            && *transport == other.transport
            && *startup == other.startup
            && *visibility == other.visibility
            && *call_timeout == other.call_timeout
            && *startup_timeout == other.startup_timeout
    }
}

impl UpstreamConfig {
    /// A stdio upstream running `command` with `args`, started lazily, its
    /// tools behind `load_tool_group`, with the default timeouts.
    pub fn stdio(name: GroupId, command: impl Into<String>, args: &[&str]) -> Self {
        Self {
            name,
            description: None,
            transport: UpstreamTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|arg| (*arg).to_owned()).collect(),
                env: BTreeMap::new(),
                inherit_env: Vec::new(),
                cwd: None,
            },
            startup: Startup::Lazy,
            visibility: GroupVisibility::OnLoad,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            progress: None,
        }
    }
}

/// How the gateway reaches an upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its own environment variables, on top of [`SAFE_ENV`].
        env: BTreeMap<String, String>,
        /// Variables of the gateway's own environment passed on besides
        /// [`SAFE_ENV`]; `*` passes everything.
        inherit_env: Vec<String>,
        /// Its working directory; the gateway's when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3000/mcp`.
        url: String,
        /// Extra request headers (an `Authorization` header among them).
        headers: BTreeMap<String, String>,
    },
}

impl UpstreamTransport {
    /// What of this transport must never be shown to a client or logged:
    /// the user info of an HTTP URL (`user:password@`) and the values of
    /// its headers (an `Authorization` token, say); for a stdio server, the
    /// values of its own `env` variables whose names say they hold a secret
    /// (`GITHUB_TOKEN`, `API_KEY`, ...), which its stderr may repeat.
    pub fn secrets(&self) -> Vec<String> {
        let (url, headers) = match self {
            Self::Http { url, headers } => (url, headers),
            Self::Stdio { env, .. } => {
                let mut secrets: Vec<String> = env
                    .iter()
                    .filter(|(name, value)| holds_secret(name) && value.len() >= 4)
                    .map(|(_, value)| value.clone())
                    .collect();
                secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
                return secrets;
            }
        };
        let mut secrets: Vec<String> = headers
            .values()
            .filter(|value| value.len() >= 4)
            .cloned()
            .collect();
        if let Some((_, rest)) = url.split_once("://") {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            if let Some((user_info, _)) = authority.rsplit_once('@') {
                secrets.push(user_info.to_owned());
                if let Some((_, password)) = user_info.split_once(':') {
                    secrets.push(password.to_owned());
                }
            }
        }
        secrets.retain(|secret| !secret.is_empty());
        // Longest first, so a secret is replaced before any part of it.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets
    }
}

/// Whether an environment variable named `name` holds a secret, by its
/// name: `GITHUB_TOKEN`, `OPENAI_API_KEY`, `DB_PASSWORD`, ...
fn holds_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "KEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// `text` with every one of `secrets` replaced by `***`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    secrets.iter().fold(text.to_owned(), |text, secret| {
        text.replace(secret.as_str(), "***")
    })
}

/// An upstream entry that does not check; `Display` says what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidUpstream {
    /// An `[[upstream]]` table without `name`.
    #[error("has no `name`")]
    MissingName,
    /// The name is not a group id.
    #[error("bad name: {0}")]
    Name(NameError),
    /// The name holds `__`.
    #[error("names may not contain `__`, which separates server and tool in qualified names")]
    DoubleUnderscore,
    /// The name holds a character a tool name may not (a space, say).
    #[error(
        "the name {name:?} has the character {character:?}: an upstream's name may hold only letters, digits, `_`, `-` and `.`, since it becomes a group id and qualifies tool names (`{name}__tool`)"
    )]
    NameCharacter {
        /// The name.
        name: String,
        /// The first character it may not hold.
        character: char,
    },
    /// Both `command` and `url`.
    #[error("give either `command` (stdio) or `url` (HTTP), not both")]
    CommandAndUrl,
    /// Neither `command` nor `url`.
    #[error("needs `command` (stdio) or `url` (streamable HTTP)")]
    NoTransport,
    /// `command` is blank.
    #[error("`command` is empty")]
    EmptyCommand,
    /// `url` is not http(s).
    #[error("`url` must start with http:// or https://, got `{0}`")]
    Url(String),
    /// The deprecated HTTP+SSE transport.
    #[error(
        "transport `{0}` (the deprecated HTTP+SSE transport) is not supported; use streamable HTTP"
    )]
    Sse(String),
    /// A transport type toolgate does not know.
    #[error("unknown transport type `{0}`")]
    UnknownTransport(String),
    /// A transport type that contradicts the fields.
    #[error("transport type `{0}` does not match the fields given")]
    TransportMismatch(String),
    /// A timeout that is not a positive number of seconds.
    #[error("`{field}` must be a positive number of seconds, at most 86400 (a day), got {value:?}")]
    Seconds {
        /// The setting.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// The same name twice.
    #[error("declared twice")]
    Duplicate,
}

/// An `mcpServers` file that could not be used: which file, which upstream
/// (when it is about one) and why.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// The upstream, when the problem is one upstream's.
    pub upstream: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(upstream) = &self.upstream {
            write!(f, ": upstream '{upstream}'")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// One `[[upstream]]` table, or one `mcpServers` entry (whose name is its
/// key), as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpstream {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    inherit_env: Vec<String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// `mcpServers` files name the transport: `stdio`, `http` or
    /// `streamable-http`. TOML infers it from `command` or `url`.
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    eager: bool,
    #[serde(default)]
    core: bool,
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    startup_timeout_seconds: Option<f64>,
    /// Claude Desktop's switch; a disabled server is skipped.
    #[serde(default)]
    disabled: bool,
}

/// The `mcpServers` JSON file's shape.
#[derive(Debug, Deserialize)]
struct RawMcpServers {
    #[serde(rename = "mcpServers")]
    mcp_servers: serde_json::Map<String, serde_json::Value>,
}

/// Parses `mcpServers` JSON text; `path` names the source in errors.
pub fn parse_mcp_servers_json(text: &str, path: &Path) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let raw: RawMcpServers = serde_json::from_str(text).map_err(|error| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason: error.to_string(),
    })?;
    let mut upstreams = Vec::new();
    for (name, value) in raw.mcp_servers {
        let entry: RawUpstream = serde_json::from_value(value).map_err(|error| ConfigError {
            path: path.to_owned(),
            upstream: Some(name.clone()),
            reason: error.to_string(),
        })?;
        if entry.disabled {
            continue;
        }
        let upstream = entry
            .into_config(Some(name.clone()))
            .map_err(|error| ConfigError {
                path: path.to_owned(),
                upstream: Some(name),
                reason: error.to_string(),
            })?;
        upstreams.push(upstream);
    }
    if let Some(twice) = first_duplicate(&upstreams) {
        return Err(ConfigError {
            path: path.to_owned(),
            upstream: Some(twice.to_string()),
            reason: InvalidUpstream::Duplicate.to_string(),
        });
    }
    Ok(upstreams)
}

impl RawUpstream {
    /// The upstream's name as the entry gives it (`[[upstream]]` tables
    /// carry it; an `mcpServers` entry's name is its key).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Checks the entry; `name` (an `mcpServers` key) takes the place of
    /// its own `name`.
    pub fn into_config(self, name: Option<String>) -> Result<UpstreamConfig, InvalidUpstream> {
        let raw = self;
        let name = name
            .or_else(|| raw.name.clone())
            .ok_or(InvalidUpstream::MissingName)?;
        let id = GroupId::new(name.clone()).map_err(InvalidUpstream::Name)?;
        if name.contains("__") {
            return Err(InvalidUpstream::DoubleUnderscore);
        }
        // `/` is a tool-name character too, but reads as a path in a name.
        if let Some(character) = name.chars().find(|c| !is_tool_name_char(*c) || *c == '/') {
            return Err(InvalidUpstream::NameCharacter { name, character });
        }
        let transport = match (raw.command, raw.url, raw.kind.as_deref()) {
            (Some(_), Some(_), _) => return Err(InvalidUpstream::CommandAndUrl),
            (Some(command), None, None | Some("stdio")) => {
                if command.trim().is_empty() {
                    return Err(InvalidUpstream::EmptyCommand);
                }
                UpstreamTransport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    inherit_env: raw.inherit_env,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url), None | Some("http" | "streamable-http" | "streamableHttp")) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(InvalidUpstream::Url(url));
                }
                UpstreamTransport::Http {
                    url,
                    headers: raw.headers,
                }
            }
            (_, _, Some(kind @ "sse")) => return Err(InvalidUpstream::Sse(kind.to_owned())),
            (_, _, Some(kind))
                if !matches!(
                    kind,
                    "stdio" | "http" | "streamable-http" | "streamableHttp"
                ) =>
            {
                return Err(InvalidUpstream::UnknownTransport(kind.to_owned()));
            }
            (None, None, _) => return Err(InvalidUpstream::NoTransport),
            (_, _, Some(kind)) => return Err(InvalidUpstream::TransportMismatch(kind.to_owned())),
        };
        let seconds = |field: &'static str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(value) => {
                timeout_from_seconds(value).ok_or(InvalidUpstream::Seconds { field, value })
            }
        };
        let visibility = if raw.core {
            GroupVisibility::Always
        } else {
            GroupVisibility::OnLoad
        };
        Ok(UpstreamConfig {
            description: raw.description.filter(|d| !d.trim().is_empty()),
            transport,
            startup: if raw.eager || raw.core {
                Startup::Eager
            } else {
                Startup::Lazy
            },
            visibility,
            call_timeout: seconds("timeout_seconds", raw.timeout_seconds, DEFAULT_CALL_TIMEOUT)?,
            startup_timeout: seconds(
                "startup_timeout_seconds",
                raw.startup_timeout_seconds,
                DEFAULT_STARTUP_TIMEOUT,
            )?,
            name: id,
            progress: None,
        })
    }
}

/// The first name `upstreams` declares twice.
pub fn first_duplicate(upstreams: &[UpstreamConfig]) -> Option<&GroupId> {
    upstreams
        .iter()
        .enumerate()
        .find(|(index, upstream)| upstreams[..*index].iter().any(|u| u.name == upstream.name))
        .map(|(_, upstream)| &upstream.name)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
