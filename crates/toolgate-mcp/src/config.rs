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
use toolgate_agent::WebConfig;
use toolgate_core::{ActionPolicy, Alias, GroupId, ToolName};

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
    /// Whether its tools sit behind `load_tool_group`.
    pub exposure: Exposure,
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

/// When an upstream starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Startup {
    /// On the first load of its group (or call of one of its tools).
    Lazy,
    /// At gateway start-up, so its tools are listed before any client asks.
    Eager,
}

/// Where an upstream's tools appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// In its own group, loaded on demand: the default.
    Grouped,
    /// As core tools, always listed. Implies eager start-up.
    Core,
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
    web: Option<RawWeb>,
    /// Per-group settings, by group id.
    #[serde(default)]
    groups: BTreeMap<String, RawGroup>,
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

/// The `[web]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeb {
    #[serde(default)]
    search_url: Option<String>,
    #[serde(default)]
    max_results: Option<usize>,
    #[serde(default)]
    searches_per_turn: Option<usize>,
    #[serde(default)]
    max_content_chars: Option<usize>,
    #[serde(default)]
    allow_private_addresses: bool,
    #[serde(default)]
    timeout_seconds: Option<f64>,
}

/// One `[groups.<id>]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    #[serde(default)]
    expose: Option<String>,
    #[serde(default)]
    allow_actions: Option<Vec<String>>,
    #[serde(default)]
    deny_actions: Vec<String>,
}

/// An `[aliases]` entry: `old = "new"`, or a table with the action and
/// fixed arguments.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawAlias {
    Tool(String),
    Call {
        tool: String,
        #[serde(default)]
        action: Option<String>,
        #[serde(default)]
        arguments: Option<toml::Table>,
    },
}

/// How a group's tools are offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupExposure {
    /// Each tool on its own.
    Tools,
    /// One polymorphic tool named after the group, its tools as actions.
    Polymorphic,
}

/// One group's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupSettings {
    /// How its tools are offered; `None` keeps the group's default (the
    /// built-in `web` and `prompt_manager` are polymorphic, the rest tools).
    pub expose: Option<GroupExposure>,
    /// Which actions a polymorphic group offers.
    pub policy: ActionPolicy,
}

/// The tool settings of a configuration file, beside its upstreams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSettings {
    /// Per-group settings, by group id.
    pub groups: BTreeMap<String, GroupSettings>,
    /// Old tool names and what they call now.
    pub aliases: Vec<(String, Alias)>,
    /// The `web` built-in's settings.
    pub web: WebConfig,
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
    let error = |reason: String| ConfigError {
        path: path.to_owned(),
        upstream: None,
        reason,
    };
    let mut settings = ToolSettings::default();
    for (id, group) in raw.groups {
        let expose = match group.expose.as_deref() {
            None => None,
            Some("tools") => Some(GroupExposure::Tools),
            Some("polymorphic") => Some(GroupExposure::Polymorphic),
            Some(other) => {
                return Err(error(format!(
                    "[groups.{id}]: `expose` is \"tools\" or \"polymorphic\", not \"{other}\""
                )));
            }
        };
        let policy = ActionPolicy {
            allow: group.allow_actions,
            deny: group.deny_actions,
        };
        settings.groups.insert(id, GroupSettings { expose, policy });
    }
    for (old, alias) in raw.aliases {
        let (tool, action, arguments) = match alias {
            RawAlias::Tool(tool) => (tool, None, None),
            RawAlias::Call {
                tool,
                action,
                arguments,
            } => (tool, action, arguments),
        };
        let tool = ToolName::new(tool).map_err(|e| {
            error(format!(
                "[aliases] `{old}`: the tool is not a valid name: {e}"
            ))
        })?;
        let arguments = match arguments {
            None => serde_json::Map::new(),
            Some(table) => match serde_json::to_value(table) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => {
                    return Err(error(format!(
                        "[aliases] `{old}`: `arguments` must be a table"
                    )));
                }
            },
        };
        settings.aliases.push((
            old,
            Alias {
                tool,
                action,
                arguments,
            },
        ));
    }
    if let Some(web) = raw.web {
        let defaults = WebConfig::default();
        let timeout = match web.timeout_seconds {
            None => defaults.timeout,
            Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
            Some(s) => {
                return Err(error(format!(
                    "[web]: `timeout_seconds` must be a positive number of seconds, got {s}"
                )));
            }
        };
        if let Some(url) = &web.search_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(error(format!(
                "[web]: `search_url` must start with http:// or https://, got `{url}`"
            )));
        }
        settings.web = WebConfig {
            search_url: web.search_url,
            max_results: web.max_results.unwrap_or(defaults.max_results),
            searches_per_turn: web.searches_per_turn.unwrap_or(defaults.searches_per_turn),
            max_content_chars: web.max_content_chars.unwrap_or(defaults.max_content_chars),
            allow_private_addresses: web.allow_private_addresses,
            timeout,
        };
    }
    Ok(settings)
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
    let exposure = if raw.core {
        Exposure::Core
    } else {
        Exposure::Grouped
    };
    Ok(UpstreamConfig {
        description: raw.description.filter(|d| !d.trim().is_empty()),
        transport,
        startup: if raw.eager || raw.core {
            Startup::Eager
        } else {
            Startup::Lazy
        },
        exposure,
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
