//! `toolgate.toml`, read once. The command line is the only owner of the
//! file: it reads it here, each section into the type of the crate that uses
//! it (`[[upstream]]` for toolgate-mcp, `[groups]`, `[aliases]`, `[web]` and
//! `[tools]` for toolgate-tools, `[routing]` for toolgate-core, `[model]` for
//! toolgate-llm, `[agent]` for `toolgate chat`), and hands each its own.
//!
//! An error names the file, the line and the table or key at fault.
//! Unknown tables and keys are errors, so a typo is never silently ignored.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toolgate_core::routing::{RoutingConfig, RoutingError, Taxonomy};
use toolgate_core::{ActionPolicy, Catalog, LoadedSchemas, ToolPolicy};
use toolgate_llm::ModelSettings;

use crate::commands::telemetry::TelemetrySettings;
use toolgate_mcp::config::{RawUpstream, UpstreamConfig, first_duplicate};
use toolgate_mcp::{
    ClientName, Clients, OAuthError, OAuthSettings, RateLimit, RateLimitSettings, TokenHash,
};
use toolgate_tools::{
    RawAlias, RawGroupSettings, RawJavaScriptSettings, RawToolsSettings, RawWebSettings,
    ToolSettings,
};

use self::routing::RoutingPlaces;

mod routing;

/// The configuration file read when `--config` is not given, if it exists.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "toolgate.toml";

/// The `[agent]` table: the agent `toolgate chat` speaks as, created from it
/// on first use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AgentSettings {
    /// Its id (default `default`).
    pub(crate) id: Option<String>,
    /// Its name.
    pub(crate) name: Option<String>,
    /// Its system prompt.
    pub(crate) system_prompt: Option<String>,
    /// Other prompts, by type.
    pub(crate) prompts: BTreeMap<String, String>,
    /// The groups and tools it may use; empty: all of them.
    pub(crate) tools: Vec<String>,
}

/// Every section of the configuration, checked, with the file it came from.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// The file, when there is one.
    pub(crate) file: Option<SettingsFile>,
    /// `[[upstream]]`: the MCP servers.
    pub(crate) upstreams: Vec<UpstreamConfig>,
    /// `[groups]`, `[aliases]`, `[web]` and `[tools]`.
    pub(crate) tools: ToolSettings,
    /// `[tools] loaded_schemas`: where a loaded group's schemas go, for
    /// `toolgate chat` and `toolgate serve`.
    pub(crate) loaded_schemas: LoadedSchemas,
    /// `[routing]`: checked but for the groups it names, which
    /// [`Settings::routing_taxonomy`] checks against the catalog.
    pub(crate) routing: RoutingConfig,
    /// Where `[routing]`'s parts sit in the file, for its errors.
    routing_places: RoutingPlaces,
    /// `[model]`.
    pub(crate) model: ModelSettings,
    /// `[agent]`.
    pub(crate) agent: AgentSettings,
    /// `[store]`.
    pub(crate) store: StoreSettings,
    /// `[clients.<name>]`: who may use the HTTP gateway, each with a token.
    pub(crate) clients: Clients,
    /// `[audit]`.
    pub(crate) audit: AuditSettings,
    /// `[rate_limits]` and each client's `rate_limit`.
    pub(crate) rate_limits: RateLimitSettings,
    /// Each client's allow and deny lists, for those that have any.
    pub(crate) policies: HashMap<ClientName, ToolPolicy>,
    /// `[auth.oauth]`: bearer JWTs from an identity provider.
    pub(crate) oauth: Option<OAuthSettings>,
    /// `[telemetry]`: where spans go.
    pub(crate) telemetry: TelemetrySettings,
}

/// `[store]`: where conversations live when `--store` does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreSettings {
    /// A PostgreSQL URI (`postgres://...`) or a SQLite file's path.
    #[serde(default)]
    pub(crate) url: Option<String>,
    /// A file holding the PostgreSQL password (relative to the
    /// configuration file), when the URI has none; else `PGPASSWORD`.
    #[serde(default)]
    pub(crate) password_file: Option<PathBuf>,
    /// PostgreSQL connections per process, at most (default 16).
    #[serde(default)]
    pub(crate) pool_size: Option<usize>,
}

/// A configuration file as read.
#[derive(Debug)]
pub(crate) struct SettingsFile {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its text.
    pub(crate) text: String,
    /// Where the `[agent] tools` array sits in the text, for `toolgate
    /// migrate` to rewrite it in place.
    pub(crate) agent_tools: Option<Range<usize>>,
}

/// A configuration that does not check: the file, the line (when one is at
/// fault), the table or key, and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SettingsError {
    path: PathBuf,
    line: Option<usize>,
    place: Option<String>,
    reason: String,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(place) = &self.place {
            write!(f, ": {place}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The configuration in use: `given`, else `./toolgate.toml` when it
    /// exists; the defaults when there is neither.
    pub(crate) fn load(given: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = config_file(given) else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|error| anyhow::anyhow!("reading {}: {error}", path.display()))?;
        Ok(Self::parse(text, path)?)
    }

    /// Parses and checks a configuration; `path` names it in errors.
    pub(crate) fn parse(text: String, path: PathBuf) -> Result<Self, SettingsError> {
        let at = |span: Range<usize>, place: String, reason: String| SettingsError {
            line: Some(line_of(&text, span.start)),
            path: path.clone(),
            place: Some(place),
            reason,
        };
        let raw: RawSettings = toml::from_str(&text).map_err(|error| SettingsError {
            path: path.clone(),
            line: None,
            place: None,
            reason: error.to_string().trim_end().to_owned(),
        })?;
        let routing_table = raw.routing.as_ref().map(Spanned::span);
        let routing = raw.routing.map(Spanned::into_inner).unwrap_or_default();
        let routing_places = RoutingPlaces::find(&text, routing_table);
        routing::check_alone(&routing)
            .map_err(|error| routing_error(&path, &text, &routing_places, &error))?;
        let mut upstreams = Vec::new();
        let mut lines = Vec::new();
        for (index, entry) in raw.upstream.into_iter().enumerate() {
            let span = entry.span();
            let entry = entry.into_inner();
            let place = match entry.name() {
                Some(name) => format!("upstream '{name}'"),
                None => format!("[[upstream]] number {}", index + 1),
            };
            let upstream = entry
                .into_config(None)
                .map_err(|error| at(span.clone(), place, error.to_string()))?;
            upstreams.push(upstream);
            lines.push(span);
        }
        if let Some(twice) = first_duplicate(&upstreams) {
            let last = upstreams
                .iter()
                .rposition(|u| &u.name == twice)
                .unwrap_or(0);
            return Err(at(
                lines[last].clone(),
                format!("upstream '{twice}'"),
                "declared twice".to_owned(),
            ));
        }
        let mut tools = ToolSettings::default();
        for (id, group) in raw.groups {
            let span = group.span();
            let settings = group
                .into_inner()
                .into_settings()
                .map_err(|error| at(span, format!("[groups.{id}]"), error.to_string()))?;
            tools.groups.insert(id, settings);
        }
        for (old, alias) in raw.aliases {
            let span = alias.span();
            let alias = alias
                .into_inner()
                .into_alias()
                .map_err(|error| at(span, format!("[aliases] `{old}`"), error.to_string()))?;
            tools.aliases.push((old, alias));
        }
        if let Some(web) = raw.web {
            let span = web.span();
            tools.web = web
                .into_inner()
                .into_config()
                .map_err(|error| at(span, "[web]".to_owned(), error.to_string()))?;
        }
        let mut loaded_schemas = LoadedSchemas::default();
        if let Some(table) = raw.tools {
            let span = table.span();
            let RawTools {
                timeout_seconds,
                javascript,
                loaded_schemas: where_to,
            } = table.into_inner();
            let table = RawToolsSettings {
                timeout_seconds,
                javascript,
            };
            (tools.call_timeout, tools.javascript) = table
                .into_config()
                .map_err(|error| at(span, "[tools]".to_owned(), error.to_string()))?;
            if let Some(where_to) = where_to {
                let span = where_to.span();
                loaded_schemas =
                    LoadedSchemas::from_setting(where_to.get_ref()).ok_or_else(|| {
                        let spellings: Vec<String> = LoadedSchemas::ALL
                            .iter()
                            .map(|value| format!("{:?}", value.as_str()))
                            .collect();
                        at(
                            span,
                            "[tools]".to_owned(),
                            format!(
                                "`loaded_schemas` is {}, not {:?}",
                                spellings.join(" or "),
                                where_to.get_ref()
                            ),
                        )
                    })?;
            }
        }
        let store = match raw.store {
            Some(store) => {
                let span = store.span();
                let mut store = store.into_inner();
                if store.pool_size == Some(0) {
                    return Err(at(
                        span,
                        "[store]".to_owned(),
                        "`pool_size` must be at least 1".to_owned(),
                    ));
                }
                // A password file is relative to the configuration file.
                if let (Some(file), Some(dir)) = (&store.password_file, path.parent()) {
                    store.password_file = Some(dir.join(file));
                }
                store
            }
            None => StoreSettings::default(),
        };
        let auth = raw.auth.map(|auth| {
            let span = auth.span();
            (span, auth.into_inner())
        });
        let signs_in = auth.as_ref().is_some_and(|(_, auth)| auth.oauth.is_some());
        let mut clients = Vec::new();
        let mut token_less = Vec::new();
        let mut rate_limits = RateLimitSettings::default();
        let mut policies = HashMap::new();
        let mut last_span = None;
        for (name, client) in raw.clients {
            let span = client.span();
            let place = format!("[clients.{name}]");
            let client = client.into_inner();
            let (name, hash) = ClientName::new(&name)
                .and_then(|name| {
                    let hash = client.token_sha256.as_deref().map(TokenHash::from_hex);
                    Ok((name, hash.transpose()?))
                })
                .map_err(|error| at(span.clone(), place.clone(), error.to_string()))?;
            if hash.is_none() && !signs_in {
                return Err(at(
                    span,
                    place,
                    format!(
                        "has no `token_sha256`: give the client a token (`toolgate token create \
                         {name}`), or let clients sign in with OAuth ([auth.oauth])"
                    ),
                ));
            }
            let policy = client.policy();
            if !policy.is_unrestricted() {
                policies.insert(name.clone(), policy);
            }
            if let Some(limit) = client.rate_limit {
                let limit = limit
                    .check()
                    .map_err(|reason| at(span.clone(), format!("{place} rate_limit"), reason))?;
                rate_limits.clients.insert(name.clone(), limit);
            }
            match hash {
                Some(hash) => clients.push((name, hash)),
                None => token_less.push(name),
            }
            last_span = Some(span);
        }
        if let Some(table) = raw.rate_limits {
            let span = table.span();
            let table = table.into_inner();
            if let Some(limit) = table.client {
                rate_limits.per_client = Some(limit.check().map_err(|reason| {
                    at(span.clone(), "[rate_limits] client".to_owned(), reason)
                })?);
            }
            for (tool, limit) in table.tools {
                let limit = limit.check().map_err(|reason| {
                    at(span.clone(), format!("[rate_limits.tools] {tool}"), reason)
                })?;
                rate_limits.tools.insert(tool, limit);
            }
        }
        let clients = Clients::new(clients)
            .map_err(|error| {
                at(
                    last_span.clone().unwrap_or_default(),
                    "[clients]".to_owned(),
                    error.to_string(),
                )
            })?
            .with_token_less(token_less);
        let oauth = match auth.and_then(|(span, auth)| Some((span, auth.oauth?))) {
            Some((span, oauth)) => {
                let oauth = oauth.into_settings().map_err(|error| {
                    at(span.clone(), "[auth.oauth]".to_owned(), error.to_string())
                })?;
                oauth.check(&clients).map_err(|error| match error {
                    OAuthError::Setting(key, reason) => {
                        at(span.clone(), format!("[auth.oauth] {key}"), reason)
                    }
                    other @ OAuthError::Issuer(_) => {
                        at(span.clone(), "[auth.oauth]".to_owned(), other.to_string())
                    }
                })?;
                Some(oauth)
            }
            None => None,
        };
        let (agent, agent_tools) = match raw.agent {
            Some(agent) => agent.into_settings(),
            None => (AgentSettings::default(), None),
        };
        Ok(Self {
            upstreams,
            tools,
            loaded_schemas,
            routing,
            routing_places,
            model: raw.model.unwrap_or_default(),
            agent,
            store,
            clients,
            rate_limits,
            policies,
            oauth,
            telemetry: raw.telemetry.unwrap_or_default(),
            audit: raw.audit.map_or_else(AuditSettings::default, |mut audit| {
                // A relative path is relative to the configuration file.
                if let (Some(file), Some(dir)) = (&audit.path, path.parent())
                    && file.is_relative()
                {
                    audit.path = Some(dir.join(file));
                }
                audit
            }),
            file: Some(SettingsFile {
                path,
                text,
                agent_tools,
            }),
        })
    }

    /// `[routing]` checked against `catalog`: every group it names must be
    /// one. The error names the file and the line, like those of
    /// [`Settings::parse`].
    pub(crate) fn routing_taxonomy(&self, catalog: &Catalog) -> anyhow::Result<Taxonomy> {
        self.routing
            .validate(catalog)
            .map_err(|error| self.routing_error(&error))
    }

    /// `error` (about `[routing]`) with the file and line it is about.
    pub(crate) fn routing_error(&self, error: &RoutingError) -> anyhow::Error {
        match &self.file {
            Some(file) => routing_error(&file.path, &file.text, &self.routing_places, error).into(),
            None => anyhow::anyhow!("{error}"),
        }
    }

    /// The configuration file's path, when there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|file| file.path.as_path())
    }

    /// `path` as written in the configuration: relative to the file.
    pub(crate) fn relative_to_file(&self, path: &Path) -> PathBuf {
        match self.path().and_then(Path::parent) {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }
}

/// The configuration file in use: `given`, else `./toolgate.toml` when it
/// exists.
pub(crate) fn config_file(given: Option<&Path>) -> Option<PathBuf> {
    match given {
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from(DEFAULT_CONFIG_FILE)).filter(|p| p.is_file()),
    }
}

/// The file as written: each section in its owner's raw form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    #[serde(default)]
    upstream: Vec<Spanned<RawUpstream>>,
    #[serde(default)]
    model: Option<ModelSettings>,
    #[serde(default)]
    routing: Option<Spanned<RoutingConfig>>,
    #[serde(default)]
    web: Option<Spanned<RawWebSettings>>,
    #[serde(default)]
    tools: Option<Spanned<RawTools>>,
    #[serde(default)]
    groups: BTreeMap<String, Spanned<RawGroupSettings>>,
    #[serde(default)]
    aliases: BTreeMap<String, Spanned<RawAlias>>,
    #[serde(default)]
    agent: Option<RawAgent>,
    #[serde(default)]
    store: Option<Spanned<StoreSettings>>,
    #[serde(default)]
    clients: BTreeMap<String, Spanned<RawClient>>,
    #[serde(default)]
    audit: Option<AuditSettings>,
    #[serde(default)]
    rate_limits: Option<Spanned<RawRateLimits>>,
    #[serde(default)]
    auth: Option<Spanned<RawAuth>>,
    #[serde(default)]
    telemetry: Option<TelemetrySettings>,
}

/// `[tools]` as written: toolgate-tools' keys ([`RawToolsSettings`]) and
/// `loaded_schemas`, which is the agent's and the gateway's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTools {
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    javascript: Option<RawJavaScriptSettings>,
    #[serde(default)]
    loaded_schemas: Option<Spanned<String>>,
}

/// `[auth]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    #[serde(default)]
    oauth: Option<RawOAuth>,
}

/// `[auth.oauth]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    issuer: String,
    audience: String,
    #[serde(default)]
    jwks_url: Option<String>,
    #[serde(default)]
    client_claim: Option<String>,
    /// Claim values mapped to client names.
    #[serde(default)]
    clients: BTreeMap<String, String>,
    #[serde(default)]
    default_client: Option<String>,
    #[serde(default)]
    required_scopes: Vec<String>,
}

impl RawOAuth {
    fn into_settings(self) -> Result<OAuthSettings, toolgate_mcp::ClientError> {
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

/// `[audit]`: the log of every tool call `toolgate serve` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditSettings {
    /// The file lines are appended to (relative to the configuration file).
    #[serde(default)]
    pub(crate) path: Option<PathBuf>,
    /// Record arguments in clear rather than as their SHA-256.
    #[serde(default)]
    pub(crate) arguments: bool,
}

/// A `[clients.<name>]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    /// The SHA-256 of the client's token, as `toolgate token create` prints
    /// it; without one, the client comes in only through OAuth.
    #[serde(default)]
    token_sha256: Option<String>,
    /// The client's own limit instead of `[rate_limits] client`.
    #[serde(default)]
    rate_limit: Option<RawRateLimit>,
    /// When set, the only groups the client sees.
    #[serde(default)]
    allow_groups: Option<Vec<String>>,
    /// Groups the client never sees.
    #[serde(default)]
    deny_groups: Vec<String>,
    /// When set, the only tools the client sees.
    #[serde(default)]
    allow_tools: Option<Vec<String>>,
    /// Tools the client never sees.
    #[serde(default)]
    deny_tools: Vec<String>,
    /// Per polymorphic tool, the only actions the client may call.
    #[serde(default)]
    allow_actions: BTreeMap<String, Vec<String>>,
    /// Per polymorphic tool, actions the client may not call.
    #[serde(default)]
    deny_actions: BTreeMap<String, Vec<String>>,
}

impl RawClient {
    /// The client's policy.
    fn policy(&self) -> ToolPolicy {
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
struct RawRateLimit {
    calls: u32,
    per_seconds: f64,
}

impl RawRateLimit {
    fn check(self) -> Result<RateLimit, String> {
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
struct RawRateLimits {
    /// Every caller's tool calls, each caller separately.
    #[serde(default)]
    client: Option<RawRateLimit>,
    /// Calls of one tool, each caller separately.
    #[serde(default)]
    tools: BTreeMap<String, RawRateLimit>,
}

/// The `[agent]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    prompts: BTreeMap<String, String>,
    #[serde(default)]
    tools: Option<Spanned<Vec<String>>>,
}

impl RawAgent {
    /// The settings, and where the tools array sits.
    fn into_settings(self) -> (AgentSettings, Option<Range<usize>>) {
        let Self {
            id,
            name,
            system_prompt,
            prompts,
            tools,
        } = self;
        let span = tools.as_ref().map(Spanned::span);
        let settings = AgentSettings {
            id,
            name,
            system_prompt,
            prompts,
            tools: tools.map(Spanned::into_inner).unwrap_or_default(),
        };
        (settings, span)
    }
}

/// A `[routing]` error of the file at `path`, at the line of the key (or
/// intent, or table) it is about.
fn routing_error(
    path: &Path,
    text: &str,
    places: &RoutingPlaces,
    error: &RoutingError,
) -> SettingsError {
    SettingsError {
        path: path.to_path_buf(),
        line: places.of(error).map(|span| line_of(text, span.start)),
        place: None,
        reason: error.to_string(),
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|byte| **byte == b'\n')
        .count()
        + 1
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "settings_fuzz_tests.rs"]
mod fuzz_tests;
