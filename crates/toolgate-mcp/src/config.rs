//! Gateway configuration: upstream MCP servers from a TOML file
//! (`[[upstream]]` tables) or a Claude-Desktop-style `mcpServers` JSON file,
//! and the TOML file's tool settings (`[groups]`, `[aliases]`, `[web]`).
//!
//! `Raw*` types are what the files hold; [`UpstreamConfig`] is the validated
//! form, and every error names the file and the upstream it is about.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolgate_core::{GroupId, GroupVisibility};
use toolgate_tools::{RawAlias, RawGroupSettings, RawWebSettings, Startup, ToolSettings};

/// Default per-call timeout for upstream tools.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time an upstream may take to start and answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// One upstream MCP server, validated.
#[derive(Clone, Debug, PartialEq)]
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
        /// Extra environment variables.
        env: BTreeMap<String, String>,
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

/// A configuration file that could not be used: which file, which upstream
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

/// The TOML file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    upstream: Vec<RawUpstream>,
    /// `toolgate chat`'s model settings, read by toolgate-llm.
    #[serde(default)]
    #[allow(dead_code, reason = "validated as a table here, read by toolgate-llm")]
    model: Option<toml::Table>,
    /// The router's settings, read where a router is built.
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "validated as a table here, read by the router's user"
    )]
    routing: Option<toml::Table>,
    /// The built-in `web` tools' settings.
    #[serde(default)]
    web: Option<RawWebSettings>,
    /// Per-group settings, by group id.
    #[serde(default)]
    groups: BTreeMap<String, RawGroupSettings>,
    /// Old tool names and what they call now.
    #[serde(default)]
    aliases: BTreeMap<String, RawAlias>,
    /// `toolgate chat`'s agent, read where the agent is made.
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "validated as a table here, read by the chat command"
    )]
    agent: Option<toml::Table>,
}

/// Reads the `[groups]`, `[aliases]` and `[web]` tables of a TOML file.
pub fn load_tool_settings(path: &Path) -> Result<ToolSettings, ConfigError> {
    let text = read(path)?;
    parse_tool_settings(&text, path)
}

/// Parses the `[groups]`, `[aliases]` and `[web]` tables; `path` names the
/// source in errors.
pub fn parse_tool_settings(text: &str, path: &Path) -> Result<ToolSettings, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|error| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason: error.to_string().trim_end().to_owned(),
    })?;
    ToolSettings::from_raw(raw.web, raw.groups, raw.aliases).map_err(|error| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason: error.to_string(),
    })
}

/// One `[[upstream]]` table, or one `mcpServers` entry (whose name is its key).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
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

/// Reads a TOML configuration file.
pub fn load_toml(path: &Path) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let text = read(path)?;
    parse_toml(&text, path)
}

/// Parses TOML text; `path` names the source in errors.
pub fn parse_toml(text: &str, path: &Path) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|error| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason: error.to_string().trim_end().to_owned(),
    })?;
    let upstreams = raw
        .upstream
        .into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let name = raw.name.clone().ok_or_else(|| ConfigError {
                path: path.to_owned(),
                upstream: None,
                reason: format!("[[upstream]] number {} has no `name`", index + 1),
            })?;
            validate(name, raw, path)
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_unique(&upstreams, path)?;
    Ok(upstreams)
}

/// Reads a Claude-Desktop-style `{"mcpServers": {...}}` file. Disabled servers
/// are left out.
pub fn load_mcp_servers_json(path: &Path) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let text = read(path)?;
    parse_mcp_servers_json(&text, path)
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
        upstreams.push(validate(name, entry, path)?);
    }
    check_unique(&upstreams, path)?;
    Ok(upstreams)
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|error| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason: error.to_string(),
    })
}

fn validate(name: String, raw: RawUpstream, path: &Path) -> Result<UpstreamConfig, ConfigError> {
    let error = |reason: String| ConfigError {
        path: path.to_owned(),
        upstream: Some(name.clone()),
        reason,
    };
    let id = GroupId::new(name.clone()).map_err(|e| error(format!("bad name: {e}")))?;
    if name.contains("__") {
        return Err(error(
            "names may not contain `__`, which separates server and tool in qualified names".into(),
        ));
    }
    let transport = match (raw.command, raw.url, raw.kind.as_deref()) {
        (Some(_), Some(_), _) => {
            return Err(error(
                "give either `command` (stdio) or `url` (HTTP), not both".into(),
            ));
        }
        (Some(command), None, None | Some("stdio")) => {
            if command.trim().is_empty() {
                return Err(error("`command` is empty".into()));
            }
            UpstreamTransport::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                cwd: raw.cwd,
            }
        }
        (None, Some(url), None | Some("http" | "streamable-http" | "streamableHttp")) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(error(format!(
                    "`url` must start with http:// or https://, got `{url}`"
                )));
            }
            UpstreamTransport::Http {
                url,
                headers: raw.headers,
            }
        }
        (_, _, Some(kind @ "sse")) => {
            return Err(error(format!(
                "transport `{kind}` (the deprecated HTTP+SSE transport) is not supported; use streamable HTTP"
            )));
        }
        (_, _, Some(kind))
            if !matches!(
                kind,
                "stdio" | "http" | "streamable-http" | "streamableHttp"
            ) =>
        {
            return Err(error(format!("unknown transport type `{kind}`")));
        }
        (None, None, _) => {
            return Err(error(
                "needs `command` (stdio) or `url` (streamable HTTP)".into(),
            ));
        }
        (_, _, Some(kind)) => {
            return Err(error(format!(
                "transport type `{kind}` does not match the fields given"
            )));
        }
    };
    let seconds = |field: &str, value: Option<f64>, default: Duration| match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(error(format!(
            "`{field}` must be a positive number of seconds, got {s}"
        ))),
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
    })
}

fn check_unique(upstreams: &[UpstreamConfig], path: &Path) -> Result<(), ConfigError> {
    for (index, upstream) in upstreams.iter().enumerate() {
        if upstreams[..index].iter().any(|u| u.name == upstream.name) {
            return Err(ConfigError {
                path: path.to_owned(),
                upstream: Some(upstream.name.to_string()),
                reason: "declared twice".into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
