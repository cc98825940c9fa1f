//! Everything MCP offers besides tools, passed through from the upstreams
//! that are running: resources, resource templates and subscriptions,
//! prompts, argument completion and the logging level.
//!
//! Only running upstreams answer: listing resources never starts a server.
//! A request that names something (a URI, a prompt) goes to the upstream that
//! lists it, else to each capable upstream in configuration order until one
//! answers.
#![allow(
    deprecated,
    reason = "logging and resources/subscribe are deprecated in MCP 2026-07-28 but served for 2025-11-25 clients"
)]

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, Prompt,
    ReadResourceRequestParams, ReadResourceResponse, Reference, Resource, ResourceTemplate,
    ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::{ErrorData as McpError, Peer, RoleClient, ServiceError};
use toolgate_store::ConversationStore;

use super::Gateway;
use crate::scope::RequestScope;

/// One running upstream: its name, connection and what it can do.
struct Running {
    name: String,
    peer: Peer<RoleClient>,
    capabilities: ServerCapabilities,
}

impl<S: ConversationStore + 'static> Gateway<S> {
    /// The running upstreams this request's caller sees (its policy may
    /// leave some groups out: their resources and prompts too).
    async fn running(&self, scope: &RequestScope) -> Vec<Running> {
        let mut running = Vec::new();
        for upstream in self.upstreams() {
            let visible = self.with_view(scope, |catalog| {
                catalog.group(upstream.name().as_str()).is_some()
            });
            if !visible {
                continue;
            }
            if let Some(peer) = upstream.running_peer().await {
                let capabilities = peer
                    .peer_info()
                    .map(|info| info.capabilities.clone())
                    .unwrap_or_default();
                running.push(Running {
                    name: upstream.name().to_string(),
                    peer,
                    capabilities,
                });
            }
        }
        running
    }

    /// `resources/list` of every running upstream, in configuration order.
    pub async fn list_resources(&self, scope: &RequestScope) -> Vec<Resource> {
        let mut resources = Vec::new();
        for upstream in self.running(scope).await {
            if upstream.capabilities.resources.is_some() {
                match upstream.peer.list_all_resources().await {
                    Ok(listed) => resources.extend(listed),
                    Err(error) => log_failure(&upstream.name, "resources/list", &error),
                }
            }
        }
        resources
    }

    /// `resources/templates/list` of every running upstream.
    pub async fn list_resource_templates(&self, scope: &RequestScope) -> Vec<ResourceTemplate> {
        let mut templates = Vec::new();
        for upstream in self.running(scope).await {
            if upstream.capabilities.resources.is_some() {
                match upstream.peer.list_all_resource_templates().await {
                    Ok(listed) => templates.extend(listed),
                    Err(error) => log_failure(&upstream.name, "resources/templates/list", &error),
                }
            }
        }
        templates
    }

    /// `resources/read`, from the upstream that lists the URI, else the first
    /// that can read it (a templated URI).
    pub async fn read_resource(
        &self,
        scope: &RequestScope,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, McpError> {
        let candidates = self.with_resources(scope).await;
        let owner = find_owner(&candidates, |peer| {
            let uri = params.uri.clone();
            async move {
                peer.list_all_resources()
                    .await
                    .is_ok_and(|resources| resources.iter().any(|r| r.uri == uri))
            }
        })
        .await;
        let mut last = None;
        for upstream in owner.into_iter().chain(candidates.iter()) {
            match upstream.peer.read_resource_once(params.clone()).await {
                Ok(response) => return Ok(response),
                Err(error) => last = Some(error),
            }
        }
        Err(not_found(
            last,
            format!("no upstream has the resource '{}'", params.uri),
        ))
    }

    /// `resources/subscribe` on every upstream that can: the one owning the
    /// URI accepts, the others refuse harmlessly.
    pub async fn subscribe(
        &self,
        scope: &RequestScope,
        params: SubscribeRequestParams,
    ) -> Result<(), McpError> {
        let uri = params.uri.clone();
        self.on_subscribable(
            scope,
            &format!("no upstream can subscribe to '{uri}'"),
            |peer| {
                let params = params.clone();
                async move { peer.subscribe(params).await }
            },
        )
        .await
    }

    /// `resources/unsubscribe`, like [`subscribe`](Self::subscribe).
    pub async fn unsubscribe(
        &self,
        scope: &RequestScope,
        params: UnsubscribeRequestParams,
    ) -> Result<(), McpError> {
        let uri = params.uri.clone();
        self.on_subscribable(
            scope,
            &format!("no upstream is subscribed to '{uri}'"),
            |peer| {
                let params = params.clone();
                async move { peer.unsubscribe(params).await }
            },
        )
        .await
    }

    /// Sends a request to every running upstream that supports resource
    /// subscriptions; succeeds when one accepts.
    async fn on_subscribable<F, Fut>(
        &self,
        scope: &RequestScope,
        refused: &str,
        request: F,
    ) -> Result<(), McpError>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<(), ServiceError>>,
    {
        let mut last = None;
        let mut accepted = false;
        for upstream in self.with_resources(scope).await {
            if upstream
                .capabilities
                .resources
                .as_ref()
                .and_then(|r| r.subscribe)
                != Some(true)
            {
                continue;
            }
            match request(upstream.peer.clone()).await {
                Ok(()) => accepted = true,
                Err(error) => last = Some(error),
            }
        }
        if accepted {
            Ok(())
        } else {
            Err(not_found(last, refused.to_owned()))
        }
    }

    /// `prompts/list` of every running upstream; a name already listed by an
    /// earlier upstream is left out, so `prompts/get` is unambiguous.
    pub async fn list_prompts(&self, scope: &RequestScope) -> Vec<Prompt> {
        let mut prompts: Vec<Prompt> = Vec::new();
        for upstream in self.running(scope).await {
            if upstream.capabilities.prompts.is_some() {
                match upstream.peer.list_all_prompts().await {
                    Ok(listed) => {
                        for prompt in listed {
                            if !prompts.iter().any(|p| p.name == prompt.name) {
                                prompts.push(prompt);
                            }
                        }
                    }
                    Err(error) => log_failure(&upstream.name, "prompts/list", &error),
                }
            }
        }
        prompts
    }

    /// `prompts/get`, from the first upstream that lists the prompt.
    pub async fn get_prompt(
        &self,
        scope: &RequestScope,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, McpError> {
        let upstream = self
            .prompt_owner(scope, &params.name)
            .await
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!("no upstream has the prompt '{}'", params.name),
                    None,
                )
            })?;
        upstream
            .peer
            .get_prompt_once(params)
            .await
            .map_err(|error| mcp_error(&upstream.name, "prompts/get", error))
    }

    /// `completion/complete`, from the upstream owning the prompt or resource
    /// template the reference names.
    pub async fn complete(
        &self,
        scope: &RequestScope,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let owner = match &params.r#ref {
            Reference::Prompt(prompt) => self.prompt_owner(scope, &prompt.name).await,
            Reference::Resource(template) => {
                let candidates = self.with_resources(scope).await;
                find_owner(&candidates, |peer| {
                    let uri = template.uri.clone();
                    async move {
                        peer.list_all_resource_templates()
                            .await
                            .is_ok_and(|templates| templates.iter().any(|t| t.uri_template == uri))
                    }
                })
                .await
                .map(|owner| Running {
                    name: owner.name.clone(),
                    peer: owner.peer.clone(),
                    capabilities: owner.capabilities.clone(),
                })
            }
            // A reference kind newer than this gateway: nobody to ask.
            _ => None,
        };
        match owner {
            Some(upstream) if upstream.capabilities.completions.is_some() => upstream
                .peer
                .complete(params)
                .await
                .map_err(|error| mcp_error(&upstream.name, "completion/complete", error)),
            // Nothing to complete from: no suggestions, which is a valid answer.
            Some(_) | None => Ok(CompleteResult::default()),
        }
    }

    /// `logging/setLevel`, passed to every running upstream that logs and
    /// the caller sees.
    pub async fn set_level(
        &self,
        scope: &RequestScope,
        params: SetLevelRequestParams,
    ) -> Result<(), McpError> {
        for upstream in self.running(scope).await {
            if upstream.capabilities.logging.is_some()
                && let Err(error) = upstream.peer.set_level(params.clone()).await
            {
                log_failure(&upstream.name, "logging/setLevel", &error);
            }
        }
        Ok(())
    }

    async fn with_resources(&self, scope: &RequestScope) -> Vec<Running> {
        self.running(scope)
            .await
            .into_iter()
            .filter(|upstream| upstream.capabilities.resources.is_some())
            .collect()
    }

    async fn prompt_owner(&self, scope: &RequestScope, name: &str) -> Option<Running> {
        for upstream in self.running(scope).await {
            if upstream.capabilities.prompts.is_some()
                && upstream
                    .peer
                    .list_all_prompts()
                    .await
                    .is_ok_and(|prompts| prompts.iter().any(|p| p.name == name))
            {
                return Some(upstream);
            }
        }
        None
    }
}

async fn find_owner<F, Fut>(candidates: &[Running], lists_it: F) -> Option<&Running>
where
    F: Fn(Peer<RoleClient>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for upstream in candidates {
        if lists_it(upstream.peer.clone()).await {
            return Some(upstream);
        }
    }
    None
}

fn log_failure(upstream: &str, operation: &str, error: &ServiceError) {
    tracing::warn!(upstream, operation, %error, "upstream request failed");
}

fn mcp_error(upstream: &str, operation: &str, error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => McpError::internal_error(
            format!("MCP server '{upstream}' failed on '{operation}': {other}"),
            None,
        ),
    }
}

fn not_found(last: Option<ServiceError>, message: String) -> McpError {
    match last {
        Some(ServiceError::McpError(error)) => error,
        Some(_) | None => McpError::resource_not_found(message, None),
    }
}
