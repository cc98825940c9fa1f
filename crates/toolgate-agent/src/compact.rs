//! Compaction: a conversation grown too long is replaced, for the model, by a
//! summary the model writes itself.
//!
//! Before a model call whose input would pass [`Compaction::AboveTokens`]
//! (counted with the agent's tokenizer: the system prompt, the conversation
//! and the tool schemas), the loop sends the conversation once more with
//! [`COMPACTION_PROMPT`] as the last user message, and stores the answer as
//! one compaction record carrying the loaded groups
//! ([`Message::compaction`]). From then on the model reads the summary and
//! what came after it; the loaded groups are the record's snapshot plus the
//! loads after it, so the tool list is the one the model had. Nothing before
//! the record is deleted.
//!
//! The record is written by [`ConversationStore::append_after`], in one
//! transaction and only behind the message the summary covers: a process
//! stopped while the summary is written leaves the conversation untouched,
//! and one stopped after has it compacted. A summary that fails (the model
//! call fails, or it answers with tool calls or nothing) leaves the
//! conversation as it was, and the turn goes on uncompacted: the provider
//! may still take it, and if not, its refusal is the turn's error. So does
//! a summary that would not shrink the conversation, or would itself pass
//! the threshold (counted as the threshold is): a compaction only ever
//! makes what the model reads smaller, whatever the model answers. A turn
//! compacts at most once, and only once the model has answered since the
//! last compaction.

use tokio_util::sync::CancellationToken;
use toolgate_core::{
    COMPACTION_PROMPT, COMPACTION_SUMMARY_HEADING, Message, MessageKind, Mode, restore_active_set,
    system_prompt,
};
use toolgate_llm::{ChatMessage, ChatRequest, StreamEvent};
use toolgate_store::{AgentStore, ConversationId, ConversationStore, StoredMessage};

use crate::agent::{Agent, AgentError};
use crate::compaction::{CompactError, Compacted, Compaction, Context};
use crate::event::{TurnEvent, TurnEvents};
use crate::transcript::chat_messages_with;
use crate::turn::{tool_spec, whole_tools};

/// Whether `history` has anything a summary would replace: a message after
/// its last compaction record.
fn has_uncompacted(history: &[StoredMessage]) -> bool {
    history
        .last()
        .is_some_and(|last| last.message.kind != MessageKind::Compaction)
}

/// Whether the model has answered since `history`'s last compaction record
/// (text or tool calls): what the loop needs before it compacts by itself,
/// so that a summary followed only by the user's words (a long message, or
/// a turn cut short before the model answered) is not summarized again.
fn model_answered_since_compaction(history: &[StoredMessage]) -> bool {
    history
        .iter()
        .rev()
        .map(|m| m.message.kind)
        .take_while(|kind| *kind != MessageKind::Compaction)
        .any(|kind| matches!(kind, MessageKind::Assistant | MessageKind::ToolCall))
}

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// Compacts the conversation now, whatever its length: the model
    /// summarizes it, and the summary with the loaded groups is stored as
    /// one record the next turn starts from. A call left without a result
    /// (an interrupted turn) gets its error result first, as a turn would
    /// give it. On an error the conversation is as it was.
    pub async fn compact(
        &self,
        conversation: &ConversationId,
        cancel: &CancellationToken,
    ) -> Result<Compacted, CompactError> {
        self.settle_interrupted(conversation).await?;
        let history = self.store.messages(conversation).await?;
        let context = self.context(conversation, &history).await;
        self.compact_history(conversation, &history, context, cancel)
            .await
    }

    /// Before a turn's user message `text` is stored: compacts the
    /// conversation if with `text` it would pass the threshold, so the new
    /// request comes after the summary. Returns whether it tried.
    pub(crate) async fn compact_before_turn(
        &self,
        conversation: &ConversationId,
        text: &str,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        if let Compaction::Off = self.options.compaction {
            return Ok(false);
        }
        let history = self.store.messages(conversation).await?;
        if !model_answered_since_compaction(&history) {
            return Ok(false);
        }
        let context = self.context(conversation, &history).await;
        let tokens = context.tokens(&self.counter) + self.counter.count(text);
        if !self.compaction_due(tokens) {
            return Ok(false);
        }
        self.compact_reporting(conversation, &history, context, events, cancel)
            .await?;
        Ok(true)
    }

    /// Within a turn, before a model call of `context` on `history`:
    /// compacts if the call would pass the threshold. Returns whether the
    /// conversation was compacted.
    pub(crate) async fn compact_if_due(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
        context: Context,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        if !model_answered_since_compaction(history)
            || !self.compaction_due(context.tokens(&self.counter))
        {
            return Ok(false);
        }
        self.compact_reporting(conversation, history, context, events, cancel)
            .await
    }

    /// Compacts, telling `events` how it went; a failed summary is reported
    /// and the turn goes on. Returns whether the conversation was compacted.
    async fn compact_reporting(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
        context: Context,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        match self
            .compact_history(conversation, history, context, cancel)
            .await
        {
            Ok(compacted) => {
                events(TurnEvent::Compacted(compacted));
                Ok(true)
            }
            Err(CompactError::Store(error)) => Err(AgentError::Store(error)),
            Err(CompactError::Cancelled) => Err(AgentError::Cancelled),
            Err(
                error @ (CompactError::NothingToCompact
                | CompactError::Model(_)
                | CompactError::NoSummary
                | CompactError::NotSmaller { .. }
                | CompactError::PastThreshold { .. }
                | CompactError::Changed),
            ) => {
                tracing::warn!(%conversation, %error, "compaction failed; the turn goes on uncompacted");
                events(TurnEvent::CompactionFailed {
                    reason: error.to_string(),
                });
                Ok(false)
            }
        }
    }

    /// Whether a request of `tokens` input tokens is past the threshold.
    fn compaction_due(&self, tokens: usize) -> bool {
        self.threshold().is_some_and(|limit| tokens > limit)
    }

    /// The threshold in input tokens for this agent's model; `None` when
    /// the loop never compacts by itself.
    fn threshold(&self) -> Option<usize> {
        self.options
            .compaction
            .threshold(self.model.context_window())
    }

    /// What a model call on `history` would be sent outside a turn: the
    /// conversation's base prompt with the group listing, its messages, and
    /// the tools its requests list (every tool, and no listing, when the
    /// agent sends them all).
    pub(crate) async fn context(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
    ) -> Context {
        let identity = self.identity(conversation, history).await;
        let whole = self.delivery().mode == Mode::Whole;
        let catalog = self.toolbox.catalog();
        let (definitions, system) = if whole {
            (whole_tools(&catalog), identity.system_prompt)
        } else {
            let listed = self.listed_set(history, &catalog);
            let system = system_prompt(&identity.system_prompt, &catalog);
            (listed.definitions(&catalog), system)
        };
        Context {
            system,
            messages: chat_messages_with(
                history.iter().map(|m| &m.message),
                self.options.loaded_schemas,
            ),
            tools: definitions.iter().map(|d| tool_spec(d)).collect(),
            tool_tokens: definitions.iter().map(|d| self.schema_tokens(d)).sum(),
        }
    }

    /// Has the model summarize `history` (sent as `context`) and stores the
    /// summary with the loaded groups behind its last message.
    async fn compact_history(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
        context: Context,
        cancel: &CancellationToken,
    ) -> Result<Compacted, CompactError> {
        if !has_uncompacted(history) {
            return Err(CompactError::NothingToCompact);
        }
        let tokens_before = context.tokens(&self.counter);
        let mut messages = context.messages;
        messages.push(ChatMessage::User(COMPACTION_PROMPT.to_owned()));
        let request = ChatRequest {
            system: context.system,
            messages,
            // The same tools: a provider refuses tool calls in a conversation
            // that offers no tools, and the cached prefix stays the same.
            tools: context.tools,
        };
        // The summary is not the turn's answer: its text is not streamed out.
        let mut sink = |_: StreamEvent| {};
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CompactError::Cancelled),
            response = self.model.complete(&request, &mut sink) => response?,
        };
        let summary = response.text.trim();
        if summary.is_empty() || !response.tool_calls.is_empty() {
            return Err(CompactError::NoSummary);
        }
        // What the model would read after it, checked before anything is
        // stored: a summary that does not shrink the conversation, or that
        // the next call would compact again, is refused.
        let after = Context {
            system: request.system,
            messages: vec![ChatMessage::User(format!(
                "{COMPACTION_SUMMARY_HEADING}\n{summary}"
            ))],
            tools: Vec::new(),
            tool_tokens: context.tool_tokens,
        };
        let tokens_after = after.tokens(&self.counter);
        if tokens_after >= tokens_before {
            return Err(CompactError::NotSmaller {
                before: tokens_before,
                after: tokens_after,
            });
        }
        if let Some(threshold) = self.threshold()
            && tokens_after > threshold
        {
            return Err(CompactError::PastThreshold {
                after: tokens_after,
                threshold,
            });
        }
        let active = {
            let catalog = self.toolbox.catalog();
            restore_active_set(history.iter().map(|m| &m.message), &catalog).active
        };
        let last = history.last().map(|stored| stored.id);
        let record = Message::compaction(summary, &active);
        if self
            .store
            .append_after(conversation, last, record)
            .await?
            .is_none()
        {
            return Err(CompactError::Changed);
        }
        Ok(Compacted {
            summary: summary.to_owned(),
            loaded_groups: active.loaded_groups().to_vec(),
            tokens_before,
            tokens_after,
            usage: response.usage,
        })
    }
}
