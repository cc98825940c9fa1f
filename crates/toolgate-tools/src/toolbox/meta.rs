//! The meta-tools' one answer path, for the agent loop and the gateway
//! alike: a load's source started first ([`Toolbox::prepare_meta`]), then
//! ([`Toolbox::answer_meta`]) the load budget kept (least recently used
//! groups unloaded), the call answered for the conversation's tools
//! ([`SessionTools`]), and every change returned as a [`HostEvent`] for the
//! front end to store, in the order it happened. A front end stores the
//! events, tells its client what changed and converts the output; it
//! decides nothing here.

use serde_json::Value;
use toolgate_core::{
    ActiveToolSet, BudgetPlan, Catalog, GroupId, GroupSelection, GroupVisibility, HostEvent,
    Incoming, LoadBudget, LoadGroupError, LoadedSchemas, MetaAnswer, MetaCall, NotInGroup,
    SessionTools, ToolDefinition, ToolGroup, ToolName, Unload, UnloadedForBudget, not_in_group,
};

use super::Toolbox;
use crate::authority::Authority;
use crate::output::ToolOutput;

/// How the front end asking shows the meta-tools' answers, and what bounds
/// its loads.
#[derive(Clone, Copy)]
pub struct MetaHost<'a> {
    /// Where the schemas of loaded tools go.
    pub schemas: LoadedSchemas,
    /// What the front end's tool list holds of the loads when that is fixed
    /// ([`LoadedSchemas::Conversation`] in the agent: a compaction's
    /// snapshot): a load of a group listed whole there answers as with
    /// [`LoadedSchemas::ToolList`]. `None`: nothing beyond the core tools
    /// and the always-listed groups.
    pub listed: Option<&'a ActiveToolSet>,
    /// The bound on the loaded groups' schemas.
    pub budget: LoadBudget,
    /// The most tokens of schemas one load may bring (a share of the
    /// model's context window, [`load_limit`]): a load past it is refused
    /// with the group's tool names, so that the model loads the ones it
    /// needs instead of overflowing its window. `None`: no bound.
    pub load_limit: Option<usize>,
    /// The tokens of one tool's schema, as the host counts them.
    pub tokens: &'a (dyn Fn(&ToolDefinition) -> usize + Sync),
}

impl std::fmt::Debug for MetaHost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaHost")
            .field("schemas", &self.schemas)
            .field("listed", &self.listed)
            .field("budget", &self.budget)
            .field("load_limit", &self.load_limit)
            .finish_non_exhaustive()
    }
}

impl MetaHost<'_> {
    /// Where a load of `group` puts its schemas: in the tool list when the
    /// front end lists loads, or lists this group anyway; else where the
    /// front end puts them.
    pub fn placement(&self, catalog: &Catalog, group: &GroupId) -> LoadedSchemas {
        let listed_anyway = catalog.group_visibility(group.as_str())
            == Some(GroupVisibility::Always)
            || self.listed.is_some_and(|listed| {
                listed.selection(group.as_str()) == Some(GroupSelection::Whole)
            });
        if listed_anyway {
            LoadedSchemas::ToolList
        } else {
            self.schemas
        }
    }
}

/// A meta-tool call answered.
#[derive(Clone, Debug)]
pub enum MetaOutcome {
    /// The answer the model reads, after the changes it made.
    Answered(MetaAnswered),
    /// `call_tool`: the tool it names runs in its place, as a direct call of
    /// it by the same caller, through the same checks
    /// ([`Toolbox::admit`](super::Toolbox::admit)).
    Call {
        /// The tool's name, as the model gave it.
        tool: String,
        /// Its arguments, an object.
        arguments: Value,
    },
}

/// A meta-tool's answer and what it changed.
#[derive(Clone, Debug)]
pub struct MetaAnswered {
    /// What the model reads.
    pub output: ToolOutput,
    /// The changes to the conversation's tools, in the order they were
    /// made, for the front end to store before the answer: the load
    /// budget's unloads, then the call's own loads or unload.
    pub events: Vec<HostEvent>,
    /// The group a `load_tool_group` loaded and its tools, for a front end
    /// that describes them in a form of its own (an MCP client's structured
    /// content).
    pub loaded: Option<LoadedTools>,
}

impl MetaAnswered {
    fn output(output: ToolOutput) -> Self {
        Self {
            output,
            events: Vec::new(),
            loaded: None,
        }
    }

    /// Whether what the conversation may call changed.
    pub fn changed_tools(&self) -> bool {
        self.events.iter().any(HostEvent::changes_tools)
    }
}

/// A loaded group and its tools.
#[derive(Clone, Debug)]
pub struct LoadedTools {
    /// The group.
    pub group: GroupId,
    /// Its display name.
    pub display_name: String,
    /// Its tools loaded, as the caller sees them.
    pub tools: Vec<ToolDefinition>,
}

impl LoadedTools {
    fn of(group: &ToolGroup, tools: &[&ToolDefinition]) -> Self {
        Self {
            group: group.id.clone(),
            display_name: group.display_name.clone(),
            tools: tools.iter().map(|&tool| tool.clone()).collect(),
        }
    }
}

impl Toolbox {
    /// Makes a meta-tool call of the caller with `authority` answerable: a
    /// load's group is started and listed first, when the caller sees it
    /// (what it may not see is not started for it). A failure is the answer
    /// the model reads. Call it before [`Self::answer_meta`], without
    /// holding the conversation's tools: starting a source may take a while.
    pub async fn prepare_meta(
        &self,
        call: &MetaCall,
        authority: &Authority,
    ) -> Result<(), MetaAnswered> {
        let visible = self.with_view(authority, |view| match call {
            MetaCall::Load { group, .. } => view.group(group).is_some(),
            MetaCall::CallTool { tool, .. } => view.resolve(tool).is_some(),
            MetaCall::Unload { .. } | MetaCall::FindGroups { .. } => true,
        });
        let Some(group) = call.group_to_prepare().filter(|_| visible) else {
            return Ok(());
        };
        self.prepare(group).await.map_err(|error| {
            let error = LoadGroupError::Unavailable {
                reason: error.to_string(),
            };
            MetaAnswered::output(ToolOutput::error(error.to_string()))
        })
    }

    /// Answers a meta-tool call of the caller with `authority` for its
    /// conversation's tools (`None`: a request of no conversation, whose
    /// loads last for that answer only and which can unload nothing), as
    /// the front end `host` shows answers, once [`Self::prepare_meta`] has
    /// prepared it. Before a load the budget unloads the groups least
    /// recently used. The changes come back as events, applied already to
    /// `session`, for the front end to store.
    pub fn answer_meta(
        &self,
        call: &MetaCall,
        session: Option<&mut SessionTools>,
        authority: &Authority,
        host: &MetaHost<'_>,
    ) -> MetaOutcome {
        self.with_view_and_catalog(authority, |view, catalog| {
            self.answer_prepared(call, session, (view, catalog), host)
        })
    }

    /// [`Self::answer_meta`] on the caller's view and the whole catalog.
    fn answer_prepared(
        &self,
        call: &MetaCall,
        mut session: Option<&mut SessionTools>,
        (view, catalog): (&Catalog, &Catalog),
        host: &MetaHost<'_>,
    ) -> MetaOutcome {
        let load = incoming(call, view);
        if let Some(refused) = load.and_then(|load| too_large(load, session.as_deref(), view, host))
        {
            let output = ToolOutput::error(refused.to_string());
            return MetaOutcome::Answered(MetaAnswered::output(output));
        }
        let mut events = Vec::new();
        let plan = match (load, session.as_deref_mut()) {
            (Some(load), Some(session)) => {
                make_room(session, (view, catalog), load, host, &mut events)
            }
            _ => BudgetPlan::default(),
        };
        let answer = self.meta.answer(
            call,
            session.as_deref_mut().map(|session| &mut session.active),
            view,
        );
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => {
                let mut answered = MetaAnswered::output(ToolOutput::error(error.to_string()));
                answered.events = events;
                return MetaOutcome::Answered(answered);
            }
        };
        events.extend(answer.events());
        // A search that loaded what it lists has joined the session: the
        // budget makes room after it, the search's own tools kept.
        let plan = match (&answer, session) {
            (MetaAnswer::Found(found), Some(session)) if !found.loaded.is_empty() => {
                let kept: Vec<(GroupId, Vec<ToolName>)> = found
                    .loaded
                    .iter()
                    .map(|load| {
                        let tools = load.tools.iter().map(|tool| tool.name.clone()).collect();
                        (load.group.id.clone(), tools)
                    })
                    .collect();
                let plan = host.budget.trim(
                    &session.active,
                    (view, catalog),
                    &kept,
                    &session.usage,
                    host.tokens,
                );
                unload_planned(session, &plan, &mut events);
                plan
            }
            _ => plan,
        };
        let with_budget = |text: String| match plan.is_empty() {
            true => text,
            false => format!("{text}\n\n{}", UnloadedForBudget(&plan)),
        };
        let (output, loaded) = match answer {
            MetaAnswer::Loaded(loaded) => {
                let placement = host.placement(view, &loaded.group.id);
                let text = with_budget(loaded.answer(placement).to_string());
                let tools = LoadedTools::of(loaded.group, &loaded.tools);
                (ToolOutput::text(text), Some(tools))
            }
            MetaAnswer::LoadedInstead { loaded, unknown } => {
                let placement = host.placement(view, &loaded.group.id);
                let not_in_group = NotInGroup {
                    group: &loaded.group.display_name,
                    unknown: &unknown,
                };
                let text = with_budget(format!("{not_in_group}\n{}", loaded.answer(placement)));
                let tools = LoadedTools::of(loaded.group, &loaded.tools);
                (ToolOutput::text(text), Some(tools))
            }
            MetaAnswer::PartlyLoaded(loaded) => {
                let placement = host.placement(view, &loaded.group.id);
                let text = with_budget(loaded.answer(placement).to_string());
                let tools = LoadedTools::of(loaded.group, &loaded.tools);
                (ToolOutput::text(text), Some(tools))
            }
            MetaAnswer::Unloaded(unloaded) => (ToolOutput::text(unloaded.to_string()), None),
            MetaAnswer::Found(found) => {
                let output = ToolOutput {
                    structured: Some(found.to_json()),
                    ..ToolOutput::text(with_budget(found.answer(host.schemas).to_string()))
                };
                (output, None)
            }
            MetaAnswer::Call { tool, arguments } => {
                return MetaOutcome::Call { tool, arguments };
            }
        };
        MetaOutcome::Answered(MetaAnswered {
            output,
            events,
            loaded,
        })
    }
}

/// The share of a model's context window one load may bring: a quarter.
const LOAD_SHARE_OF_WINDOW: usize = 4;

/// The most tokens of tool schemas one load may bring for a model with a
/// `context_window`-token window: a quarter of it, so that the conversation,
/// the other tools and the answer still fit.
pub fn load_limit(context_window: usize) -> usize {
    context_window / LOAD_SHARE_OF_WINDOW
}

/// What `call` loads, if it is a load: a load naming a tool the group lacks
/// loads it whole.
fn incoming<'a>(call: &'a MetaCall, view: &Catalog) -> Option<Incoming<'a>> {
    let MetaCall::Load { group, tools } = call else {
        return None;
    };
    let tools = tools
        .as_deref()
        .filter(|tools| not_in_group(view, group, tools).is_empty());
    Some(Incoming { group, tools })
}

/// The refusal of `load`, when it brings more than `host`'s limit.
fn too_large(
    load: Incoming<'_>,
    session: Option<&SessionTools>,
    view: &Catalog,
    host: &MetaHost<'_>,
) -> Option<LoadGroupError> {
    let limit = host.load_limit?;
    let alone = ActiveToolSet::new();
    let active = session.map_or(&alone, |session| &session.active);
    // What the caller's model would read: the tools of its view alone. The
    // budget counts the whole catalog too, so that a policy cannot hide
    // what a session holds; a refusal counting them would tell the caller
    // the size of tools it may not see.
    let tokens = load.tokens(active, (view, view), host.tokens);
    let group = view.group(load.group).filter(|_| tokens > limit)?;
    Some(LoadGroupError::TooLarge {
        group: group.id.clone(),
        tokens,
        limit,
        tools: view
            .group_tools(load.group)
            .map(|tool| tool.name.clone())
            .collect(),
    })
}

/// Unloads from `session` what the load budget says `load` needs,
/// the groups least recently called first; each unload's event goes to
/// `events`.
fn make_room(
    session: &mut SessionTools,
    catalogs: (&Catalog, &Catalog),
    load: Incoming<'_>,
    host: &MetaHost<'_>,
    events: &mut Vec<HostEvent>,
) -> BudgetPlan {
    let plan = host
        .budget
        .plan(&session.active, catalogs, load, &session.usage, host.tokens);
    unload_planned(session, &plan, events);
    plan
}

/// Unloads what `plan` says from `session`, each change in `events`.
fn unload_planned(session: &mut SessionTools, plan: &BudgetPlan, events: &mut Vec<HostEvent>) {
    for victim in &plan.unload {
        let event = match victim {
            Unload::Group(group) => HostEvent::Unloaded(group.clone()),
            Unload::Tool(group, tool) => {
                HostEvent::ToolsUnloaded(group.clone(), vec![tool.clone()])
            }
        };
        if session.active.apply(&event) {
            events.push(event);
        }
    }
}
