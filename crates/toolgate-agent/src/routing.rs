//! Routing in the turn loop (seed 004): before the first model call the
//! router's decision pre-loads the groups its tier shows (recorded in
//! history like any load) or opens the whole catalog for the turn; a
//! restricted turn that makes no progress escalates to the whole catalog.

use toolgate_core::Message;
use toolgate_core::routing::{Router, Visible};
use toolgate_store::{AgentStore, ConversationStore, StoredMessage};

use crate::agent::{Agent, AgentError};
use crate::event::{TurnEvent, TurnEvents};
use crate::progress::CallOutcome;
use crate::turn::{Scope, Turn};

/// Earlier user turns the router reads as context.
const ROUTING_CONTEXT_TURNS: usize = 3;

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// Routes the user's turn: pre-loads the groups its tier shows (recorded
    /// in history, so later turns restore them) or opens the whole catalog
    /// for this turn.
    pub(crate) async fn route(
        &self,
        router: &Router,
        turn: &mut Turn,
        text: &str,
        history: &[StoredMessage],
        events: TurnEvents<'_>,
    ) -> Result<Scope, AgentError> {
        let earlier: Vec<&str> = history
            .iter()
            .filter(|m| m.message.kind == toolgate_core::MessageKind::User)
            .map(|m| m.message.content.as_str())
            .collect();
        let context = &earlier[earlier.len().saturating_sub(ROUTING_CONTEXT_TURNS)..];
        let scores = match &self.options.semantic {
            Some(semantic) => semantic.scores(router, text, context).await,
            None => router.scores(text, context),
        };
        let decision = router.decide(&scores);
        let scope = match &decision.visible {
            Visible::Catalog => Scope::Catalog,
            Visible::Groups(groups) => {
                for group in groups {
                    if turn.active.is_loaded(group.as_str()) {
                        continue;
                    }
                    if let Err(error) = self.toolbox.prepare(group.as_str()).await {
                        tracing::warn!(%group, %error, "a routed group is unavailable");
                        continue;
                    }
                    let loaded = {
                        let catalog = self.toolbox.catalog();
                        turn.active.load(&catalog, group.as_str()).is_ok()
                    };
                    if loaded {
                        let note = format!(
                            "Routed ({} tier, confidence {:.2}): loaded group '{group}'.",
                            decision.tier, decision.confidence
                        );
                        self.store
                            .append(
                                &turn.conversation,
                                Message::group_loaded_by_host(group, note),
                            )
                            .await?;
                    }
                }
                Scope::Active
            }
        };
        events(TurnEvent::Routed(decision));
        Ok(scope)
    }

    /// After a response's tool calls: a restricted, routed turn that makes
    /// no progress sees the whole catalog from now on.
    pub(crate) async fn check_progress(
        &self,
        turn: &mut Turn,
        outcomes: &[CallOutcome],
        events: TurnEvents<'_>,
    ) -> Result<(), AgentError> {
        let (Some(router), Scope::Active) = (&self.options.router, turn.scope) else {
            return Ok(());
        };
        let Some(reason) = turn
            .progress
            .escalation(outcomes, router.taxonomy().no_progress)
        else {
            return Ok(());
        };
        turn.scope = Scope::Catalog;
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
