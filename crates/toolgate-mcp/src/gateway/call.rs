//! `tools/call`: the caller's rate limits, the name resolved once, then a
//! meta-tool's answer (`meta.rs`) or the catalog tool, run through the
//! toolbox if the caller may use it as it will run; each call counted,
//! audited and traced.

use std::time::Instant;

use opentelemetry::context::FutureExt as _;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use toolgate_core::{
    FailedInGateway, GatewayShuttingDown, GroupId, LoadBudget, LoadedSchemas, NameTooLong,
    NotAvailable, PolicyTarget, SessionUnreadable, ToolKind,
};
use toolgate_store::{ConversationId, ConversationStore};
use toolgate_tools::{ResolvedCall, ToolCallError};

use super::Gateway;
use crate::audit::AuditedCall;
use crate::convert::{error_result, result_from_output};
use crate::metrics::{CORE, Outcome, UNKNOWN};
use crate::rate_limit::{RATE_LIMITED_CODE, RateLimited};
use crate::scope::RequestScope;
use crate::telemetry;

/// The longest tool name looked up (and echoed in an answer); MCP allows 64.
const MAX_TOOL_NAME: usize = 128;

impl<S: ConversationStore + 'static> Gateway<S> {
    /// `tools/call` in `scope`. Every failure the model can act on is an
    /// error result, never a protocol error; a call beyond the caller's
    /// rate limits is refused with when to retry. The scope's client
    /// receives `list_changed` after a load or an unload that changed its
    /// list. The name is resolved once (alias, route); what the caller may
    /// not use is not available, as a tool that does not exist.
    pub async fn call_tool(
        &self,
        scope: &RequestScope,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, RateLimited> {
        let Some(_running) = self.calls.start() else {
            return Ok(error_result(GatewayShuttingDown));
        };
        if name.len() > MAX_TOOL_NAME {
            return Ok(error_result(NameTooLong {
                length: name.len(),
                max: MAX_TOOL_NAME,
            }));
        }
        if let (LoadedSchemas::Conversation, Some(id)) = (self.loaded_schemas, scope.session()) {
            // Its client never lists the loaded tools, so a restored
            // session's calls start their upstreams before the name is
            // resolved.
            let active = self.sessions.active_set(id).await;
            self.toolbox.prepare_visible(&active).await;
        }
        let arguments = Value::Object(arguments.unwrap_or_default());
        if self.load_budget != LoadBudget::Unlimited
            && let Some(id) = scope.session()
        {
            // What the load budget unloads by: the session's calls.
            let session = self.sessions.get(id).await;
            self.with_view(scope, |catalog| {
                session.usage().record(catalog, name, Some(&arguments));
            });
        }
        let began = Instant::now();
        let audited = self.audit.is_some().then(|| arguments.clone());
        let meta = self.toolbox.meta_tools().parse(name, &arguments);
        let call = self.toolbox.resolve(name, arguments, scope.authority());
        let labels = labels(&call);
        if let Err(limited) = self.access().rate_limits.admit_call(scope.caller()) {
            let outcome = Outcome::Limited;
            self.finished(scope, &labels, outcome, began, audited.as_ref())
                .await;
            return Err(limited);
        }
        let result = match meta {
            None => {
                let checked = self.call_checked(scope, call, audited);
                return self.traced(&labels, checked).await;
            }
            Some(_) if !self.permits_meta(scope, name) => error_result(NotAvailable {
                tool: name.to_owned(),
                group: None,
            }),
            Some(Err(error)) => error_result(error),
            Some(Ok(meta)) => {
                let answer = self.answer_meta(scope, meta);
                self.traced(&labels, answer).await?
            }
        };
        self.finished(scope, &labels, outcome_of(&result), began, audited.as_ref())
            .await;
        Ok(result)
    }

    /// Whether the scope's caller may call the meta-tool `name`.
    fn permits_meta(&self, scope: &RequestScope, name: &str) -> bool {
        scope
            .authority()
            .permits(&PolicyTarget::tool(ToolKind::Meta, name))
    }

    /// A call to a catalog tool: the caller's per-tool limit, availability
    /// (for a session), then the tool, through the toolbox.
    pub(super) async fn call_checked(
        &self,
        scope: &RequestScope,
        call: ResolvedCall,
        audited: Option<Value>,
    ) -> Result<CallToolResult, RateLimited> {
        let began = Instant::now();
        let labels = labels(&call);
        if let Err(limited) = self
            .access()
            .rate_limits
            .admit_tool(scope.caller(), &labels.tool)
        {
            self.finished(scope, &labels, Outcome::Limited, began, audited.as_ref())
                .await;
            return Err(limited);
        }
        let (result, outcome) = self.run_checked(scope, call).await;
        let outcome = if labels.tool == UNKNOWN {
            Outcome::Unavailable
        } else {
            outcome
        };
        self.finished(scope, &labels, outcome, began, audited.as_ref())
            .await;
        Ok(result)
    }

    /// `call`, in a span of its own while spans are on.
    pub(super) async fn traced(
        &self,
        labels: &Labels,
        call: impl Future<Output = Result<CallToolResult, RateLimited>>,
    ) -> Result<CallToolResult, RateLimited> {
        if !telemetry::enabled() {
            return call.await;
        }
        let group =
            (labels.group != CORE && !labels.group.is_empty()).then_some(labels.group.as_str());
        let Some(span) = telemetry::tool_span(&labels.requested, group, labels.origin.as_ref())
        else {
            return call.await;
        };
        let result = call.with_context(span.context()).await;
        span.end(match &result {
            Ok(result) if result.is_error == Some(true) => Some("tool_error".into()),
            Ok(_) => None,
            Err(_) => Some(RATE_LIMITED_CODE.to_string().into()),
        });
        result
    }

    /// A catalog tool's call: availability for the session, then the tool,
    /// which the toolbox runs if the scope's authority permits it as it
    /// will run (after the alias and the action).
    async fn run_checked(
        &self,
        scope: &RequestScope,
        call: ResolvedCall,
    ) -> (CallToolResult, Outcome) {
        let name = call.requested().to_owned();
        if let Some(id) = scope.session() {
            let session = self.sessions.get(id).await;
            if let Some(reason) = session.unreadable() {
                let unreadable = SessionUnreadable {
                    tool: &name,
                    reason,
                };
                return (error_result(unreadable), Outcome::Error);
            }
            let active = session.active.lock().await.clone();
            let available = self.with_view(scope, |catalog| {
                active.check_available(catalog, &name).map(|_| ())
            });
            if let Err(not_available) = available {
                return (error_result(not_available), Outcome::Unavailable);
            }
        }
        let context = scope.call_context();
        let result = match self.toolbox.run(call, &context).await {
            Ok(output) | Err(ToolCallError::RespondToModel(output)) => result_from_output(output),
            Err(ToolCallError::Fatal(reason)) => {
                tracing::error!(tool = %name, %reason, "tool call failed");
                error_result(FailedInGateway(&name))
            }
        };
        let outcome = outcome_of(&result);
        (result, outcome)
    }

    /// Counts a finished call and writes its audit line.
    async fn finished(
        &self,
        scope: &RequestScope,
        labels: &Labels,
        outcome: Outcome,
        began: Instant,
        arguments: Option<&Value>,
    ) {
        let took = began.elapsed();
        let (group, tool) = (labels.group.as_str(), labels.tool.as_str());
        self.metrics.tool_call(group, tool, outcome, took);
        if let (Some(audit), Some(arguments)) = (&self.audit, arguments) {
            audit
                .record(AuditedCall {
                    owner: scope.owner(),
                    session: scope.session().map(ConversationId::as_str),
                    group,
                    tool,
                    outcome,
                    took,
                    arguments,
                })
                .await;
        }
    }
}

/// What a call is counted, audited and traced under: the catalog's names
/// only (`core` for a core tool, `(unknown)` for a name no tool holds).
pub(super) struct Labels {
    requested: String,
    group: String,
    tool: String,
    origin: Option<toolgate_core::Origin>,
}

pub(super) fn labels(call: &ResolvedCall) -> Labels {
    let (group, tool) = match call.tool() {
        Some(tool) => (
            call.group().map_or(CORE, GroupId::as_str).to_owned(),
            tool.to_owned(),
        ),
        None => (String::new(), UNKNOWN.to_owned()),
    };
    Labels {
        requested: call.requested().to_owned(),
        group,
        tool,
        origin: call.origin().cloned(),
    }
}

/// How a call's result counts.
fn outcome_of(result: &CallToolResult) -> Outcome {
    if result.is_error == Some(true) {
        Outcome::Error
    } else {
        Outcome::Ok
    }
}
