//! [`Settings::parse`]: `toolgate.toml` read into its raw sections, each
//! checked into its owner's type in the file's order of concerns
//! (`[routing]`, upstreams, tools, store, clients and rate limits, OAuth,
//! agent, audit). The first section that does not check is the error, with
//! the file, the line and the table or key at fault.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toolgate_core::{DEFAULT_DEFER_SHARE, Deferral, LoadBudget, LoadedSchemas, ToolPolicy};
use toolgate_llm::MIN_CONTEXT_WINDOW;
use toolgate_mcp::config::{RawUpstream, UpstreamConfig, first_duplicate};
use toolgate_mcp::{ClientName, Clients, OAuthError, OAuthSettings, RateLimitSettings, TokenHash};
use toolgate_tools::{RawAlias, RawGroupSettings, RawToolsSettings, RawWebSettings, ToolSettings};

use super::raw::{RawAuth, RawClient, RawRateLimits, RawSettings, RawTools};
use super::routing::{self, RoutingPlaces};
use super::{
    AgentSettings, AuditSettings, Settings, SettingsError, SettingsFile, StoreSettings, line_of,
    routing_error,
};

impl Settings {
    /// Parses and checks a configuration; `path` names it in errors.
    pub(crate) fn parse(text: String, path: PathBuf) -> Result<Self, SettingsError> {
        let raw: RawSettings = toml::from_str(&text).map_err(|error| SettingsError {
            path: path.clone(),
            line: None,
            place: None,
            reason: error.to_string().trim_end().to_owned(),
        })?;
        let RawSettings {
            upstream,
            model,
            routing,
            web,
            tools,
            groups,
            aliases,
            agent,
            store,
            clients,
            audit,
            rate_limits,
            auth,
            telemetry,
        } = raw;
        let file = Reader {
            path: &path,
            text: &text,
        };
        let routing_table = routing.as_ref().map(Spanned::span);
        let routing = routing.map(Spanned::into_inner).unwrap_or_default();
        let routing_places = RoutingPlaces::find(&text, routing_table);
        routing::check_alone(&routing)
            .map_err(|error| routing_error(&path, &text, &routing_places, &error))?;
        let upstreams = file.upstreams(upstream)?;
        let mut tool_settings = file.tool_settings(groups, aliases, web)?;
        let load_budget = file.load_budget(tools.as_ref())?;
        let (deferral, context_window) = file.deferral(tools.as_ref())?;
        let loaded_schemas = file.tools_table(tools, &mut tool_settings)?;
        let store = file.store(store)?;
        let auth = auth.map(|auth| {
            let span = auth.span();
            (span, auth.into_inner())
        });
        let signs_in = auth.as_ref().is_some_and(|(_, auth)| auth.oauth.is_some());
        let mut tables = file.clients(clients, signs_in)?;
        if let Some(table) = rate_limits {
            file.rate_limits(table, &mut tables.rate_limits)?;
        }
        let (clients, rate_limits, policies) = file.checked_clients(tables)?;
        let oauth = file.oauth(auth, &clients)?;
        let (agent, agent_tools) = match agent {
            Some(agent) => agent
                .into_settings()
                .map_err(|(span, reason)| file.at(span, "[agent]".to_owned(), reason))?,
            None => (AgentSettings::default(), None),
        };
        Ok(Self {
            upstreams,
            tools: tool_settings,
            loaded_schemas,
            load_budget,
            deferral,
            context_window,
            routing,
            routing_places,
            model: model.unwrap_or_default(),
            agent,
            store,
            clients,
            rate_limits,
            policies,
            oauth,
            telemetry: telemetry.unwrap_or_default(),
            audit: audit.map_or_else(AuditSettings::default, |audit| {
                relative_to_file(audit, &path)
            }),
            file: Some(SettingsFile {
                path,
                text,
                agent_tools,
            }),
        })
    }
}

/// `[audit]` with a relative path made relative to the configuration file
/// at `path`.
fn relative_to_file(mut audit: AuditSettings, path: &Path) -> AuditSettings {
    if let (Some(file), Some(dir)) = (&audit.path, path.parent())
        && file.is_relative()
    {
        audit.path = Some(dir.join(file));
    }
    audit
}

/// The `[clients.<name>]` tables read, before the clients are checked
/// together.
struct ClientTables {
    /// The clients with a token, and its hash.
    tokens: Vec<(ClientName, TokenHash)>,
    /// The clients without one, who come in only through OAuth.
    token_less: Vec<ClientName>,
    /// Each client's allow and deny lists, for those that have any.
    policies: HashMap<ClientName, ToolPolicy>,
    /// The clients' own rate limits, then `[rate_limits]`'s.
    rate_limits: RateLimitSettings,
    /// Where the last table sits: an error about them all points there.
    last_span: Option<Range<usize>>,
}

/// The configuration file being read: its errors name it and the line of
/// the table or key at fault.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    /// The error at `span`, about `place`.
    fn at(&self, span: Range<usize>, place: String, reason: String) -> SettingsError {
        SettingsError {
            line: Some(line_of(self.text, span.start)),
            path: self.path.to_path_buf(),
            place: Some(place),
            reason,
        }
    }

    /// `[[upstream]]`: each checked, and no name twice.
    fn upstreams(
        &self,
        raw: Vec<Spanned<RawUpstream>>,
    ) -> Result<Vec<UpstreamConfig>, SettingsError> {
        let mut upstreams = Vec::new();
        let mut lines = Vec::new();
        for (index, entry) in raw.into_iter().enumerate() {
            let span = entry.span();
            let entry = entry.into_inner();
            let place = match entry.name() {
                Some(name) => format!("upstream '{name}'"),
                None => format!("[[upstream]] number {}", index + 1),
            };
            let mut upstream = entry
                .into_config(None)
                .map_err(|error| self.at(span.clone(), place, error.to_string()))?;
            super::start_in_dir_of(self.path, &mut upstream);
            upstreams.push(upstream);
            lines.push(span);
        }
        if let Some(twice) = first_duplicate(&upstreams) {
            let last = upstreams
                .iter()
                .rposition(|u| &u.name == twice)
                .unwrap_or(0);
            return Err(self.at(
                lines[last].clone(),
                format!("upstream '{twice}'"),
                "declared twice".to_owned(),
            ));
        }
        Ok(upstreams)
    }

    /// `[groups]`, `[aliases]` and `[web]`.
    fn tool_settings(
        &self,
        groups: BTreeMap<String, Spanned<RawGroupSettings>>,
        aliases: BTreeMap<String, Spanned<RawAlias>>,
        web: Option<Spanned<RawWebSettings>>,
    ) -> Result<ToolSettings, SettingsError> {
        let mut tools = ToolSettings::default();
        for (id, group) in groups {
            let span = group.span();
            let settings = group
                .into_inner()
                .into_settings()
                .map_err(|error| self.at(span, format!("[groups.{id}]"), error.to_string()))?;
            tools.groups.insert(id, settings);
        }
        for (old, alias) in aliases {
            let span = alias.span();
            let alias = alias
                .into_inner()
                .into_alias()
                .map_err(|error| self.at(span, format!("[aliases] `{old}`"), error.to_string()))?;
            tools.aliases.push((old, alias));
        }
        if let Some(web) = web {
            let span = web.span();
            tools.web = web
                .into_inner()
                .into_config()
                .map_err(|error| self.at(span, "[web]".to_owned(), error.to_string()))?;
        }
        Ok(tools)
    }

    /// `[tools]`: toolgate-tools' keys into `tools`; `loaded_schemas`
    /// returned (`None` without the table or the key).
    fn tools_table(
        &self,
        table: Option<Spanned<RawTools>>,
        tools: &mut ToolSettings,
    ) -> Result<Option<LoadedSchemas>, SettingsError> {
        let Some(table) = table else {
            return Ok(None);
        };
        let span = table.span();
        let RawTools {
            timeout_seconds,
            javascript,
            loaded_schemas: where_to,
            max_loaded_tokens: _,
            defer: _,
            defer_share: _,
            context_window: _,
        } = table.into_inner();
        let table = RawToolsSettings {
            timeout_seconds,
            javascript,
        };
        (tools.call_timeout, tools.javascript) = table
            .into_config()
            .map_err(|error| self.at(span, "[tools]".to_owned(), error.to_string()))?;
        let Some(where_to) = where_to else {
            return Ok(None);
        };
        let span = where_to.span();
        let value = LoadedSchemas::from_setting(where_to.get_ref()).ok_or_else(|| {
            let spellings: Vec<String> = LoadedSchemas::ALL
                .iter()
                .map(|value| format!("{:?}", value.as_str()))
                .collect();
            self.at(
                span,
                "[tools]".to_owned(),
                format!(
                    "`loaded_schemas` is {}, not {:?}",
                    spellings.join(" or "),
                    where_to.get_ref()
                ),
            )
        })?;
        Ok(Some(value))
    }

    /// `[tools] max_loaded_tokens`: no bound without it; at least 1.
    fn load_budget(&self, table: Option<&Spanned<RawTools>>) -> Result<LoadBudget, SettingsError> {
        let Some(tokens) = table.and_then(|table| table.get_ref().max_loaded_tokens.as_ref())
        else {
            return Ok(LoadBudget::Unlimited);
        };
        match *tokens.get_ref() {
            0 => Err(self.at(
                tokens.span(),
                "[tools]".to_owned(),
                "`max_loaded_tokens` must be at least 1 (leave it out for no bound)".to_owned(),
            )),
            budget => Ok(LoadBudget::Tokens(budget)),
        }
    }

    /// `[tools] defer` (`"auto"` unless set, `"always"` or `"never"`), its
    /// `defer_share` (of the context window, in (0, 1]; for `"auto"` only),
    /// and `context_window` (what `toolgate serve` assumes; at least 1,000).
    fn deferral(
        &self,
        table: Option<&Spanned<RawTools>>,
    ) -> Result<(Deferral, Option<usize>), SettingsError> {
        let Some(table) = table.map(Spanned::get_ref) else {
            return Ok((Deferral::default(), None));
        };
        let error = |span, reason: String| self.at(span, "[tools]".to_owned(), reason);
        let share = match &table.defer_share {
            None => None,
            Some(share) => {
                let value = *share.get_ref();
                if !(value > 0.0 && value <= 1.0) {
                    return Err(error(
                        share.span(),
                        format!(
                            "`defer_share` is a share of the context window, above 0 and at most 1, not {value}"
                        ),
                    ));
                }
                Some((value, share.span()))
            }
        };
        let deferral = match table
            .defer
            .as_ref()
            .map(|defer| (defer.get_ref().as_str(), defer.span()))
        {
            None | Some(("auto", _)) => Deferral::Auto {
                share: share.map_or(DEFAULT_DEFER_SHARE, |(value, _)| value),
            },
            Some((setting @ ("always" | "never"), _)) => {
                if let Some((_, span)) = share {
                    return Err(error(
                        span,
                        format!(
                            "`defer_share` applies to `defer = \"auto\"`, not `defer = \"{setting}\"`"
                        ),
                    ));
                }
                if setting == "always" {
                    Deferral::Always
                } else {
                    Deferral::Never
                }
            }
            Some((other, span)) => {
                return Err(error(
                    span,
                    format!("`defer` is \"auto\", \"always\" or \"never\", not {other:?}"),
                ));
            }
        };
        let context_window = match &table.context_window {
            None => None,
            Some(window) if *window.get_ref() < MIN_CONTEXT_WINDOW => {
                return Err(error(
                    window.span(),
                    format!(
                        "`context_window` must be at least {MIN_CONTEXT_WINDOW} tokens, not {}",
                        window.get_ref()
                    ),
                ));
            }
            Some(window) => Some(*window.get_ref()),
        };
        Ok((deferral, context_window))
    }

    /// `[store]`, its password file relative to the configuration file.
    fn store(&self, store: Option<Spanned<StoreSettings>>) -> Result<StoreSettings, SettingsError> {
        let Some(store) = store else {
            return Ok(StoreSettings::default());
        };
        let span = store.span();
        let mut store = store.into_inner();
        if store.pool_size == Some(0) {
            return Err(self.at(
                span,
                "[store]".to_owned(),
                "`pool_size` must be at least 1".to_owned(),
            ));
        }
        // A password file is relative to the configuration file.
        if let (Some(file), Some(dir)) = (&store.password_file, self.path.parent()) {
            store.password_file = Some(dir.join(file));
        }
        Ok(store)
    }

    /// Each `[clients.<name>]`: its name, its token's hash (a client without
    /// one needs OAuth: `signs_in`), its policy and its rate limit.
    fn clients(
        &self,
        raw: BTreeMap<String, Spanned<RawClient>>,
        signs_in: bool,
    ) -> Result<ClientTables, SettingsError> {
        let mut tables = ClientTables {
            tokens: Vec::new(),
            token_less: Vec::new(),
            policies: HashMap::new(),
            rate_limits: RateLimitSettings::default(),
            last_span: None,
        };
        for (name, client) in raw {
            let span = client.span();
            let place = format!("[clients.{name}]");
            let client = client.into_inner();
            let (name, hash) = ClientName::new(&name)
                .and_then(|name| {
                    let hash = client.token_sha256.as_deref().map(TokenHash::from_hex);
                    Ok((name, hash.transpose()?))
                })
                .map_err(|error| self.at(span.clone(), place.clone(), error.to_string()))?;
            if hash.is_none() && !signs_in {
                return Err(self.at(
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
                tables.policies.insert(name.clone(), policy);
            }
            if let Some(limit) = client.rate_limit {
                let limit = limit.check().map_err(|reason| {
                    self.at(span.clone(), format!("{place} rate_limit"), reason)
                })?;
                tables.rate_limits.clients.insert(name.clone(), limit);
            }
            match hash {
                Some(hash) => tables.tokens.push((name, hash)),
                None => tables.token_less.push(name),
            }
            tables.last_span = Some(span);
        }
        Ok(tables)
    }

    /// `[rate_limits]`, into `rate_limits`.
    fn rate_limits(
        &self,
        table: Spanned<RawRateLimits>,
        rate_limits: &mut RateLimitSettings,
    ) -> Result<(), SettingsError> {
        let span = table.span();
        let table = table.into_inner();
        if let Some(limit) = table.client {
            rate_limits.per_client = Some(limit.check().map_err(|reason| {
                self.at(span.clone(), "[rate_limits] client".to_owned(), reason)
            })?);
        }
        for (tool, limit) in table.tools {
            let limit = limit.check().map_err(|reason| {
                self.at(span.clone(), format!("[rate_limits.tools] {tool}"), reason)
            })?;
            rate_limits.tools.insert(tool, limit);
        }
        Ok(())
    }

    /// The clients checked together (no token twice), with their rate
    /// limits and policies.
    fn checked_clients(
        &self,
        tables: ClientTables,
    ) -> Result<(Clients, RateLimitSettings, HashMap<ClientName, ToolPolicy>), SettingsError> {
        let ClientTables {
            tokens,
            token_less,
            policies,
            rate_limits,
            last_span,
        } = tables;
        let clients = Clients::new(tokens)
            .map_err(|error| {
                self.at(
                    last_span.unwrap_or_default(),
                    "[clients]".to_owned(),
                    error.to_string(),
                )
            })?
            .with_token_less(token_less);
        Ok((clients, rate_limits, policies))
    }

    /// `[auth.oauth]`, checked against the clients it names.
    fn oauth(
        &self,
        auth: Option<(Range<usize>, RawAuth)>,
        clients: &Clients,
    ) -> Result<Option<OAuthSettings>, SettingsError> {
        let Some((span, oauth)) = auth.and_then(|(span, auth)| Some((span, auth.oauth?))) else {
            return Ok(None);
        };
        let oauth = oauth
            .into_settings()
            .map_err(|error| self.at(span.clone(), "[auth.oauth]".to_owned(), error.to_string()))?;
        oauth.check(clients).map_err(|error| match error {
            OAuthError::Setting(key, reason) => {
                self.at(span.clone(), format!("[auth.oauth] {key}"), reason)
            }
            other @ OAuthError::Issuer(_) => {
                self.at(span.clone(), "[auth.oauth]".to_owned(), other.to_string())
            }
        })?;
        Ok(Some(oauth))
    }
}
