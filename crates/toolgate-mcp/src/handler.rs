//! The rmcp [`ServerHandler`]: MCP requests in, [`Gateway`] calls out.

#![allow(
    deprecated,
    reason = "logging and resources/subscribe are deprecated in MCP 2026-07-28 but served for 2025-11-25 clients"
)]

use std::sync::Arc;

use opentelemetry::context::FutureExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use toolgate_core::{GATEWAY_INSTRUCTIONS, GATEWAY_INSTRUCTIONS_WHOLE, Mode, tool_groups_section};
use toolgate_store::{ConversationId, ConversationStore};

use crate::bounded::bounded;
use crate::clients::{Owner, RequestEdge};
use crate::gateway::Gateway;
use crate::rate_limit::{RATE_LIMITED_CODE, RateLimited};
use crate::scope::RequestScope;
use crate::telemetry::{self, Traced, Transport};

/// The HTTP header carrying the MCP session id.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// Where a request's session and caller come from.
#[derive(Clone, Debug)]
pub enum SessionSource {
    /// One session for the whole connection (stdio), whose caller is the
    /// operator that started the gateway.
    Fixed(ConversationId),
    /// What the HTTP listener established for each request (its client,
    /// from the token, and its `Mcp-Session-Id`, the session's owner
    /// checked): a request without it is refused; one without a session id
    /// is stateless.
    Header,
}

/// Serves one MCP connection (stdio) or every HTTP session.
#[derive(Debug)]
pub struct GatewayHandler<S> {
    gateway: Arc<Gateway<S>>,
    session: SessionSource,
}

impl<S> Clone for GatewayHandler<S> {
    fn clone(&self) -> Self {
        Self {
            gateway: Arc::clone(&self.gateway),
            session: self.session.clone(),
        }
    }
}

/// The answer to a request whose edge said nothing of who sent it: refused,
/// never served as anyone.
fn no_caller() -> McpError {
    McpError::internal_error(
        "the request reached the gateway without its caller; it is refused",
        None,
    )
}

impl<S: ConversationStore + 'static> GatewayHandler<S> {
    /// A handler whose sessions come from `session`.
    pub fn new(gateway: Arc<Gateway<S>>, session: SessionSource) -> Self {
        Self { gateway, session }
    }

    /// The scope of the request `context` answers, built once: its session
    /// and its caller (on stdio, the operator; on HTTP, what the listener
    /// established, without which the request is refused), with what that
    /// caller may use, its cancellation and its connection.
    async fn scope(&self, context: &RequestContext<RoleServer>) -> Result<RequestScope, McpError> {
        let (session, owner) = match &self.session {
            SessionSource::Fixed(id) => (Some(id.clone()), Owner::default()),
            SessionSource::Header => {
                let edge = request_edge(context).ok_or_else(no_caller)?;
                (edge.session.clone(), edge.owner.clone())
            }
        };
        Ok(self
            .gateway
            .scope(session, owner)
            .await
            .with_cancel(context.ct.clone())
            .with_peer(context.peer.clone(), context.meta.get_progress_token()))
    }

    /// A server span for a request of `method` about `target`, while spans
    /// are on.
    fn span(
        &self,
        method: &'static str,
        target: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Traced> {
        if !telemetry::enabled() {
            return None;
        }
        let (session, transport) = match &self.session {
            SessionSource::Fixed(_) => (None, Transport::Pipe),
            SessionSource::Header => (
                request_edge(context).and_then(|edge| edge.session.clone()),
                Transport::Tcp,
            ),
        };
        telemetry::request_span(telemetry::Request {
            method,
            target,
            meta: &context.meta.0.0,
            request_id: context.id.to_string(),
            session: session.as_ref().map(ConversationId::as_str),
            transport,
        })
    }
}

/// JSON-RPC's answer to a call beyond a rate limit: a server error (-32000)
/// with when to retry, in seconds, in its data.
fn rate_limited(limited: RateLimited) -> McpError {
    McpError::new(
        ErrorCode(RATE_LIMITED_CODE),
        limited.to_string(),
        Some(serde_json::json!({
            "retry_after_seconds": (limited.retry_after.as_secs_f64() * 10.0).ceil() / 10.0,
            "limit": {
                "calls": limited.limit.calls,
                "per_seconds": limited.limit.per.as_secs_f64(),
            },
        })),
    )
}

/// `work` in `span`, which ends with the JSON-RPC error code of a failure.
async fn traced<T>(
    span: Option<Traced>,
    work: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    let Some(span) = span else {
        return work.await;
    };
    let result = work.with_context(span.context()).await;
    span.end(
        result
            .as_ref()
            .err()
            .map(|error| error.code.0.to_string().into()),
    );
    result
}

/// What the HTTP listener established of the request `context` answers:
/// its client and user, and its session; `None` on stdio, or when the
/// request did not come through the listener.
fn request_edge(context: &RequestContext<RoleServer>) -> Option<&RequestEdge> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<RequestEdge>())
}

impl<S: ConversationStore + 'static> ServerHandler for GatewayHandler<S> {
    /// What the gateway is, for any caller: the instructions name no group
    /// (`initialize` adds those its caller sees).
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            // Besides tools, whatever running upstreams offer is passed
            // through, so every capability is declared; an empty list is a
            // valid answer when no upstream has any.
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
        .with_instructions(match self.gateway.delivery().mode {
            Mode::Whole => GATEWAY_INSTRUCTIONS_WHOLE,
            Mode::Deferred => GATEWAY_INSTRUCTIONS,
        })
    }

    /// The handshake: the instructions list the groups this caller sees.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let scope = self.scope(&context).await?;
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if self.gateway.delivery().mode == Mode::Whole {
            result.instructions = Some(GATEWAY_INSTRUCTIONS_WHOLE.to_owned());
        } else if let Some(groups) = self.gateway.with_view(&scope, tool_groups_section) {
            result.instructions = Some(format!("{GATEWAY_INSTRUCTIONS}\n\n{groups}"));
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let scope = self.scope(&context).await?;
        if let Some(session) = scope.held(self.gateway.sessions()).await {
            session.remember_peer(&context.peer);
        }
        let span = self.span("tools/list", None, &context);
        traced(span, async {
            Ok(ListToolsResult::with_all_items(
                self.gateway.list_tools(&scope).await,
            ))
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let scope = self.scope(&context).await?;
        if let Some(session) = scope.held(self.gateway.sessions()).await {
            session.remember_peer(&context.peer);
        }
        let call = self
            .gateway
            .call_tool(&scope, &request.name, request.arguments);
        let Some(span) = self.span("tools/call", Some(&request.name), &context) else {
            return Ok(call.await.map_err(rate_limited)?.into());
        };
        let result = call.with_context(span.context()).await;
        span.end(match &result {
            Ok(result) if result.is_error == Some(true) => Some("tool_error".into()),
            Ok(_) => None,
            Err(_) => Some(RATE_LIMITED_CODE.to_string().into()),
        });
        Ok(result.map_err(rate_limited)?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("resources/list", None, &context);
        traced(span, async {
            Ok(ListResourcesResult::with_all_items(
                self.gateway.list_resources(&scope).await,
            ))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("resources/templates/list", None, &context);
        traced(span, async {
            Ok(ListResourceTemplatesResult::with_all_items(
                self.gateway.list_resource_templates(&scope).await,
            ))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("resources/read", Some(&request.uri), &context);
        traced(span, self.gateway.read_resource(&scope, request)).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("resources/subscribe", Some(&request.uri), &context);
        traced(span, self.gateway.subscribe(&scope, request)).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("resources/unsubscribe", Some(&request.uri), &context);
        traced(span, self.gateway.unsubscribe(&scope, request)).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("prompts/list", None, &context);
        traced(span, async {
            Ok(ListPromptsResult::with_all_items(
                self.gateway.list_prompts(&scope).await,
            ))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("prompts/get", Some(&request.name), &context);
        traced(span, self.gateway.get_prompt(&scope, request)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("completion/complete", None, &context);
        traced(span, self.gateway.complete(&scope, request)).await
    }

    /// A request rmcp could not read as any MCP request: a standard method
    /// whose params do not fit is -32602 (invalid params), naming what is
    /// wrong; anything else -32601 (method not found).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(custom_request_error(&request.method, request.params))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let scope = self.scope(&context).await?;
        let span = self.span("logging/setLevel", None, &context);
        traced(span, self.gateway.set_level(&scope, request)).await
    }
}

/// Methods of MCP that a client sends a server.
const MCP_METHODS: [&str; 13] = [
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
];

/// The longest method name echoed back in an error, in bytes.
const MAX_ECHOED_METHOD: usize = 64;

fn custom_request_error(method: &str, params: Option<serde_json::Value>) -> McpError {
    if !MCP_METHODS.contains(&method) {
        let shown = bounded(method, MAX_ECHOED_METHOD);
        return McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: '{shown}'"),
            None,
        );
    }
    let params = params.unwrap_or(serde_json::Value::Null);
    let reason = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "prompts/get" => serde_json::from_value::<GetPromptRequestParams>(params).err(),
        "resources/read" => serde_json::from_value::<ReadResourceRequestParams>(params).err(),
        _ => None,
    };
    let message = match reason {
        Some(reason) => format!("Invalid params for {method}: {reason}"),
        None => format!("Invalid params for {method}"),
    };
    McpError::invalid_params(message, None)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bad_params_of_a_known_method_are_invalid_params_naming_the_field() {
        let error = custom_request_error("tools/call", Some(json!({"name": 5})));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with("Invalid params for tools/call: "),
            "{}",
            error.message
        );
        let missing = custom_request_error("tools/call", None);
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        let unknown = custom_request_error(&"x".repeat(100_000), None);
        assert_eq!(unknown.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(unknown.message.len() < 100, "{}", unknown.message);
    }
}
