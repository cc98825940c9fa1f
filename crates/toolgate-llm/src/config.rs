//! Provider settings: [`ModelSettings`] as a user writes them (the `[model]`
//! table of `toolgate.toml`), resolved with the environment into a
//! [`ProviderConfig`].

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::model::{DEFAULT_CONTEXT_WINDOW, ToolLimits};

/// Which wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI chat completions: OpenAI, Ollama, vLLM, llama.cpp, OpenRouter...
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

impl ProviderKind {
    /// The configured spelling: `openai`, `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The public endpoint used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The provider's own key variable.
    fn key_variable(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the tools reach the model and how its calls come back (`tool_calls`
/// in `[model]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolCalls {
    /// The provider's own tool parameter and tool calls.
    #[default]
    Native,
    /// Tools described in the system prompt; each reply is one JSON object
    /// (a call or the answer), constrained by `response_format` on the
    /// OpenAI wire, and read leniently.
    Prompted,
    /// Tools described in the system prompt; the model writes its calls as
    /// `<tool_call>` blocks in free text, read leniently. For servers that
    /// refuse `response_format`.
    PromptedText,
}

impl ToolCalls {
    /// Every configured spelling, in order.
    pub const NAMES: [&'static str; 3] = ["native", "prompted", "prompted-text"];

    /// The configured spelling: `native`, `prompted`, `prompted-text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Prompted => "prompted",
            Self::PromptedText => "prompted-text",
        }
    }

    /// The mode a spelling names (any case).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "native" => Some(Self::Native),
            "prompted" => Some(Self::Prompted),
            "prompted-text" => Some(Self::PromptedText),
            _ => None,
        }
    }
}

impl fmt::Display for ToolCalls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key. Its `Debug` never shows it, and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(redacted)")
    }
}

/// When and how often a failed request is sent again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry when the server does not say; doubles each time.
    pub initial_backoff: Duration,
    /// Longest computed wait.
    pub max_backoff: Duration,
    /// Longest server-requested wait (`Retry-After`) honoured; a longer one fails at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Everything a provider client needs.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The API's base URL, without a trailing `/` (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The key, if any (local servers need none).
    pub api_key: Option<ApiKey>,
    /// Where the key came from, for error messages: never the key.
    pub key_source: String,
    /// Stream answers (SSE).
    pub stream: bool,
    /// Output token limit. Anthropic requires one (4096 when unset); OpenAI
    /// gets `max_tokens` only when set.
    pub max_tokens: Option<u32>,
    /// Most tools one request may carry: OpenAI's chat completions refuse
    /// more than [`OPENAI_MAX_TOOLS`], the default for that wire; none for
    /// Anthropic's. A caller showing more trims to it.
    pub max_tools: Option<usize>,
    /// Most tokens of tool schemas one request may carry (counted with
    /// o200k_base): [`DEFAULT_MAX_TOOL_TOKENS`] by default. A caller
    /// showing more trims to it.
    pub max_tool_tokens: Option<usize>,
    /// Tokens the model reads at most in one request: told in `[model]`,
    /// else known from the model's name ([`known_context_window`]), else
    /// [`DEFAULT_CONTEXT_WINDOW`]. What compaction's threshold is a share of.
    pub context_window: usize,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest silence while reading a response or between stream chunks.
    pub read_timeout: Duration,
    /// Retries on 429, 5xx and failed connections.
    pub retry: RetryPolicy,
    /// How tools reach the model and its calls come back: natively by
    /// default, or described in the prompt for models without tool calls.
    pub tool_calls: ToolCalls,
}

/// The most tools OpenAI's chat completions accept in one request ("A max
/// of 128 functions are supported", its API reference for `tools`).
pub const OPENAI_MAX_TOOLS: usize = 128;

/// The most tokens of tool schemas a request carries by default: half of
/// a 200,000-token context window, the rest left to the conversation.
/// Counted with o200k_base, which providers' own tokenizers do not match
/// exactly; a model with a smaller window wants less.
pub const DEFAULT_MAX_TOOL_TOKENS: usize = 100_000;

/// The smallest `context_window` `[model]` takes.
pub const MIN_CONTEXT_WINDOW: usize = 1_000;

/// The context window of a hosted model known by its name's family, as its
/// provider documents it (Anthropic's Claude models 200,000 tokens; OpenAI's
/// GPT-4o 128,000, GPT-4.1 1,047,576, GPT-5 400,000, o1/o3/o4 200,000);
/// `None` for any other name.
pub fn known_context_window(model: &str) -> Option<usize> {
    let model = model.trim().to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or_default();
    const KNOWN: [(&str, usize); 7] = [
        ("claude-", 200_000),
        ("gpt-4o", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
    ];
    KNOWN
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, window)| *window)
}

impl ProviderConfig {
    /// A configuration with the defaults: streaming, no key, 10 s to
    /// connect, 120 s of silence at most, 3 retries, the wire's tool limit
    /// and [`DEFAULT_MAX_TOOL_TOKENS`].
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let model_name: String = model.into();
        Self {
            kind,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model_name.clone(),
            api_key: None,
            key_source: "no API key configured".to_owned(),
            stream: true,
            max_tokens: None,
            max_tools: match kind {
                ProviderKind::OpenAi => Some(OPENAI_MAX_TOOLS),
                ProviderKind::Anthropic => None,
            },
            max_tool_tokens: Some(DEFAULT_MAX_TOOL_TOKENS),
            context_window: known_context_window(&model_name).unwrap_or(DEFAULT_CONTEXT_WINDOW),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            tool_calls: ToolCalls::Native,
        }
    }

    /// The tool limits a request keeps within.
    pub fn tool_limits(&self) -> ToolLimits {
        ToolLimits {
            tools: self.max_tools,
            tokens: self.max_tool_tokens,
        }
    }
}

/// The `[model]` table of `toolgate.toml`. Every field is optional; the
/// environment fills in or overrides (see [`ModelSettings::resolve`]).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// `openai` (default) or `anthropic`.
    pub provider: Option<String>,
    /// The model's name.
    pub model: Option<String>,
    /// The API's base URL (default per provider).
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// File holding the key.
    pub api_key_file: Option<PathBuf>,
    /// Stream answers (default true).
    pub stream: Option<bool>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Most tools one request may carry (default: 128 for `openai`, none
    /// for `anthropic`).
    pub max_tools: Option<usize>,
    /// Most tokens of tool schemas one request may carry (default
    /// 100,000).
    pub max_tool_tokens: Option<usize>,
    /// Tokens the model reads at most in one request (default: known from
    /// the model's name, else 128,000).
    pub context_window: Option<usize>,
    /// Seconds to wait for a connection.
    pub connect_timeout_seconds: Option<f64>,
    /// Seconds of silence allowed while reading.
    pub read_timeout_seconds: Option<f64>,
    /// Retries on 429, 5xx and failed connections.
    pub max_retries: Option<u32>,
    /// `native` (default), `prompted` or `prompted-text` (see
    /// [`ToolCalls`]).
    pub tool_calls: Option<String>,
}

/// Why settings do not make a provider configuration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A provider toolgate does not speak.
    #[error("unknown provider '{0}': use openai (any OpenAI-compatible server) or anthropic")]
    UnknownProvider(String),
    /// `max_tools` or `max_tool_tokens` of 0.
    #[error("{0} must be at least 1 (the core tools alone need some)")]
    ToolLimit(&'static str),
    /// A context window too small for any conversation.
    #[error("context_window must be at least {MIN_CONTEXT_WINDOW} tokens, not {0}")]
    ContextWindow(usize),
    /// A `tool_calls` mode toolgate does not know.
    #[error("unknown tool_calls '{0}': use native, prompted or prompted-text")]
    UnknownToolCalls(String),
    /// No model anywhere.
    #[error("no model configured: set `model` under [model] in the config file, or TOOLGATE_MODEL")]
    NoModel,
    /// A base URL that is not http(s).
    #[error("base_url '{0}' is not an http:// or https:// URL")]
    BaseUrl(String),
    /// The key file cannot be read.
    #[error("api_key_file {path}: {reason}", path = path.display())]
    KeyFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why it cannot be read.
        reason: String,
    },
    /// The key file holds nothing.
    #[error("api_key_file {} is empty", .0.display())]
    EmptyKeyFile(std::path::PathBuf),
    /// `api_key_env` names an unset variable.
    #[error("api_key_env names {0}, which is not set")]
    KeyVariable(String),
    /// A duration that is not a positive number of seconds.
    #[error("{name} must be a positive number of seconds, at most 86400 (a day), not {seconds:?}")]
    Seconds {
        /// The setting.
        name: String,
        /// Its value.
        seconds: f64,
    },
}

impl ModelSettings {
    /// The provider configuration these settings and the environment give.
    /// `TOOLGATE_PROVIDER`, `TOOLGATE_MODEL` and `TOOLGATE_BASE_URL` override
    /// the settings, and `TOOLGATE_TOOL_CALLS` overrides `tool_calls`. The key comes from `api_key_file`, else the variable
    /// `api_key_env` names, else `TOOLGATE_API_KEY`, else the provider's own
    /// variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`); none is fine for a
    /// local server.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderConfig, ConfigError> {
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let kind = match env("TOOLGATE_PROVIDER").or_else(|| self.provider.clone()) {
            None => ProviderKind::OpenAi,
            Some(name) => match name.trim().to_ascii_lowercase().as_str() {
                "openai" => ProviderKind::OpenAi,
                "anthropic" => ProviderKind::Anthropic,
                _ => {
                    return Err(ConfigError::UnknownProvider(name));
                }
            },
        };
        let model = env("TOOLGATE_MODEL")
            .or_else(|| self.model.clone())
            .filter(|m| !m.trim().is_empty())
            .ok_or(ConfigError::NoModel)?;
        let base_url = env("TOOLGATE_BASE_URL")
            .or_else(|| self.base_url.clone())
            .unwrap_or_else(|| kind.default_base_url().to_owned());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ConfigError::BaseUrl(base_url));
        }
        let mut config = ProviderConfig::new(kind, base_url, model.trim());
        (config.api_key, config.key_source) = self.key(kind, &env)?;
        if let Some(stream) = self.stream {
            config.stream = stream;
        }
        config.max_tokens = self.max_tokens;
        if let Some(tools) = self.max_tools {
            config.max_tools = Some(at_least_one("max_tools", tools)?);
        }
        if let Some(tokens) = self.max_tool_tokens {
            config.max_tool_tokens = Some(at_least_one("max_tool_tokens", tokens)?);
        }
        if let Some(window) = self.context_window {
            if window < MIN_CONTEXT_WINDOW {
                return Err(ConfigError::ContextWindow(window));
            }
            config.context_window = window;
        }
        if let Some(seconds) = self.connect_timeout_seconds {
            config.connect_timeout = seconds_setting("connect_timeout_seconds", seconds)?;
        }
        if let Some(seconds) = self.read_timeout_seconds {
            config.read_timeout = seconds_setting("read_timeout_seconds", seconds)?;
        }
        if let Some(retries) = self.max_retries {
            config.retry.max_retries = retries;
        }
        if let Some(name) = env("TOOLGATE_TOOL_CALLS").or_else(|| self.tool_calls.clone()) {
            config.tool_calls =
                ToolCalls::parse(&name).ok_or(ConfigError::UnknownToolCalls(name))?;
        }
        Ok(config)
    }

    fn key(
        &self,
        kind: ProviderKind,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Option<ApiKey>, String), ConfigError> {
        if let Some(path) = &self.api_key_file {
            let text = std::fs::read_to_string(path).map_err(|error| ConfigError::KeyFile {
                path: path.clone(),
                reason: error.to_string(),
            })?;
            let key = text.trim();
            if key.is_empty() {
                return Err(ConfigError::EmptyKeyFile(path.clone()));
            }
            return Ok((
                Some(ApiKey::new(key)),
                format!("the file {}", path.display()),
            ));
        }
        if let Some(variable) = &self.api_key_env {
            return match env(variable) {
                Some(key) => Ok((
                    Some(ApiKey::new(key.trim())),
                    format!("the environment variable {variable}"),
                )),
                None => Err(ConfigError::KeyVariable(variable.clone())),
            };
        }
        for variable in ["TOOLGATE_API_KEY", kind.key_variable()] {
            if let Some(key) = env(variable) {
                return Ok((
                    Some(ApiKey::new(key.trim())),
                    format!("the environment variable {variable}"),
                ));
            }
        }
        Ok((
            None,
            format!(
                "no API key configured: set {} or api_key_file",
                kind.key_variable()
            ),
        ))
    }
}

/// A tool limit, refused when 0.
fn at_least_one(name: &'static str, limit: usize) -> Result<usize, ConfigError> {
    if limit == 0 {
        return Err(ConfigError::ToolLimit(name));
    }
    Ok(limit)
}

fn seconds_setting(name: &str, seconds: f64) -> Result<Duration, ConfigError> {
    // At most a day: beyond it a Duration may not hold the value.
    // Below a nanosecond a Duration is zero: every request would time out.
    if (1e-9..=86_400.0).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(ConfigError::Seconds {
            name: name.to_owned(),
            seconds,
        })
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
