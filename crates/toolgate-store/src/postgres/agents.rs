//! Stored agents, and the agent each conversation uses.

use super::PostgresStore;
use super::rows::{postgres_error, read_agent};
use crate::agent::{AgentRecord, AgentStore, StoreFuture};
use crate::conversation::{now_millis, to_millis};
use crate::error::StoreError;
use crate::id::{AgentId, ConversationId};

impl AgentStore for PostgresStore {
    fn agent<'a>(&'a self, id: &'a AgentId) -> StoreFuture<'a, Option<AgentRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT id, name, prompts, tools FROM agents WHERE id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            row.map(|row| read_agent(&row)?.decode()).transpose()
        })
    }

    fn save_agent(&self, agent: AgentRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let prompts = serde_json::to_string(&agent.prompts).unwrap_or_else(|_| "{}".into());
            let tools = serde_json::to_string(&agent.tools).unwrap_or_else(|_| "[]".into());
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO agents (id, name, prompts, tools, updated_ms) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (id) DO UPDATE SET name = excluded.name, prompts = excluded.prompts,
                         tools = excluded.tools, updated_ms = excluded.updated_ms",
                    &[
                        &agent.id.as_str(),
                        &agent.name,
                        &prompts,
                        &tools,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            Ok(())
        })
    }

    fn agents(&self) -> StoreFuture<'_, Vec<AgentRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, name, prompts, tools FROM agents ORDER BY id",
                    &[],
                )
                .await
                .map_err(postgres_error)?;
            rows.iter().map(|row| read_agent(row)?.decode()).collect()
        })
    }

    fn set_conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
        agent: &'a AgentId,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let known = transaction
                .query_opt("SELECT 1 FROM agents WHERE id = $1", &[&agent.as_str()])
                .await
                .map_err(postgres_error)?
                .is_some();
            if !known {
                return Err(StoreError::UnknownAgent(agent.clone()));
            }
            transaction
                .execute(
                    "INSERT INTO conversations (id, created_ms, active_ms, agent_id) VALUES ($1, $2, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id",
                    &[&conversation.as_str(), &to_millis(now_millis()), &agent.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            transaction.commit().await.map_err(postgres_error)
        })
    }

    fn conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
    ) -> StoreFuture<'a, Option<AgentId>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT agent_id FROM conversations WHERE id = $1",
                    &[&conversation.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            let agent: Option<String> = row.and_then(|row| row.get(0));
            Ok(agent.map(AgentId::new))
        })
    }
}
