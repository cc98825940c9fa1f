//! Who may reach the gateway and what each client may use, as `toolgate
//! serve` sets it up at the start and checks it again at each reload of the
//! configuration: a listener reachable from other machines needs tokens, the
//! OAuth resource server, and the clients' policies and rate limits checked
//! against the catalog.

use std::collections::HashMap;

use anyhow::bail;
use toolgate_core::{GroupId, ToolPolicy};
use toolgate_mcp::{ClientName, Gateway, OAuth, OAuthSettings, RateLimitSettings};
use toolgate_store::ConversationStore;

/// The environment variable holding the HTTP bearer token.
pub(super) const TOKEN_VARIABLE: &str = "TOOLGATE_TOKEN";

/// Why a listener reachable from other machines may not go without tokens.
pub(super) fn open_to_other_machines(listen: std::net::SocketAddr) -> String {
    format!(
        "--listen {listen} is reachable from other machines: set {TOKEN_VARIABLE} or --token-file, \
         give each client a token ([clients.<name>], `toolgate token create <name>`), or sign \
         clients in with OAuth ([auth.oauth]), so only clients with a token get in"
    )
}

/// The OAuth resource server, its keys fetched when the issuer answers (a
/// gateway started while the issuer is away fetches them on the first
/// token); a line of the banner says which.
pub(super) async fn start_oauth(
    settings: OAuthSettings,
    banner: &mut String,
) -> anyhow::Result<OAuth> {
    let oauth = OAuth::new(settings)?;
    let issuer = &oauth.settings().issuer;
    match oauth.prefetch().await {
        Ok(keys) => banner.push_str(&format!(
            "  OAuth:     tokens from {issuer} ({keys} signing key(s)); metadata at {}\n",
            oauth.metadata_url()
        )),
        Err(error) => banner.push_str(&format!(
            "  OAuth:     tokens from {issuer}; its keys are not fetched yet ({error}); tried \
             again on the first token\n"
        )),
    }
    Ok(oauth)
}

/// Checks each client's policy against the catalog: a group no group
/// holds is an error naming the client and the rule; a tool or a
/// polymorphic tool no tool holds is a warning (an upstream started on first
/// load lists its tools only then).
pub(super) fn check_policies<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    policies: &HashMap<ClientName, ToolPolicy>,
) -> anyhow::Result<String> {
    check_policies_against(gateway, policies, None)
}

/// [`check_policies`] against the groups there will be once the gateway's
/// upstreams are `upstreams` (when given): groups of upstreams about to go
/// are not groups, those of upstreams about to come are.
pub(super) fn check_policies_against<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    policies: &HashMap<ClientName, ToolPolicy>,
    upstreams: Option<&[GroupId]>,
) -> anyhow::Result<String> {
    let mut clients: Vec<(&ClientName, &ToolPolicy)> = policies.iter().collect();
    clients.sort_by(|a, b| a.0.cmp(b.0));
    let running = gateway.upstream_names();
    gateway.with_catalog(|catalog| {
        let mut known: Vec<&str> = catalog.groups().map(|g| g.id.as_str()).collect();
        if let Some(upstreams) = upstreams {
            known.retain(|group| {
                !running.iter().any(|r| r.as_str() == *group)
                    || upstreams.iter().any(|u| u.as_str() == *group)
            });
            for upstream in upstreams {
                if !known.contains(&upstream.as_str()) {
                    known.push(upstream.as_str());
                }
            }
        }
        let mut warnings = String::new();
        for (client, policy) in clients {
            if let Some((rule, unknown)) =
                policy.group_names().find(|(_, name)| !known.contains(name))
            {
                bail!(
                    "[clients.{client}] {rule} names '{unknown}', which is not a group \
                     (groups: {})",
                    known.join(", ")
                );
            }
            // A polymorphic tool's former tool names (aliases of its
            // actions) are names a policy may use for those actions.
            let holds = |rule: &str, name: &str| {
                catalog.tool(name).is_some()
                    || (rule != "allow_actions/deny_actions"
                        && catalog
                            .alias(name)
                            .is_some_and(|alias| alias.action.is_some()))
            };
            for (rule, name) in policy
                .tool_names()
                .filter(|(rule, name)| !holds(rule, name))
            {
                warnings.push_str(&no_tool_holds(&format!("[clients.{client}] {rule}"), name));
            }
        }
        Ok(warnings)
    })
}

/// The warning for a tool name in the configuration that no tool holds.
fn no_tool_holds(rule: &str, name: &str) -> String {
    format!(
        "warning: {rule} names '{name}', which no tool holds now (a polymorphic group's tool \
         is named after the group; an upstream that starts on first load lists its tools then)\n"
    )
}

/// A warning for each `[rate_limits.tools]` name no tool holds: such a
/// limit counts nothing. An upstream started on first load lists its tools
/// only then, so its names may come later.
pub(super) fn unknown_limited_tools<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    limits: &RateLimitSettings,
) -> String {
    let mut warnings: Vec<String> = gateway.with_catalog(|catalog| {
        limits
            .tools
            .keys()
            .filter(|tool| catalog.tool(tool).is_none())
            .map(|tool| match catalog.alias(tool) {
                Some(alias) => format!(
                    "warning: [rate_limits.tools] names '{tool}', an old name of '{}': calls \
                     are counted under the tool's own name, so this limit counts nothing; \
                     write '{}'\n",
                    alias.tool, alias.tool
                ),
                None => no_tool_holds("[rate_limits.tools]", tool),
            })
            .collect()
    });
    warnings.sort_unstable();
    warnings.concat()
}
