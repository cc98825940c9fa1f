//! One turn's state ([`Turn`]) and its model calls: how a turn begins
//! (who is calling, the base prompt, the active set rebuilt from history,
//! the router's pre-loads) and what each model call is sent.
//!
//! What a call may use (the active set) and what it lists as tools are kept
//! apart: with [`LoadedSchemas::Conversation`] the list is the core tools and
//! the groups a compaction's snapshot holds, the same on every call, so that
//! neither the model's loads nor the router's pre-loads change a byte before
//! the conversation and the provider's cached prefix holds: both put their
//! schemas in the conversation.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    ActiveToolSet, Catalog, CatalogTool, Delivery, GroupId, LOAD_TOOL_GROUP_TOOL_NAME, LoadBudget,
    LoadedSchemas, Message, MessageKind, Mode, SessionTools, ToolDefinition, ToolKind,
    restore_active_set, system_prompt,
};
use toolgate_llm::{ChatRequest, ChatResponse, StreamEvent, ToolLimits, ToolSpec};
use toolgate_store::{AgentStore, ConversationId, ConversationStore, StoredMessage};
use toolgate_tools::{CallContext, MetaHost};

use crate::agent::{Agent, AgentError};
use crate::compaction::Context;
use crate::event::{CallReport, TurnEvent, TurnEvents};
use crate::progress::Progress;
use crate::route_outcome::RouteOutcome;
use crate::transcript::chat_messages_with;

/// What a turn's model calls may see and call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Visibility {
    /// The active set: core tools and the loaded groups.
    Loaded,
    /// The whole catalog (a low-confidence route, or an escalation).
    Catalog,
}

/// Which loaded groups a turn's requests list as tools.
#[derive(Clone, Debug)]
pub(crate) enum Listed {
    /// Every loaded group: the active set ([`LoadedSchemas::ToolList`]).
    Active,
    /// The groups a compaction's snapshot holds, less those unloaded since,
    /// rebuilt from history like the active set but without its loads (the
    /// model's own and the router's pre-loads), whose schemas are in the
    /// conversation ([`LoadedSchemas::Conversation`]). Within a turn, only a
    /// compaction and unloads change it.
    Fixed(ActiveToolSet),
}

/// The tools of the whole catalog, and what sending every schema costs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CatalogCost {
    tools: usize,
    tokens: usize,
}

/// One turn under way.
#[derive(Debug)]
pub(crate) struct Turn {
    pub(crate) conversation: ConversationId,
    /// Who the turn's tool calls come from.
    pub(crate) context: CallContext,
    /// The base system prompt.
    system: String,
    /// What the conversation may call, and when it called each group (for
    /// the load budget).
    pub(crate) tools: SessionTools,
    /// Which loaded groups the requests list.
    pub(crate) listed: Listed,
    pub(crate) visibility: Visibility,
    /// Whether the turn defers the tools or sends every one of them.
    pub(crate) mode: Mode,
    pub(crate) progress: Progress,
    catalog_cost: CatalogCost,
    /// Each model call's report, in order.
    pub(crate) calls: Vec<CallReport>,
    /// The routing decision and what the turn's calls showed of it.
    pub(crate) route: Option<RouteOutcome>,
    /// The groups as the router ranked them for this turn, most likely
    /// first (empty when it was not routed): the order the whole catalog is
    /// sent in when the model takes fewer tools than it has.
    pub(crate) ranked: Vec<GroupId>,
    /// Whether the turn has compacted the conversation, or tried to: it
    /// does at most once.
    pub(crate) compaction_tried: bool,
}

/// Who a turn's tool calls come from, and the base system prompt.
pub(crate) struct TurnIdentity {
    pub(crate) context: CallContext,
    pub(crate) system_prompt: String,
}

/// The next model call's request, with the count and token cost of the
/// tools it sends.
struct Request {
    request: ChatRequest,
    tools_sent: usize,
    tool_tokens: usize,
}

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// Reads the conversation, rebuilds its active set and routes the user's
    /// text (if routing is on and the turn has new text).
    pub(crate) async fn begin_turn(
        &self,
        conversation: &ConversationId,
        user_text: Option<&str>,
        compaction_tried: bool,
        events: TurnEvents<'_>,
    ) -> Result<Turn, AgentError> {
        let history = self.store.messages(conversation).await?;
        let identity = self.identity(conversation, &history).await;
        let listed = self.listed(&history);
        let mode = self.delivery().mode;
        let mut turn = Turn {
            conversation: conversation.clone(),
            context: identity.context,
            system: identity.system_prompt,
            tools: self.restore(conversation, &history).await,
            listed,
            visibility: match mode {
                Mode::Deferred => Visibility::Loaded,
                Mode::Whole => Visibility::Catalog,
            },
            mode,
            progress: Progress::default(),
            catalog_cost: self.catalog_cost(),
            calls: Vec::new(),
            route: None,
            ranked: Vec::new(),
            compaction_tried,
        };
        if let (Mode::Deferred, Some(router), Some(text)) = (mode, &self.options.router, user_text)
        {
            turn.visibility = self
                .route(router, &mut turn, text, &history, events)
                .await?;
        }
        Ok(turn)
    }

    /// Model call number `call` of the turn, on the history as stored now;
    /// its report is added to the turn and sent as an event.
    pub(crate) async fn call_model(
        &self,
        turn: &mut Turn,
        call: usize,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, AgentError> {
        let mut history = self.store.messages(&turn.conversation).await?;
        let mut request = self.request(turn, &history);
        if !turn.compaction_tried {
            let context = Context {
                system: request.request.system.clone(),
                messages: request.request.messages.clone(),
                tools: request.request.tools.clone(),
                tool_tokens: request.tool_tokens,
            };
            let compacted = self
                .compact_if_due(&turn.conversation, &history, context, events, cancel)
                .await?;
            if compacted {
                turn.compaction_tried = true;
                history = self.store.messages(&turn.conversation).await?;
                // The loads' results that carried schemas are summarized
                // now: the record's snapshot lists them.
                if let Listed::Fixed(_) = turn.listed {
                    turn.listed = self.listed(&history);
                }
                request = self.request(turn, &history);
            }
        }
        let response = {
            let mut sink = |event: StreamEvent| events(TurnEvent::Model(event));
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(AgentError::Cancelled),
                response = self.model.complete(&request.request, &mut sink) => response?,
            }
        };
        let report = CallReport {
            call,
            tools_sent: request.tools_sent,
            tool_tokens: request.tool_tokens,
            catalog_tools: turn.catalog_cost.tools,
            catalog_tokens: turn.catalog_cost.tokens,
            usage: response.usage,
        };
        events(TurnEvent::ModelCalled(report.clone()));
        turn.calls.push(report);
        Ok(response)
    }

    /// Measures the catalog again: a load may have started a source and
    /// listed its tools.
    pub(crate) fn recount_catalog(&self, turn: &mut Turn) {
        turn.catalog_cost = self.catalog_cost();
    }

    /// Who the turn's tool calls come from (the conversation, its stored
    /// agent, the turn's number: its user messages so far, so a resumed turn
    /// keeps its number), and the base system prompt: the agent's own when
    /// it has one, else the configured one. The agent is read each turn, so
    /// a prompt it changed applies from its next turn.
    pub(crate) async fn identity(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
    ) -> TurnIdentity {
        let agent = match self.store.conversation_agent(conversation).await {
            Ok(agent) => agent,
            Err(error) => {
                tracing::warn!(%conversation, %error, "reading the conversation's agent");
                None
            }
        };
        let record = match &agent {
            Some(id) => self.store.agent(id).await.ok().flatten(),
            None => None,
        };
        let system_prompt = record
            .as_ref()
            .and_then(|record| record.system_prompt())
            .unwrap_or(&self.options.system_prompt)
            .to_owned();
        let turn = history
            .iter()
            .filter(|m| m.message.kind == MessageKind::User)
            .count() as u64;
        let context = CallContext {
            authority: self.options.authority.clone(),
            conversation: Some(conversation.clone()),
            agent,
            turn: Some(turn),
            ..CallContext::default()
        };
        TurnIdentity {
            context,
            system_prompt,
        }
    }

    /// Which loaded groups a turn on `history` lists as tools.
    fn listed(&self, history: &[StoredMessage]) -> Listed {
        match self.options.loaded_schemas {
            LoadedSchemas::ToolList => Listed::Active,
            LoadedSchemas::Conversation => {
                let catalog = self.toolbox.catalog();
                Listed::Fixed(self.listed_set(history, &catalog))
            }
        }
    }

    /// The loads whose tools a request on `history` lists: every load
    /// ([`LoadedSchemas::ToolList`]), or a compaction's snapshot, without
    /// the loads since, the model's or the router's
    /// ([`LoadedSchemas::Conversation`]).
    pub(crate) fn listed_set(&self, history: &[StoredMessage], catalog: &Catalog) -> ActiveToolSet {
        let messages = history.iter().map(|m| &m.message);
        match self.options.loaded_schemas {
            LoadedSchemas::ToolList => restore_active_set(messages, catalog).active,
            LoadedSchemas::Conversation => {
                restore_active_set(messages.filter(|message| !is_load(message)), catalog).active
            }
        }
    }

    /// The conversation's tools rebuilt from history, with the tools they
    /// show made known (a restored group's MCP server is started).
    async fn restore(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
    ) -> SessionTools {
        let (tools, skipped) = {
            let catalog = self.toolbox.catalog();
            SessionTools::restore(history.iter().map(|m| &m.message), &catalog)
        };
        for skipped in &skipped {
            tracing::info!(%conversation, index = skipped.index, reason = ?skipped.reason, "history event skipped");
        }
        self.toolbox.prepare_visible(&tools.active).await;
        tools
    }

    /// The model request of `turn` over `history`: every tool but the
    /// meta-tools and the base prompt when the turn sends them whole; else
    /// the tools it lists (with the rest of the catalog after them when it
    /// sees the whole catalog) and the prompt with the group listing.
    fn request(&self, turn: &Turn, history: &[StoredMessage]) -> Request {
        let catalog = self.toolbox.catalog();
        let (system, definitions) = match turn.mode {
            Mode::Whole => (turn.system.clone(), whole_tools(&catalog)),
            Mode::Deferred => (
                system_prompt(&turn.system, &catalog),
                self.deferred_tools(turn, &catalog),
            ),
        };
        let tool_tokens = definitions.iter().map(|d| self.schema_tokens(d)).sum();
        let request = ChatRequest {
            system,
            messages: chat_messages_with(
                history.iter().map(|m| &m.message),
                self.options.loaded_schemas,
            ),
            tools: definitions.iter().map(|d| tool_spec(d)).collect(),
        };
        Request {
            request,
            tools_sent: definitions.len(),
            tool_tokens,
        }
    }

    /// The tools a deferred turn sends: those it lists; when it sees the
    /// whole catalog, the loaded ones keep their place (a cache-friendly
    /// prefix) and every other tool follows, as many as the model takes.
    fn deferred_tools<'c>(&self, turn: &Turn, catalog: &'c Catalog) -> Vec<&'c ToolDefinition> {
        let definitions = turn.listed().definitions(catalog);
        if turn.visibility != Visibility::Catalog {
            return definitions;
        }
        let cost = |definition: &ToolDefinition| self.schema_tokens(definition);
        whole_catalog(
            catalog,
            definitions,
            &turn.ranked,
            self.model.tool_limits(),
            &cost,
        )
    }

    /// How the tools reach the model now: deferred, or every tool sent,
    /// by [`AgentOptions::deferral`](crate::AgentOptions::deferral) for the
    /// catalog as it is, the model's context window and its tool limit.
    /// Counted once per catalog revision.
    pub fn delivery(&self) -> Delivery {
        let catalog = self.toolbox.catalog();
        let mut kept = self
            .delivery
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((revision, delivery)) = *kept
            && revision == catalog.revision()
        {
            return delivery;
        }
        let tools = whole_tools(&catalog);
        let tokens = tools.iter().map(|d| self.schema_tokens(d)).sum();
        let delivery = self.options.deferral.decide(
            tools.len(),
            tokens,
            self.model.context_window(),
            self.model.tool_limits().tools,
        );
        *kept = Some((catalog.revision(), delivery));
        delivery
    }

    /// Tokens of one tool's schema: as the router counted them for its
    /// budget when it did (once, at start-up), else counted now.
    pub(crate) fn schema_tokens(&self, definition: &ToolDefinition) -> usize {
        let counted = self
            .options
            .router
            .as_ref()
            .and_then(|router| router.costs())
            .map_or(0, |costs| costs.tool(definition.name.as_str()));
        if counted > 0 {
            counted
        } else {
            self.counter.tool(definition)
        }
    }

    fn catalog_cost(&self) -> CatalogCost {
        let catalog = self.toolbox.catalog();
        let tools: Vec<&ToolDefinition> = catalog.tools().map(|tool| tool.definition).collect();
        CatalogCost {
            tools: tools.len(),
            tokens: self.counter.tools(tools),
        }
    }
}

impl Turn {
    /// The loaded groups the requests list as tools.
    pub(crate) fn listed(&self) -> &ActiveToolSet {
        match &self.listed {
            Listed::Active => &self.tools.active,
            Listed::Fixed(listed) => listed,
        }
    }

    /// Where a load of `group` puts its schemas: in the conversation,
    /// unless the requests list the whole group already.
    pub(crate) fn loaded_schemas_of(&self, catalog: &Catalog, group: &GroupId) -> LoadedSchemas {
        let no_tokens = |_: &ToolDefinition| 0;
        self.listed
            .meta_host(LoadBudget::Unlimited, None, &no_tokens)
            .placement(catalog, group)
    }
}

impl Listed {
    /// How the meta-tools answer for requests that list these loads, within
    /// `budget` and, one load, `load_limit`, each tool's schema counted by
    /// `tokens`.
    pub(crate) fn meta_host<'a>(
        &'a self,
        budget: LoadBudget,
        load_limit: Option<usize>,
        tokens: &'a (dyn Fn(&ToolDefinition) -> usize + Sync),
    ) -> MetaHost<'a> {
        let (schemas, listed) = match self {
            Self::Active => (LoadedSchemas::ToolList, None),
            Self::Fixed(listed) => (LoadedSchemas::Conversation, Some(listed)),
        };
        MetaHost {
            schemas,
            listed,
            budget,
            load_limit,
            tokens,
        }
    }
}

/// Whether `message` is a load: the model's own `load_tool_group` call, or
/// a host's load (a system message, the router's pre-load).
fn is_load(message: &Message) -> bool {
    matches!(message.kind, MessageKind::ToolCall | MessageKind::System)
        && message.tool_name.as_deref() == Some(LOAD_TOOL_GROUP_TOOL_NAME)
}

/// The whole catalog's tools for one request: the `active` ones first, as
/// they are, then every other tool. When the model takes fewer tools, or
/// fewer tokens of them (`limits`; each tool's tokens by `cost`), the others
/// come group by group, the groups in `ranked` (the router's order, most
/// likely first) before the rest in catalog order, each tool while it fits
/// (one that does not is passed over for the cheaper ones after it); the
/// listing still names every group, so what is left out is a
/// `load_tool_group` away. The active tools are never cut: a set the model
/// cannot take is the provider's error to report.
fn whole_catalog<'c>(
    catalog: &'c Catalog,
    active: Vec<&'c ToolDefinition>,
    ranked: &[GroupId],
    limits: ToolLimits,
    cost: &dyn Fn(&ToolDefinition) -> usize,
) -> Vec<&'c ToolDefinition> {
    let shown: HashSet<&str> = active.iter().map(|d| d.name.as_str()).collect();
    // Each other tool with its tokens.
    let mut rest: Vec<(CatalogTool<'c>, usize)> = catalog
        .tools()
        .filter(|tool| !shown.contains(tool.definition.name.as_str()))
        .map(|tool| (tool, cost(tool.definition)))
        .collect();
    let mut definitions = active;
    let mut tokens: usize = definitions.iter().map(|d| cost(d)).sum();
    let all_tokens = tokens + rest.iter().map(|(_, tokens)| tokens).sum::<usize>();
    if limits.admit(definitions.len() + rest.len(), all_tokens) {
        // In catalog order: the same prefix turn after turn.
        definitions.extend(rest.into_iter().map(|(tool, _)| tool.definition));
        return definitions;
    }
    let places: HashMap<&GroupId, usize> = ranked
        .iter()
        .enumerate()
        .map(|(place, group)| (group, place))
        .collect();
    // A stable sort: catalog order within a group and among the groups the
    // ranking does not name.
    rest.sort_by_key(|(tool, _)| {
        tool.group
            .and_then(|group| places.get(group).copied())
            .unwrap_or(ranked.len())
    });
    for (tool, tool_tokens) in rest {
        if limits.tools.is_some_and(|limit| definitions.len() >= limit) {
            break;
        }
        if limits.admit(definitions.len() + 1, tokens + tool_tokens) {
            tokens += tool_tokens;
            definitions.push(tool.definition);
        }
    }
    definitions
}

/// Every tool of `catalog` a turn that sends them all sends: all but the
/// meta-tools, in catalog order.
pub(crate) fn whole_tools(catalog: &Catalog) -> Vec<&ToolDefinition> {
    catalog
        .tools()
        .filter(|tool| tool.kind() != ToolKind::Meta)
        .map(|tool| tool.definition)
        .collect()
}

/// A tool definition as a provider receives it.
pub(crate) fn tool_spec(definition: &ToolDefinition) -> ToolSpec {
    ToolSpec {
        name: definition.name.to_string(),
        description: definition.description.clone(),
        input_schema: Value::Object(definition.input_schema.clone()),
    }
}
