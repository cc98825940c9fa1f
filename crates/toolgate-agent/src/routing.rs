//! Routing in the turn loop: before the first model call the
//! router's decision pre-loads the groups its tier shows (recorded in
//! history like any load), the groups it names with their best tools only
//! (`[routing] tools_per_group`), or opens the whole catalog for the turn; a
//! restricted turn that makes no progress escalates to the whole catalog.
//! Routed groups accumulate over a conversation's turns, so a pre-load that
//! would take a request past the model's tool limits is left out. With
//! `LoadedSchemas::Conversation` a pre-load joins no tool list: the model
//! reads it after the user's message, its text carrying the schemas.

use std::collections::HashSet;

use toolgate_core::routing::{Decision, Router, Visible};
use toolgate_core::{
    ActiveToolSet, Catalog, GroupId, GroupLoaded, GroupSelection, LoadedSchemas, Message,
    ToolDefinition, ToolName, ToolsLoaded,
};
use toolgate_llm::ToolLimits;
use toolgate_store::{AgentStore, ConversationStore, RoutingOutcome, StoredMessage};

use crate::agent::{Agent, AgentError};
use crate::event::{TurnEvent, TurnEvents};
use crate::progress::CallOutcome;
use crate::route_outcome::RouteOutcome;
use crate::turn::{Listed, Turn, Visibility};

/// Earlier user turns the router reads as context.
const ROUTING_CONTEXT_TURNS: usize = 3;

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// Routes the user's turn: pre-loads the groups its tier shows (recorded
    /// in history, so later turns restore them), partly those the decision
    /// names with their best tools, or opens the whole catalog for this turn.
    pub(crate) async fn route(
        &self,
        router: &Router,
        turn: &mut Turn,
        text: &str,
        history: &[StoredMessage],
        events: TurnEvents<'_>,
    ) -> Result<Visibility, AgentError> {
        let earlier: Vec<&str> = history
            .iter()
            .filter(|m| m.message.kind == toolgate_core::MessageKind::User)
            .map(|m| m.message.content.as_str())
            .collect();
        let context = &earlier[earlier.len().saturating_sub(ROUTING_CONTEXT_TURNS)..];
        // One pass over the turn unless an endpoint's scores replace the
        // router's own.
        let decision = match &self.options.semantic {
            Some(semantic) => {
                let scores = semantic.scores(router, text, context).await;
                router.route_scored(&scores, text, context)
            }
            None => router.route(text, context),
        };
        let scope = match &decision.visible {
            Visible::Catalog => Visibility::Catalog,
            Visible::Groups(groups) => {
                // What the requests carry: the listed groups.
                let mut carried = self.carried(turn.listed());
                for group in groups {
                    let tools = decision
                        .partial
                        .iter()
                        .find(|partial| partial.group == *group)
                        .map(|partial| partial.tools.as_slice());
                    self.preload(turn, group, tools, &decision, carried.as_mut())
                        .await?;
                }
                Visibility::Loaded
            }
        };
        turn.route = Some(RouteOutcome::new(&decision));
        turn.ranked = decision
            .ranked
            .iter()
            .map(|(group, _)| group.clone())
            .collect();
        events(TurnEvent::Routed(decision));
        Ok(scope)
    }

    /// At the end of a routed turn that used grouped tools, tells the
    /// router whether its groups held them and which it missed (its online
    /// calibration and learned recovery groups, when it has them, learn
    /// from it) and keeps the outcome in the outcome log.
    /// A log that cannot be written is logged: the turn is done either way.
    pub(crate) async fn record_route_outcome(&self, turn: &Turn) {
        let (Some(router), Some(outcome)) = (&self.options.router, &turn.route) else {
            return;
        };
        let Some(label) = outcome.label() else {
            return;
        };
        router.record_outcome(label.fitted_confidence, label.held);
        router.record_misses(&label.missed);
        if let Some(log) = &self.options.outcomes {
            let outcome = RoutingOutcome {
                fitted_confidence: label.fitted_confidence,
                held: label.held,
                missed: label.missed.iter().map(ToString::to_string).collect(),
            };
            if let Err(error) = log
                .store
                .record_routing_outcome(&log.catalog, outcome)
                .await
            {
                tracing::warn!(%error, "keeping a routing outcome");
            }
        }
    }

    /// What `active` carries, counted once a turn when the model has tool
    /// limits; `None` when it has none.
    fn carried(&self, active: &ActiveToolSet) -> Option<Carried> {
        let limits = self.model.tool_limits();
        if limits == ToolLimits::default() {
            return None;
        }
        let catalog = self.toolbox.catalog();
        let definitions = active.definitions(&catalog);
        Some(Carried {
            limits,
            tokens: definitions.iter().map(|d| self.schema_tokens(d)).sum(),
            names: definitions.iter().map(|d| d.name.to_string()).collect(),
        })
    }

    /// Pre-loads one routed group, whole or (with `tools`) partly, and
    /// records the load in history when it changed the active set. A group
    /// whose source fails to start is logged and left out, and so is one
    /// that would take what the turn `carried` past the model's limits.
    async fn preload(
        &self,
        turn: &mut Turn,
        group: &GroupId,
        tools: Option<&[ToolName]>,
        decision: &Decision,
        carried: Option<&mut Carried>,
    ) -> Result<(), AgentError> {
        if turn.tools.active.selection(group.as_str()) == Some(GroupSelection::Whole) {
            return Ok(());
        }
        if let Err(error) = self.toolbox.prepare(group.as_str()).await {
            tracing::warn!(%group, %error, "a routed group is unavailable");
            return Ok(());
        }
        let whole_note = || {
            format!(
                "Routed ({} tier, confidence {:.2}): loaded group '{group}'.",
                decision.tier, decision.confidence
            )
        };
        let event = {
            let catalog = self.toolbox.catalog();
            // What the model reads of the load: with schemas in the
            // conversation, the event's text, as its own load would answer.
            let shown = match turn.listed {
                Listed::Active => None,
                Listed::Fixed(_) => Some(turn.loaded_schemas_of(&catalog, group)),
            };
            // Loaded on a copy first: a load that would take the request past
            // what the model takes is left out (the listing still names the
            // group), as the budget leaves out a group that would break it.
            let mut active = turn.tools.active.clone();
            let event = load_routed(&mut active, &catalog, group, tools, shown, whole_note);
            // Only a load that joins the tool list adds to the request.
            let grows = matches!(turn.listed, Listed::Active);
            if let Some(carried) = carried.filter(|_| grows) {
                // Only the tools the load added to the request are counted.
                let added: Vec<&ToolDefinition> = active
                    .definitions(&catalog)
                    .into_iter()
                    .filter(|d| !carried.names.contains(d.name.as_str()))
                    .collect();
                let tools = carried.names.len() + added.len();
                let tokens =
                    carried.tokens + added.iter().map(|d| self.schema_tokens(d)).sum::<usize>();
                if !carried.limits.admit(tools, tokens) {
                    let limits = carried.limits;
                    tracing::info!(%group, tools, tokens, ?limits, "a routed group is left out: the model takes less");
                    return Ok(());
                }
                carried.tokens = tokens;
                carried
                    .names
                    .extend(added.iter().map(|d| d.name.to_string()));
            }
            turn.tools.active = active;
            event
        };
        if let Some(event) = event {
            self.store.append(&turn.conversation, event).await?;
        }
        Ok(())
    }

    /// After a response's tool calls: a restricted, routed turn that makes
    /// no progress sees the whole catalog from now on.
    pub(crate) async fn check_progress(
        &self,
        turn: &mut Turn,
        outcomes: &[CallOutcome],
        events: TurnEvents<'_>,
    ) -> Result<(), AgentError> {
        let (Some(router), Visibility::Loaded) = (&self.options.router, turn.visibility) else {
            return Ok(());
        };
        let Some(reason) = turn
            .progress
            .escalation(outcomes, router.taxonomy().no_progress)
        else {
            return Ok(());
        };
        turn.visibility = Visibility::Catalog;
        self.store
            .append(
                &turn.conversation,
                Message::system(format!("Escalated to the whole catalog: {reason}.")),
            )
            .await?;
        events(TurnEvent::Escalated { reason });
        Ok(())
    }
}

/// Loads routed `group` into `set`, whole or (with `tools`) partly: the
/// history event that records it when it changed the set. Its text is what
/// the model reads of the load: with every load shown (`shown`, where its
/// schemas go: the conversation, or the tool list for a group listed
/// anyway), the load's answer; otherwise the partial load's answer, and for
/// a whole load the host's note (`whole_note`), which the model does not
/// read.
fn load_routed(
    set: &mut ActiveToolSet,
    catalog: &Catalog,
    group: &GroupId,
    tools: Option<&[ToolName]>,
    shown: Option<LoadedSchemas>,
    whole_note: impl Fn() -> String,
) -> Option<Message> {
    let whole = |loaded: GroupLoaded<'_>| {
        let text = match shown {
            None => whole_note(),
            Some(schemas) => loaded.answer(schemas).to_string(),
        };
        Some(loaded.event()?.message(None, text))
    };
    let schemas = shown.unwrap_or(LoadedSchemas::ToolList);
    match tools {
        None => whole(set.load(catalog, group.as_str()).ok()?),
        Some(tools) => match set.load_tools(catalog, group.as_str(), tools).ok()? {
            ToolsLoaded::Whole(loaded) => whole(loaded),
            // What the model reads: the group has more tools.
            ToolsLoaded::Partial(loaded) => {
                let text = loaded.answer(schemas).to_string();
                Some(loaded.event()?.message(None, text))
            }
        },
    }
}

/// The tools a turn's requests carry so far, against the model's limits.
struct Carried {
    limits: ToolLimits,
    names: HashSet<String>,
    tokens: usize,
}
