//! [`Session`]: one terminal conversation with the agent, interactive or
//! one message at a time.

use std::fmt::Write as _;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{
    Agent, AgentError, CallReport, CompactError, TurnEnd, TurnEvent, TurnOutcome,
};
use toolgate_core::GroupSelection;
use toolgate_store::{AgentId, AgentStore, ConversationId, ConversationStore};
use toolgate_tools::Toolbox;

use super::printer::{Printer, action_table, compacted_line, token_table, turn_summary};
use crate::commands::partial_group::describe_partial;
use crate::output::{eprint, print};

/// One terminal conversation.
pub(super) struct Session<S> {
    pub(super) agent: Agent<S>,
    /// The stored agent every conversation here belongs to.
    pub(super) agent_id: AgentId,
    pub(super) toolbox: Arc<Toolbox>,
    pub(super) conversation: ConversationId,
    /// Every model call since the conversation was opened here.
    pub(super) reports: Vec<CallReport>,
}

impl<S: ConversationStore + AgentStore> Session<S> {
    /// Makes the conversation the agent's, unless it already has an agent
    /// (a resumed conversation keeps its own).
    pub(super) async fn bind_agent(&self) -> anyhow::Result<()> {
        let store = self.agent.store();
        if store
            .conversation_agent(&self.conversation)
            .await?
            .is_none()
        {
            store
                .set_conversation_agent(&self.conversation, &self.agent_id)
                .await?;
        }
        Ok(())
    }

    pub(super) async fn one_shot(&mut self, text: &str) -> anyhow::Result<()> {
        let outcome = self.turn(Some(text)).await?;
        if outcome.end == TurnEnd::CallLimit {
            bail!("the model was still calling tools when the model-call limit was reached");
        }
        Ok(())
    }

    pub(super) async fn interactive(&mut self, mut banner: String) -> anyhow::Result<()> {
        let _ = writeln!(banner, "  tools: {}", self.agent.delivery().explained());
        let _ = writeln!(
            banner,
            "Conversation {id} (resume it with --conversation {id}).\n\
             Commands: /groups  /tokens  /compact  /clear  /resume  /exit",
            id = self.conversation
        );
        eprint(&banner);
        if self.agent.is_unfinished(&self.conversation).await? {
            eprint(
                "The last turn stopped before the model answered: send a message to go on, \
                 or /resume to let the model finish it.\n",
            );
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        loop {
            eprint("> ");
            let Some(line) = lines.next_line().await.context("reading stdin")? else {
                eprint("\n");
                return Ok(());
            };
            let line = line.trim();
            let result = match line {
                "" => continue,
                "/exit" | "/quit" => return Ok(()),
                "/groups" => self.print_groups().await,
                "/tokens" => {
                    print(&token_table(&self.reports));
                    print(&action_table(&self.toolbox.action_calls()));
                    Ok(())
                }
                "/clear" => {
                    self.conversation = ConversationId::new(new_conversation_id());
                    self.reports.clear();
                    self.bind_agent().await?;
                    eprint(&format!(
                        "New conversation {}: core tools only.\n",
                        self.conversation
                    ));
                    Ok(())
                }
                "/resume" => self.turn(None).await.map(|_| ()),
                "/compact" => self.compact().await,
                "/help" => {
                    eprint(HELP);
                    Ok(())
                }
                command if command.starts_with('/') => {
                    eprint(&format!("Unknown command {command}. {HELP}"));
                    Ok(())
                }
                text => self.turn(Some(text)).await.map(|_| ()),
            };
            if let Err(error) = result {
                eprint(&format!(
                    "error: {error:#}\nThe conversation is kept as far as it got.\n"
                ));
            }
        }
    }

    /// Runs a turn (`None`: finish the stored unfinished one), printing it as
    /// it happens. Ctrl-C cancels it.
    async fn turn(&mut self, text: Option<&str>) -> anyhow::Result<TurnOutcome> {
        let cancel = CancellationToken::new();
        let mut printer = Printer::default();
        let outcome = {
            let mut events = |event: TurnEvent| printer.show(event);
            let turn = async {
                match text {
                    Some(text) => {
                        self.agent
                            .send(&self.conversation, text, &mut events, &cancel)
                            .await
                    }
                    None => {
                        self.agent
                            .resume(&self.conversation, &mut events, &cancel)
                            .await
                    }
                }
            };
            tokio::pin!(turn);
            tokio::select! {
                outcome = &mut turn => outcome,
                _ = tokio::signal::ctrl_c() => {
                    cancel.cancel();
                    turn.await
                }
            }
        };
        printer.end_line();
        self.reports.extend(printer.reports.iter().cloned());
        match outcome {
            Ok(outcome) => {
                eprint(&turn_summary(&outcome.calls));
                if outcome.end == TurnEnd::CallLimit {
                    eprint("The turn stopped at the model-call limit (--max-model-calls).\n");
                }
                Ok(outcome)
            }
            Err(AgentError::Cancelled) => bail!("cancelled"),
            Err(error) => Err(error.into()),
        }
    }

    /// Compacts the conversation now (Ctrl-C cancels), whatever its length.
    async fn compact(&self) -> anyhow::Result<()> {
        let cancel = CancellationToken::new();
        let compaction = self.agent.compact(&self.conversation, &cancel);
        tokio::pin!(compaction);
        let compacted = tokio::select! {
            compacted = &mut compaction => compacted,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                compaction.await
            }
        };
        match compacted {
            Ok(compacted) => {
                eprint(&compacted_line(&compacted));
                Ok(())
            }
            Err(CompactError::NothingToCompact) => {
                eprint("Nothing to compact yet.\n");
                Ok(())
            }
            Err(error) => bail!("{error}; the conversation is as it was"),
        }
    }

    async fn print_groups(&self) -> anyhow::Result<()> {
        let active = self.agent.active_set(&self.conversation).await?;
        let mut out = String::new();
        let catalog = self.agent.toolbox().catalog();
        for group in catalog.groups() {
            let id = group.id.as_str();
            let (mark, name) = match active.selection(id) {
                Some(GroupSelection::Whole) => ("loaded", id.to_owned()),
                Some(GroupSelection::Tools(tools)) => (
                    "loaded",
                    describe_partial(id, &tools, catalog.group_tools(id).count()),
                ),
                None => ("      ", id.to_owned()),
            };
            let _ = writeln!(out, "  {mark}  {name}: {}", group.description);
        }
        drop(catalog);
        if active.loaded_groups().is_empty() {
            out.push_str("No group loaded: the model sees the core tools only.\n");
        }
        print(&out);
        Ok(())
    }
}

const HELP: &str = "/groups lists the groups (and which are loaded), /tokens the token report of \
each model call, /compact replaces the conversation so far by a summary the model writes (the \
loaded groups stay loaded), /clear starts a new conversation, /resume finishes an interrupted turn, /exit \
quits. Ctrl-C cancels the turn under way.\n";

pub(super) fn new_conversation_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("chat-{millis:x}-{:x}", std::process::id())
}
