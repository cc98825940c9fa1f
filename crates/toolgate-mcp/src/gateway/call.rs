//! `tools/call`: the session looked up once, then a meta-tool's answer
//! (`meta.rs`) or the catalog tool, admitted by the toolbox (exists, loaded,
//! allowed as it will run) and run within the caller's rate limits; each
//! call counted, audited and traced.

use std::time::Instant;

use opentelemetry::context::FutureExt as _;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use toolgate_core::{
    Catalog, FailedInGateway, GatewayShuttingDown, GroupId, LoadBudget, NameTooLong, NotAvailable,
    PolicyTarget, SessionUnreadable, ToolKind,
};
use toolgate_store::{ConversationId, ConversationStore};
use toolgate_tools::{AdmittedCall, Reach, Refusal, RefusedCall, ResolvedCall, ToolCallError};

use super::Gateway;
use crate::audit::AuditedCall;
use crate::convert::{error_result, result_from_output};
use crate::metrics::{CORE, Outcome, UNKNOWN};
use crate::rate_limit::{RATE_LIMITED_CODE, RateLimited};
use crate::scope::RequestScope;
use crate::session::Session;
use crate::telemetry;

/// The longest tool name looked up (and echoed in an answer); MCP allows 64.
const MAX_TOOL_NAME: usize = 128;

impl<S: ConversationStore + 'static> Gateway<S> {
    /// `tools/call` in `scope`. Every failure the model can act on is an
    /// error result, never a protocol error; a call beyond the caller's
    /// rate limits is refused with when to retry. The scope's client
    /// receives `list_changed` after a load or an unload that changed its
    /// list. Whether the call may run is decided once, by the toolbox
    /// ([`Toolbox::admit`](toolgate_tools::Toolbox::admit)): what the
    /// caller may not use is not available, as a tool that does not exist,
    /// and a refused call does nothing else. The session is looked up once.
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
        let arguments = Value::Object(arguments.unwrap_or_default());
        let began = Instant::now();
        let audited = self.audit.is_some().then(|| arguments.clone());
        let session = scope.held(&self.sessions).await;
        // A gateway that sends every tool offers no meta-tool: a call of one
        // is not available, as any tool it does not list.
        let meta = match self.sends_whole() {
            true => None,
            false => self.toolbox.meta_tools().parse(name, &arguments),
        };
        let Some(meta) = meta else {
            let call = Checked {
                name,
                arguments,
                audited,
                began,
            };
            return self
                .call_checked(scope, session.as_deref(), call, CallerLimit::Count)
                .await;
        };
        let labels = labels(&self.toolbox.resolve(name, Value::Null, scope.authority()));
        if let Err(limited) = self.access().rate_limits.admit_call(scope.client()) {
            self.finished(scope, &labels, Outcome::Limited, began, audited.as_ref())
                .await;
            return Err(limited);
        }
        let result = match meta {
            _ if !self.permits_meta(scope, name) => error_result(NotAvailable {
                tool: name.to_owned(),
                group: None,
            }),
            Err(error) => error_result(error),
            Ok(meta) => {
                let answer = self.answer_meta(scope, session.as_deref(), meta, audited.as_ref());
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

    /// A call of a catalog tool in `session` (`None`: a stateless request,
    /// which reaches every tool its caller sees): the toolbox's admission,
    /// the caller's rate limit (unless `limit` says it was counted: a
    /// `call_tool` counted as itself), the per-tool limit, the session's use
    /// of the group (for the load budget), then the tool.
    pub(super) async fn call_checked(
        &self,
        scope: &RequestScope,
        session: Option<&Session>,
        call: Checked<'_>,
        limit: CallerLimit,
    ) -> Result<CallToolResult, RateLimited> {
        let Checked {
            name,
            arguments,
            audited,
            began,
        } = call;
        let audited = audited.as_ref();
        if let Some(reason) = session.and_then(Session::unreadable) {
            let unreadable = SessionUnreadable { tool: name, reason };
            let labels = labels(&self.toolbox.resolve(name, Value::Null, scope.authority()));
            self.finished(scope, &labels, Outcome::Error, began, audited)
                .await;
            return Ok(error_result(unreadable));
        }
        let admitted = self.admit(scope, session, name, arguments).await;
        let labels = match &admitted {
            Ok(admitted) => labels(admitted.call()),
            Err(refused) => labels(refused.call()),
        };
        if limit == CallerLimit::Count
            && let Err(limited) = self.access().rate_limits.admit_call(scope.client())
        {
            self.finished(scope, &labels, Outcome::Limited, began, audited)
                .await;
            return Err(limited);
        }
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(refused) => {
                self.finished(scope, &labels, Outcome::Unavailable, began, audited)
                    .await;
                return Ok(result_from_output(refused.output()));
            }
        };
        let run = async {
            if let Err(limited) = self
                .access()
                .rate_limits
                .admit_tool(scope.client(), &labels.tool)
            {
                self.finished(scope, &labels, Outcome::Limited, began, audited)
                    .await;
                return Err(limited);
            }
            if let (Some(session), Some(id)) = (session, scope.session()) {
                self.record_use(scope, session, id, &admitted).await;
            }
            let result = self.run_admitted(scope, admitted).await;
            self.finished(scope, &labels, outcome_of(&result), began, audited)
                .await;
            Ok(result)
        };
        self.traced(&labels, run).await
    }

    /// The toolbox's admission of a call in `session`. A restored session's
    /// loaded upstreams may not run yet (its client lists no tools before
    /// calling, as with loaded schemas in the conversation): a call out of
    /// reach starts them and is admitted again.
    async fn admit(
        &self,
        scope: &RequestScope,
        session: Option<&Session>,
        name: &str,
        arguments: Value,
    ) -> Result<AdmittedCall, RefusedCall> {
        let authority = scope.authority();
        let session = session.filter(|_| !self.sends_whole());
        let Some(session) = session else {
            return self
                .toolbox
                .admit(name, arguments, authority, Reach::Catalog);
        };
        let active = session.tools.lock().await.active.clone();
        let first = self
            .toolbox
            .admit(name, arguments.clone(), authority, Reach::Loaded(&active));
        match first {
            Err(refused)
                if refused.refusal() == Refusal::OutOfReach
                    && !active.loaded_groups().is_empty() =>
            {
                let before = self.with_catalog(Catalog::revision);
                self.toolbox.prepare_visible(&active).await;
                if self.with_catalog(Catalog::revision) == before {
                    return Err(refused);
                }
                self.toolbox
                    .admit(name, arguments, authority, Reach::Loaded(&active))
            }
            admitted => admitted,
        }
    }

    /// Marks the group of an admitted call used in the session, for the
    /// load budget; the use is recorded when it changes which group was
    /// used last, so a restored session unloads as this one would.
    async fn record_use(
        &self,
        scope: &RequestScope,
        session: &Session,
        id: &ConversationId,
        admitted: &AdmittedCall,
    ) {
        if self.load_budget == LoadBudget::Unlimited {
            return;
        }
        let call = admitted.call();
        let used = {
            let mut tools = session.tools.lock().await;
            self.with_view(scope, |catalog| {
                let tool = call.tool().unwrap_or(call.requested());
                tools.usage.record(catalog, tool, Some(call.arguments()))
            })
        };
        if let Some(used) = used {
            self.sessions.record(id, &used).await;
        }
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

    /// Runs an admitted call through the toolbox.
    async fn run_admitted(&self, scope: &RequestScope, admitted: AdmittedCall) -> CallToolResult {
        let name = admitted.call().requested().to_owned();
        let context = scope.call_context();
        match self.toolbox.run(admitted, &context).await {
            Ok(output) | Err(ToolCallError::RespondToModel(output)) => result_from_output(output),
            Err(ToolCallError::Fatal(reason)) => {
                tracing::error!(tool = %name, %reason, "tool call failed");
                error_result(FailedInGateway(&name))
            }
        }
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

/// A call of a catalog tool as `tools/call` received it.
pub(super) struct Checked<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: Value,
    /// Its arguments for the audit log, when there is one.
    pub(super) audited: Option<Value>,
    pub(super) began: Instant,
}

/// Whether a call counts against its caller's rate limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallerLimit {
    /// It does.
    Count,
    /// It was counted already: the `call_tool` call that names it.
    Counted,
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
