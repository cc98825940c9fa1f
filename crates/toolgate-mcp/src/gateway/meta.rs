//! The meta-tools' answers as an MCP client receives them: a load's
//! upstream started first, loads and unloads recorded in the session's
//! history (its restore replays them) and announced with `list_changed`
//! when they change its `tools/list`; `call_tool` runs the tool it names
//! as a direct call.

use std::time::SystemTime;

use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use toolgate_core::{
    ActiveToolSet, BudgetPlan, Catalog, GROUP_NAME_PARAMETER, GroupId, GroupUse, GroupVisibility,
    LOAD_TOOL_GROUP_TOOL_NAME, LoadBudget, LoadedSchemas, Message, MetaAnswer, MetaCall,
    TokenCounter, ToolDefinition, ToolName, ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME,
    UnloadedForBudget,
};
use toolgate_store::ConversationStore;
use toolgate_tools::Authority;

use super::Gateway;
use super::call::labels;
use crate::convert::error_result;
use crate::rate_limit::RateLimited;
use crate::scope::RequestScope;
use crate::session::notify_tool_list_changed;

impl<S: ConversationStore + 'static> Gateway<S> {
    /// A meta-tool call: a load's upstream is started first; loads and
    /// unloads of a session are recorded in its history and, when they
    /// change its `tools/list`, announced with `list_changed`.
    pub(super) async fn answer_meta(
        &self,
        scope: &RequestScope,
        call: MetaCall,
    ) -> Result<CallToolResult, RateLimited> {
        // What the caller may not see is not started for it either.
        let visible = self.with_view(scope, |catalog| match &call {
            MetaCall::Load { group } => catalog.group(group).is_some(),
            MetaCall::CallTool { tool, .. } => catalog.resolve(tool).is_some(),
            MetaCall::Unload { .. } | MetaCall::FindGroups { .. } => true,
        });
        if visible && let Err(error) = self.toolbox.prepare_meta(&call).await {
            return Ok(error_result(error));
        }
        let meta = self.toolbox.meta_tools();
        let reply = match scope.session() {
            Some(id) => {
                let session = self.sessions.get(id).await;
                let mut active = session.active.lock().await;
                let plan = match &call {
                    MetaCall::Load { group } => {
                        let usage = session.usage().clone();
                        self.with_view(scope, |catalog| {
                            self.make_room(&mut active, catalog, group, &usage)
                        })
                    }
                    MetaCall::Unload { .. }
                    | MetaCall::CallTool { .. }
                    | MetaCall::FindGroups { .. } => BudgetPlan::default(),
                };
                // Before the load's own event: the restore replays them in
                // the order they happened.
                for group in &plan.unload {
                    let event = group_event(UNLOAD_TOOL_GROUP_TOOL_NAME, group);
                    self.sessions.record(id, event).await;
                }
                let mut reply = self.with_view(scope, |catalog| {
                    self.render(
                        meta.answer(&call, Some(&mut active), catalog),
                        catalog,
                        scope.authority(),
                    )
                });
                for event in reply.history_events() {
                    self.sessions.record(id, event).await;
                }
                if let Reply::Result { result, .. } = &mut reply
                    && !plan.is_empty()
                {
                    let text = UnloadedForBudget(&plan).to_string();
                    result.content.push(ContentBlock::text(text));
                }
                reply
            }
            None => self.with_view(scope, |catalog| {
                let answer = meta.answer(&call, None, catalog);
                self.render(answer, catalog, scope.authority())
            }),
        };
        match reply {
            Reply::Result { result, changed } => {
                if let Some(Change::Loaded(group)) = &changed {
                    self.metrics.group_loaded(group.as_str());
                }
                let listed = match self.loaded_schemas {
                    LoadedSchemas::ToolList => true,
                    LoadedSchemas::Conversation => false,
                };
                if listed && changed.is_some() && scope.session().is_some() {
                    notify_list_changed(scope.peer()).await;
                }
                Ok(result)
            }
            Reply::Call { tool, arguments } => {
                let audited = self.audit.is_some().then(|| arguments.clone());
                let call = self.toolbox.resolve(&tool, arguments, scope.authority());
                let labels = labels(&call);
                let checked = self.call_checked(scope, call, audited);
                self.traced(&labels, checked).await
            }
        }
    }

    /// Unloads from a session's `active` set what the load budget says a
    /// load of `group` needs, the groups `usage` shows least recently
    /// called first.
    fn make_room(
        &self,
        active: &mut ActiveToolSet,
        catalog: &Catalog,
        group: &str,
        usage: &GroupUse,
    ) -> BudgetPlan {
        if self.load_budget == LoadBudget::Unlimited {
            return BudgetPlan::default();
        }
        let Some(counter) = TokenCounter::shared() else {
            tracing::warn!("the tokenizer is not available: the load budget is not kept");
            return BudgetPlan::default();
        };
        let cost = |definition: &ToolDefinition| counter.tool(definition);
        let plan = self.load_budget.plan(active, catalog, group, usage, &cost);
        for victim in &plan.unload {
            active.unload(catalog, victim.as_str()).ok();
        }
        plan
    }

    /// A meta-tool's answer as the MCP client receives it.
    fn render(
        &self,
        answer: Result<MetaAnswer<'_>, toolgate_core::MetaError>,
        catalog: &Catalog,
        authority: &Authority,
    ) -> Reply {
        match answer {
            Ok(MetaAnswer::Loaded(loaded)) => {
                // An always-listed group's tools are in the list either way.
                let schemas = match catalog.group_visibility(loaded.group.id.as_str()) {
                    Some(GroupVisibility::Always) => LoadedSchemas::ToolList,
                    Some(GroupVisibility::OnLoad) | None => self.loaded_schemas,
                };
                let text = loaded.answer(schemas).to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(self.loaded_schemas(&loaded, authority));
                let changed = loaded
                    .newly_loaded
                    .then(|| Change::Loaded(loaded.group.id.clone()));
                Reply::Result { result, changed }
            }
            Ok(MetaAnswer::Unloaded(unloaded)) => Reply::Result {
                result: CallToolResult::success(vec![ContentBlock::text(unloaded.to_string())]),
                changed: Some(Change::Unloaded(unloaded.group.id.clone())),
            },
            Ok(MetaAnswer::Found(found)) => {
                let text = found.answer(self.loaded_schemas).to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(found.to_json());
                let loads: Vec<(GroupId, Vec<ToolName>)> = found
                    .loaded
                    .iter()
                    .filter(|load| load.newly_loaded)
                    .map(|load| {
                        let tools = load.tools.iter().map(|tool| tool.name.clone()).collect();
                        (load.group.id.clone(), tools)
                    })
                    .collect();
                let changed = (!loads.is_empty()).then_some(Change::ToolsLoaded(loads));
                Reply::Result { result, changed }
            }
            Ok(MetaAnswer::Call { tool, arguments }) => Reply::Call { tool, arguments },
            Err(error) => Reply::Result {
                result: error_result(error),
                changed: None,
            },
        }
    }
}

/// A meta-tool's answer, rendered: a result (and what it changed in the
/// session), or the tool `call_tool` names, to run as a direct call.
enum Reply {
    Result {
        result: CallToolResult,
        changed: Option<Change>,
    },
    Call {
        tool: String,
        arguments: Value,
    },
}

/// A change to a session's active set, to record in its history.
enum Change {
    Loaded(GroupId),
    Unloaded(GroupId),
    /// `find_tool_groups` loaded these tools of each group.
    ToolsLoaded(Vec<(GroupId, Vec<ToolName>)>),
}

impl Reply {
    /// The history events that replay this answer's change.
    fn history_events(&self) -> Vec<Message> {
        match self {
            Self::Result {
                changed: Some(Change::Loaded(group)),
                ..
            } => vec![group_event(LOAD_TOOL_GROUP_TOOL_NAME, group)],
            Self::Result {
                changed: Some(Change::Unloaded(group)),
                ..
            } => vec![group_event(UNLOAD_TOOL_GROUP_TOOL_NAME, group)],
            // Recorded as the host's partial loads (a router's are too): the
            // restore replays them; the text is the search's answer, which
            // the client holds.
            Self::Result {
                changed: Some(Change::ToolsLoaded(loads)),
                ..
            } => loads
                .iter()
                .map(|(group, tools)| Message::tools_loaded_by_host(group, tools, ""))
                .collect(),
            Self::Result { changed: None, .. } | Self::Call { .. } => Vec::new(),
        }
    }
}

/// A load or unload the gateway recorded for a session, as the model's own
/// call would be: its restore replays it.
fn group_event(tool: &str, group: &GroupId) -> Message {
    let call_id = format!(
        "mcp-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    Message::tool_call(
        call_id,
        tool,
        json!({ GROUP_NAME_PARAMETER: group }).to_string(),
        ToolStatus::Success,
    )
}

async fn notify_list_changed(peer: Option<&Peer<RoleServer>>) {
    if let Some(peer) = peer {
        notify_tool_list_changed(peer).await;
    }
}
