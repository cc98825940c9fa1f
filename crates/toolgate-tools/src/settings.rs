//! The runtime's sections of `toolgate.toml`: `[groups.<id>]` (a group
//! offered as one polymorphic tool, and its action policy), `[aliases]` (old
//! tool names and what they call now), `[web]` (the built-in `web` tools)
//! and `[tools]` (how long a call may run; `[tools.javascript]`, the limits
//! of a JavaScript tool's call, whether `js_eval` is offered and whose
//! tools a gateway's agents write).
//!
//! This crate never reads the file: the command line reads it once and hands
//! over each entry as written (`Raw*`), which checks itself into the form the
//! runtime uses; an [`InvalidSetting`] says what is wrong, and the command
//! line adds where.

use std::collections::BTreeMap;

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate_core::{
    ACTION_PARAMETER, ActionPolicy, Alias, NameError, ToolName, timeout_from_seconds,
};
use toolgate_store::ToolOwner;

use crate::builtin::WebConfig;
use crate::deadline::DEFAULT_CALL_TIMEOUT;
use crate::javascript::{JavaScriptConfig, JsEval, ToolOwnership};

/// One `[groups.<id>]` table, as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroupSettings {
    /// `"tools"` or `"polymorphic"`.
    #[serde(default)]
    pub expose: Option<String>,
    /// The only actions offered.
    #[serde(default)]
    pub allow_actions: Option<Vec<String>>,
    /// Actions never offered.
    #[serde(default)]
    pub deny_actions: Vec<String>,
}

/// An `[aliases]` entry, as written: `old = "new"`, or a table with the
/// action and fixed arguments.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum RawAlias {
    /// The tool that answers now.
    Tool(String),
    /// The tool, the action and the arguments the old tool implied.
    Call {
        /// The tool.
        tool: String,
        /// The action, when the tool is polymorphic.
        #[serde(default)]
        action: Option<String>,
        /// Fixed arguments.
        #[serde(default)]
        arguments: Option<Value>,
    },
}

/// The `[web]` table, as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWebSettings {
    /// A SearXNG JSON search endpoint.
    #[serde(default)]
    pub search_url: Option<String>,
    /// Results per search.
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Searches per turn.
    #[serde(default)]
    pub searches_per_turn: Option<usize>,
    /// Longest page text returned.
    #[serde(default)]
    pub max_content_chars: Option<usize>,
    /// Lets `fetch` reach private and loopback addresses.
    #[serde(default)]
    pub allow_private_addresses: bool,
    /// Per request.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
}

/// The `[tools]` table, as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToolsSettings {
    /// How long a tool call may run before it is cancelled, in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// `[tools.javascript]`: the limits of one JavaScript call.
    #[serde(default)]
    pub javascript: Option<RawJavaScriptSettings>,
}

/// The `[tools.javascript]` table, as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJavaScriptSettings {
    /// Wall time per call, in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Heap per call, in MiB.
    #[serde(default)]
    pub memory_mib: Option<u32>,
    /// Calls running at once; more wait for a turn.
    #[serde(default)]
    pub max_concurrent_calls: Option<usize>,
    /// Per group, the table its tools receive as `context.settings`.
    #[serde(default)]
    pub settings: BTreeMap<String, Map<String, Value>>,
    /// Offers the core tool `js_eval`.
    #[serde(default)]
    pub eval: Option<bool>,
    /// Whose JavaScript tools `toolgate serve`'s sessions write and see.
    #[serde(default)]
    pub owner: Option<String>,
}

/// The longest `owner` of `[tools.javascript]`.
const MAX_OWNER_CHARS: usize = 128;

/// The largest `memory_mib` of `[tools.javascript]`: 4 GiB.
const MAX_JAVASCRIPT_MEMORY_MIB: u32 = 4096;

/// The largest `max_concurrent_calls` of `[tools.javascript]`: tokio's
/// blocking threads are 512.
const MAX_CONCURRENT_JAVASCRIPT_CALLS: usize = 256;

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

/// The checked `[groups]`, `[aliases]`, `[web]` and `[tools]` sections.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSettings {
    /// Per-group settings, by group id (`*` for every group without its own).
    pub groups: BTreeMap<String, GroupSettings>,
    /// Old tool names and what they call now.
    pub aliases: Vec<(String, Alias)>,
    /// The `web` built-in's settings.
    pub web: WebConfig,
    /// How long a call may run before it is cancelled, for sources without
    /// a deadline of their own (`[tools] timeout_seconds`).
    pub call_timeout: Duration,
    /// The limits of one JavaScript call (`[tools.javascript]`).
    pub javascript: JavaScriptConfig,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            groups: BTreeMap::new(),
            aliases: Vec::new(),
            web: WebConfig::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            javascript: JavaScriptConfig::default(),
        }
    }
}

/// A setting that does not check; `Display` says what is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidSetting {
    /// `expose` is neither `tools` nor `polymorphic`.
    #[error("`expose` is \"tools\" or \"polymorphic\", not \"{0}\"")]
    Expose(String),
    /// An alias names a tool that cannot exist.
    #[error("the tool is not a valid name: {0}")]
    AliasTool(NameError),
    /// An alias's `arguments` are not a table.
    #[error("`arguments` must be a table")]
    AliasArguments,
    /// An alias's fixed `arguments` set the action, which would override
    /// the one the alias names (and the one a policy checked).
    #[error("`arguments` may not set `action`; name it with the alias's own `action = \"...\"`")]
    AliasArgumentsSetAction,
    /// `timeout_seconds` is not a positive number.
    #[error(
        "`timeout_seconds` must be a positive number of seconds, at most 86400 (a day), got {0:?}"
    )]
    Timeout(f64),
    /// `search_url` is not http(s).
    #[error("`search_url` must start with http:// or https://, got `{0}`")]
    SearchUrl(String),
    /// `memory_mib` is out of range.
    #[error("`memory_mib` must be between 1 and {MAX_JAVASCRIPT_MEMORY_MIB}, got {0}")]
    Memory(u32),
    /// `max_concurrent_calls` is out of range.
    #[error(
        "`max_concurrent_calls` must be between 1 and {MAX_CONCURRENT_JAVASCRIPT_CALLS}, got {0}"
    )]
    Concurrency(usize),
    /// `owner` is blank or too long.
    #[error(
        "`owner` must be 1-{MAX_OWNER_CHARS} characters with no leading or trailing white space, got {0:?}"
    )]
    Owner(String),
    /// A key of `[tools.javascript]` does not check.
    #[error("[tools.javascript]: {0}")]
    JavaScript(Box<InvalidSetting>),
}

impl RawGroupSettings {
    /// The group's settings.
    pub fn into_settings(self) -> Result<GroupSettings, InvalidSetting> {
        let Self {
            expose,
            allow_actions,
            deny_actions,
        } = self;
        let expose = match expose.as_deref() {
            None => None,
            Some("tools") => Some(GroupExposure::Tools),
            Some("polymorphic") => Some(GroupExposure::Polymorphic),
            Some(other) => return Err(InvalidSetting::Expose(other.to_owned())),
        };
        Ok(GroupSettings {
            expose,
            policy: ActionPolicy {
                allow: allow_actions,
                deny: deny_actions,
            },
        })
    }
}

impl RawAlias {
    /// The alias.
    pub fn into_alias(self) -> Result<Alias, InvalidSetting> {
        let (tool, action, arguments) = match self {
            Self::Tool(tool) => (tool, None, None),
            Self::Call {
                tool,
                action,
                arguments,
            } => (tool, action, arguments),
        };
        let tool = ToolName::new(tool).map_err(InvalidSetting::AliasTool)?;
        let arguments = match arguments {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(InvalidSetting::AliasArguments),
        };
        if arguments.contains_key(ACTION_PARAMETER) {
            return Err(InvalidSetting::AliasArgumentsSetAction);
        }
        Ok(Alias {
            tool,
            action,
            arguments,
        })
    }
}

impl RawWebSettings {
    /// The `web` built-in's settings, defaults filled in.
    pub fn into_config(self) -> Result<WebConfig, InvalidSetting> {
        let Self {
            search_url,
            max_results,
            searches_per_turn,
            max_content_chars,
            allow_private_addresses,
            timeout_seconds,
        } = self;
        let defaults = WebConfig::default();
        let timeout = match timeout_seconds {
            None => defaults.timeout,
            Some(s) => timeout_from_seconds(s).ok_or(InvalidSetting::Timeout(s))?,
        };
        if let Some(url) = &search_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(InvalidSetting::SearchUrl(url.clone()));
        }
        Ok(WebConfig {
            search_url,
            max_results: max_results.unwrap_or(defaults.max_results),
            searches_per_turn: searches_per_turn.unwrap_or(defaults.searches_per_turn),
            max_content_chars: max_content_chars.unwrap_or(defaults.max_content_chars),
            allow_private_addresses,
            timeout,
        })
    }
}

impl RawToolsSettings {
    /// How long a tool call may run ([`DEFAULT_CALL_TIMEOUT`] unless set)
    /// and the limits of a JavaScript call.
    pub fn into_config(self) -> Result<(Duration, JavaScriptConfig), InvalidSetting> {
        let Self {
            timeout_seconds,
            javascript,
        } = self;
        let call_timeout = match timeout_seconds {
            None => DEFAULT_CALL_TIMEOUT,
            Some(seconds) => {
                timeout_from_seconds(seconds).ok_or(InvalidSetting::Timeout(seconds))?
            }
        };
        let javascript = javascript
            .unwrap_or_default()
            .into_config()
            .map_err(|error| InvalidSetting::JavaScript(Box::new(error)))?;
        Ok((call_timeout, javascript))
    }
}

impl RawJavaScriptSettings {
    /// The limits, defaults filled in.
    pub fn into_config(self) -> Result<JavaScriptConfig, InvalidSetting> {
        let Self {
            timeout_seconds,
            memory_mib,
            max_concurrent_calls,
            settings,
            eval,
            owner,
        } = self;
        let defaults = JavaScriptConfig::default();
        let timeout = match timeout_seconds {
            None => defaults.timeout,
            Some(seconds) => {
                timeout_from_seconds(seconds).ok_or(InvalidSetting::Timeout(seconds))?
            }
        };
        let memory_mib = match memory_mib {
            None => defaults.memory_mib,
            Some(mib) if (1..=MAX_JAVASCRIPT_MEMORY_MIB).contains(&mib) => mib,
            Some(mib) => return Err(InvalidSetting::Memory(mib)),
        };
        let max_concurrent_calls = match max_concurrent_calls {
            None => defaults.max_concurrent_calls,
            Some(calls) if (1..=MAX_CONCURRENT_JAVASCRIPT_CALLS).contains(&calls) => calls,
            Some(calls) => return Err(InvalidSetting::Concurrency(calls)),
        };
        // Named, the owner is every caller's; else each caller has its own.
        let (owner, ownership) = match owner {
            None => (defaults.owner, ToolOwnership::PerCaller),
            Some(owner)
                if !owner.is_empty()
                    && owner.trim() == owner
                    && owner.chars().count() <= MAX_OWNER_CHARS =>
            {
                (ToolOwner::new(owner), ToolOwnership::Shared)
            }
            Some(owner) => return Err(InvalidSetting::Owner(owner)),
        };
        Ok(JavaScriptConfig {
            timeout,
            memory_mib,
            max_concurrent_calls,
            settings,
            eval: match eval {
                Some(true) => JsEval::On,
                Some(false) | None => JsEval::Off,
            },
            owner,
            ownership,
            slots: defaults.slots,
        })
    }
}
