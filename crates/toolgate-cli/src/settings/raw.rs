//! `toolgate.toml` as written: each section in its owner's raw form, read
//! with their spans so an error can name its line. [`Settings::parse`]
//! checks them into [`Settings`].
//!
//! [`Settings::parse`]: super::Settings::parse
//! [`Settings`]: super::Settings

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{ActionPolicy, ToolPolicy};
use toolgate_llm::ModelSettings;
use toolgate_mcp::config::RawUpstream;
use toolgate_mcp::{ClientName, OAuthSettings, RateLimit};
use toolgate_tools::{RawAlias, RawGroupSettings, RawJavaScriptSettings, RawWebSettings};

use super::{AgentSettings, AuditSettings, StoreSettings};
use crate::commands::telemetry::TelemetrySettings;

/// The file as written: each section in its owner's raw form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSettings {
    #[serde(default)]
    pub(super) upstream: Vec<Spanned<RawUpstream>>,
    #[serde(default)]
    pub(super) model: Option<ModelSettings>,
    #[serde(default)]
    pub(super) routing: Option<Spanned<RoutingConfig>>,
    #[serde(default)]
    pub(super) web: Option<Spanned<RawWebSettings>>,
    #[serde(default)]
    pub(super) tools: Option<Spanned<RawTools>>,
    #[serde(default)]
    pub(super) groups: BTreeMap<String, Spanned<RawGroupSettings>>,
    #[serde(default)]
    pub(super) aliases: BTreeMap<String, Spanned<RawAlias>>,
    #[serde(default)]
    pub(super) agent: Option<RawAgent>,
    #[serde(default)]
    pub(super) store: Option<Spanned<StoreSettings>>,
    #[serde(default)]
    pub(super) clients: BTreeMap<String, Spanned<RawClient>>,
    #[serde(default)]
    pub(super) audit: Option<AuditSettings>,
    #[serde(default)]
    pub(super) rate_limits: Option<Spanned<RawRateLimits>>,
    #[serde(default)]
    pub(super) auth: Option<Spanned<RawAuth>>,
    #[serde(default)]
    pub(super) telemetry: Option<TelemetrySettings>,
}

/// `[tools]` as written: toolgate-tools' keys ([`RawToolsSettings`]),
/// `loaded_schemas`, `max_loaded_tokens`, `defer`, `defer_share` and
/// `context_window`, which are the agent's and the gateway's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTools {
    #[serde(default)]
    pub(super) timeout_seconds: Option<f64>,
    #[serde(default)]
    pub(super) javascript: Option<RawJavaScriptSettings>,
    #[serde(default)]
    pub(super) loaded_schemas: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) max_loaded_tokens: Option<Spanned<usize>>,
    #[serde(default)]
    pub(super) defer: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) defer_share: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) context_window: Option<Spanned<usize>>,
}

/// `[auth]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    #[serde(default)]
    pub(super) oauth: Option<RawOAuth>,
}

/// `[auth.oauth]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    pub(super) issuer: String,
    pub(super) audience: String,
    #[serde(default)]
    pub(super) jwks_url: Option<String>,
    #[serde(default)]
    pub(super) client_claim: Option<String>,
    /// Claim values mapped to client names.
    #[serde(default)]
    pub(super) clients: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) default_client: Option<String>,
    #[serde(default)]
    pub(super) required_scopes: Vec<String>,
}

impl RawOAuth {
    pub(super) fn into_settings(self) -> Result<OAuthSettings, toolgate_mcp::ClientError> {
        Ok(OAuthSettings {
            issuer: self.issuer,
            audience: self.audience,
            jwks_url: self.jwks_url,
            client_claim: self
                .client_claim
                .unwrap_or_else(|| OAuthSettings::DEFAULT_CLIENT_CLAIM.to_owned()),
            claim_clients: self
                .clients
                .into_iter()
                .map(|(value, client)| Ok((value, ClientName::new(&client)?)))
                .collect::<Result<_, toolgate_mcp::ClientError>>()?,
            default_client: self
                .default_client
                .as_deref()
                .map(ClientName::new)
                .transpose()?,
            required_scopes: self.required_scopes,
        })
    }
}

/// A `[clients.<name>]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    /// The SHA-256 of the client's token, as `toolgate token create` prints
    /// it; without one, the client comes in only through OAuth.
    #[serde(default)]
    pub(super) token_sha256: Option<String>,
    /// The client's own limit instead of `[rate_limits] client`.
    #[serde(default)]
    pub(super) rate_limit: Option<RawRateLimit>,
    /// When set, the only groups the client sees.
    #[serde(default)]
    pub(super) allow_groups: Option<Vec<String>>,
    /// Groups the client never sees.
    #[serde(default)]
    pub(super) deny_groups: Vec<String>,
    /// When set, the only tools the client sees.
    #[serde(default)]
    pub(super) allow_tools: Option<Vec<String>>,
    /// Tools the client never sees.
    #[serde(default)]
    pub(super) deny_tools: Vec<String>,
    /// Per polymorphic tool, the only actions the client may call.
    #[serde(default)]
    pub(super) allow_actions: BTreeMap<String, Vec<String>>,
    /// Per polymorphic tool, actions the client may not call.
    #[serde(default)]
    pub(super) deny_actions: BTreeMap<String, Vec<String>>,
}

impl RawClient {
    /// The client's policy.
    pub(super) fn policy(&self) -> ToolPolicy {
        let set = |names: &[String]| names.iter().cloned().collect();
        let tools: std::collections::BTreeSet<&String> = self
            .allow_actions
            .keys()
            .chain(self.deny_actions.keys())
            .collect();
        ToolPolicy {
            allow_groups: self.allow_groups.as_deref().map(set),
            deny_groups: set(&self.deny_groups),
            allow_tools: self.allow_tools.as_deref().map(set),
            deny_tools: set(&self.deny_tools),
            actions: tools
                .into_iter()
                .map(|tool| {
                    let policy = ActionPolicy {
                        allow: self.allow_actions.get(tool).cloned(),
                        deny: self.deny_actions.get(tool).cloned().unwrap_or_default(),
                    };
                    (tool.clone(), policy)
                })
                .collect(),
        }
    }
}

/// `{ calls = N, per_seconds = S }`.
#[derive(Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRateLimit {
    pub(super) calls: u32,
    pub(super) per_seconds: f64,
}

impl RawRateLimit {
    pub(super) fn check(self) -> Result<RateLimit, String> {
        if !self.per_seconds.is_finite() || self.per_seconds <= 0.0 {
            return Err(format!(
                "`per_seconds` must be above 0, got {}",
                self.per_seconds
            ));
        }
        let per = std::time::Duration::try_from_secs_f64(self.per_seconds)
            .map_err(|error| format!("`per_seconds` {}: {error}", self.per_seconds))?;
        RateLimit::new(self.calls, per)
    }
}

/// `[rate_limits]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRateLimits {
    /// Every caller's tool calls, each caller separately.
    #[serde(default)]
    pub(super) client: Option<RawRateLimit>,
    /// Calls of one tool, each caller separately.
    #[serde(default)]
    pub(super) tools: BTreeMap<String, RawRateLimit>,
}

/// A key's place in the file and what is wrong with it.
pub(super) type Misplaced = (Range<usize>, String);

/// The `[agent]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) system_prompt: Option<String>,
    #[serde(default)]
    pub(super) prompts: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) tools: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub(super) compact_at: Option<Spanned<f64>>,
}

impl RawAgent {
    /// The settings, and where the tools array sits; `Err` with where
    /// `compact_at` sits and why when it is not a share.
    pub(super) fn into_settings(self) -> Result<(AgentSettings, Option<Range<usize>>), Misplaced> {
        let Self {
            id,
            name,
            system_prompt,
            prompts,
            tools,
            compact_at,
        } = self;
        let compact_at = match compact_at {
            None => None,
            Some(share) if (0.0..=1.0).contains(share.get_ref()) => Some(share.into_inner()),
            Some(share) => {
                return Err((
                    share.span(),
                    format!(
                        "`compact_at` is a share of the context window, from 0 (off) to 1, not {}",
                        share.get_ref()
                    ),
                ));
            }
        };
        let span = tools.as_ref().map(Spanned::span);
        let settings = AgentSettings {
            id,
            name,
            system_prompt,
            prompts,
            tools: tools.map(Spanned::into_inner).unwrap_or_default(),
            compact_at,
        };
        Ok((settings, span))
    }
}
