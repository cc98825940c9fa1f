//! Conversations and their messages; changes announced to the other
//! processes.

use std::time::SystemTime;

use tokio::sync::broadcast;
use toolgate_core::{Message, MessageKind, ToolStatus};

use super::rows::{MESSAGE_COLUMNS, postgres_error, read_message};
use super::{CHANNEL, EXPIRY_LOCK, PostgresStore};
use crate::conversation::{StoredMessage, now_millis, to_millis};
use crate::error::Result;
use crate::id::{ConversationId, MessageId};
use crate::store::ConversationStore;

impl ConversationStore for PostgresStore {
    async fn append(&self, conversation: &ConversationId, message: Message) -> Result<MessageId> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(postgres_error)?;
        let id = insert_message(&transaction, conversation, &message).await?;
        transaction.commit().await.map_err(postgres_error)?;
        Ok(id)
    }

    async fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> Result<Option<MessageId>> {
        let now = to_millis(now_millis());
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(postgres_error)?;
        // The conversation's row, created if new and locked until the commit:
        // every append writes it first, so none comes between the check and
        // the insert.
        transaction
            .execute(
                "INSERT INTO conversations (id, created_ms, active_ms) VALUES ($1, $2, $2)
                 ON CONFLICT (id) DO UPDATE SET active_ms = excluded.active_ms",
                &[&conversation.as_str(), &now],
            )
            .await
            .map_err(postgres_error)?;
        let latest: Option<i64> = transaction
            .query_one(
                "SELECT max(id) FROM messages WHERE conversation_id = $1",
                &[&conversation.as_str()],
            )
            .await
            .map_err(postgres_error)?
            .get(0);
        if latest.map(MessageId) != last {
            transaction.rollback().await.map_err(postgres_error)?;
            return Ok(None);
        }
        let id = insert_message(&transaction, conversation, &message).await?;
        transaction.commit().await.map_err(postgres_error)?;
        Ok(Some(id))
    }

    async fn messages(&self, conversation: &ConversationId) -> Result<Vec<StoredMessage>> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 ORDER BY id"
            ))
            .await
            .map_err(postgres_error)?;
        let rows = client
            .query(&statement, &[&conversation.as_str()])
            .await
            .map_err(postgres_error)?;
        rows.iter().map(|row| read_message(row)?.decode()).collect()
    }

    async fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> Result<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE messages SET tool_status = $1 WHERE id = (
                     SELECT id FROM messages
                     WHERE conversation_id = $2 AND kind = $3 AND tool_call_id = $4
                     ORDER BY id DESC LIMIT 1)",
                &[
                    &status.as_str(),
                    &conversation.as_str(),
                    &MessageKind::ToolCall.as_str(),
                    &tool_call_id,
                ],
            )
            .await
            .map_err(postgres_error)?;
        Ok(changed == 1)
    }

    async fn touch(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE conversations SET active_ms = $2 WHERE id = $1",
                &[&conversation.as_str(), &to_millis(now_millis())],
            )
            .await
            .map_err(postgres_error)?;
        Ok(changed == 1)
    }

    async fn last_message_id(&self, conversation: &ConversationId) -> Result<Option<MessageId>> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached("SELECT max(id) FROM messages WHERE conversation_id = $1")
            .await
            .map_err(postgres_error)?;
        let row = client
            .query_one(&statement, &[&conversation.as_str()])
            .await
            .map_err(postgres_error)?;
        let id: Option<i64> = row.get(0);
        Ok(id.map(MessageId))
    }

    /// Several gateways share one database.
    fn is_shared(&self) -> bool {
        true
    }

    async fn announce_change(&self, conversation: &ConversationId) -> Result<()> {
        let payload = format!("{}\n{}", self.origin, conversation.as_str());
        let client = self.client().await?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
            .await
            .map_err(postgres_error)?;
        Ok(())
    }

    fn changes(&self) -> Option<broadcast::Receiver<ConversationId>> {
        Some(self.changes.subscribe())
    }

    async fn exists(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let found = client
            .query_opt(
                "SELECT 1 FROM conversations WHERE id = $1",
                &[&conversation.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        Ok(found.is_some())
    }

    async fn delete(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let deleted = client
            .execute(
                "DELETE FROM conversations WHERE id = $1",
                &[&conversation.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        Ok(deleted > 0)
    }

    /// Deletes the idle conversations, unless another process is doing it
    /// right now (then nothing, and 0): expiry runs once across replicas.
    async fn expire_idle(&self, cutoff: SystemTime) -> Result<usize> {
        let cutoff = to_millis(cutoff);
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(postgres_error)?;
        let locked: bool = transaction
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&EXPIRY_LOCK])
            .await
            .map_err(postgres_error)?
            .get(0);
        if !locked {
            return Ok(0);
        }
        let deleted = transaction
            .execute("DELETE FROM conversations WHERE active_ms < $1", &[&cutoff])
            .await
            .map_err(postgres_error)?;
        transaction.commit().await.map_err(postgres_error)?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}

/// Inserts `message` (and the conversation, if new) in `transaction`.
async fn insert_message(
    transaction: &tokio_postgres::Transaction<'_>,
    conversation: &ConversationId,
    message: &Message,
) -> Result<MessageId> {
    let now = to_millis(now_millis());
    transaction
        .execute(
            "INSERT INTO conversations (id, created_ms, active_ms) VALUES ($1, $2, $2)
             ON CONFLICT (id) DO UPDATE SET active_ms = excluded.active_ms",
            &[&conversation.as_str(), &now],
        )
        .await
        .map_err(postgres_error)?;
    let row = transaction
        .query_one(
            "INSERT INTO messages (conversation_id, kind, content, tool_call_id, tool_name,
                                   tool_input, tool_status, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &conversation.as_str(),
                &message.kind.as_str(),
                &message.content,
                &message.tool_call_id,
                &message.tool_name,
                &message.tool_input,
                &message.tool_status.map(ToolStatus::as_str),
                &now,
            ],
        )
        .await
        .map_err(postgres_error)?;
    Ok(MessageId(row.get(0)))
}
