//! The meta-tools' answers as an MCP client receives them. The toolbox's
//! runtime answers them ([`Toolbox::answer_meta`]); the gateway stores the
//! changes it made in the session's history (its restore replays them),
//! announces them with `list_changed` when they change its `tools/list`,
//! and converts the answer. `call_tool` runs the tool it names as a direct
//! call.

use std::time::Instant;

use rmcp::model::CallToolResult;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use toolgate_core::{HostEvent, LoadBudget, LoadedSchemas, MetaCall, TokenCounter, ToolDefinition};
use toolgate_store::ConversationStore;
use toolgate_tools::{LoadedTools, MetaAnswered, MetaHost, MetaOutcome, load_limit};

use super::Gateway;
use super::call::{CallerLimit, Checked};
use crate::convert::result_from_output;
use crate::rate_limit::RateLimited;
use crate::scope::RequestScope;
use crate::session::{Session, notify_tool_list_changed};

impl<S: ConversationStore + 'static> Gateway<S> {
    /// A meta-tool call in `session` (`None`: a stateless request): a load's
    /// upstream started first, the runtime's answer, its changes recorded in
    /// the session's history and, when they change its `tools/list`,
    /// announced with `list_changed`.
    pub(super) async fn answer_meta(
        &self,
        scope: &RequestScope,
        session: Option<&Session>,
        call: MetaCall,
        audited: Option<&Value>,
    ) -> Result<CallToolResult, RateLimited> {
        let began = Instant::now();
        let authority = scope.authority();
        if let Err(failed) = self.toolbox.prepare_meta(&call, authority).await {
            return Ok(result_from_output(failed.output));
        }
        let counter = TokenCounter::shared();
        let tokens = |definition: &ToolDefinition| counter.map_or(0, |c| c.tool(definition));
        let budget = match counter {
            Some(_) => self.load_budget,
            None => {
                if self.load_budget != LoadBudget::Unlimited {
                    tracing::warn!("the tokenizer is not available: the load budget is not kept");
                }
                LoadBudget::Unlimited
            }
        };
        let host = MetaHost {
            schemas: self.loaded_schemas,
            listed: None,
            budget,
            load_limit: counter.map(|_| load_limit(self.context_window)),
            tokens: &tokens,
        };
        let outcome = match session {
            Some(session) => {
                let mut tools = session.tools.lock().await;
                self.toolbox
                    .answer_meta(&call, Some(&mut tools), authority, &host)
            }
            None => self.toolbox.answer_meta(&call, None, authority, &host),
        };
        let answered = match outcome {
            MetaOutcome::Answered(answered) => answered,
            MetaOutcome::Call { tool, arguments } => {
                let call = Checked {
                    name: &tool,
                    audited: audited.is_some().then(|| arguments.clone()),
                    arguments,
                    began,
                };
                return self
                    .call_checked(scope, session, call, CallerLimit::Counted)
                    .await;
            }
        };
        if let Some(id) = scope.session() {
            // In the order they happened: the restore replays them so.
            for event in &answered.events {
                self.sessions.record(id, event).await;
            }
        }
        for event in &answered.events {
            if let HostEvent::Loaded(group) = event {
                self.metrics.group_loaded(group.as_str());
            }
        }
        let listed = match self.loaded_schemas {
            LoadedSchemas::ToolList => true,
            LoadedSchemas::Conversation => false,
        };
        if listed && answered.changed_tools() && scope.session().is_some() {
            notify_list_changed(scope.peer()).await;
        }
        Ok(self.converted(answered, scope))
    }

    /// A meta-tool's answer as the MCP client receives it: a load's carries
    /// the group and its tools as `tools/list` gives them, for clients that
    /// never refresh their list.
    fn converted(&self, answered: MetaAnswered, scope: &RequestScope) -> CallToolResult {
        let mut result = result_from_output(answered.output);
        if let Some(loaded) = &answered.loaded {
            result.structured_content = Some(self.loaded_schemas(loaded, scope));
        }
        result
    }

    /// The structured content of a load: the group and its tools as
    /// `tools/list` gives them.
    fn loaded_schemas(&self, loaded: &LoadedTools, scope: &RequestScope) -> Value {
        let tools: Vec<Value> = self
            .to_mcp(loaded.tools.iter().collect(), scope.authority())
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect();
        json!({
            "group": loaded.group,
            "display_name": loaded.display_name,
            "tools": tools,
        })
    }
}

async fn notify_list_changed(peer: Option<&Peer<RoleServer>>) {
    if let Some(peer) = peer {
        notify_tool_list_changed(peer).await;
    }
}
