//! The JavaScript tools agents write, in the `js_tools` table, and each
//! owner's revision in `js_tool_revisions`, raised (and the change
//! announced to the other processes) in the transaction of every change.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use tokio::sync::broadcast;
use toolgate_core::ToolName;

use super::rows::{postgres_error, read_js_tool_row};
use super::{JS_TOOLS_CHANNEL, PostgresStore};
use crate::agent::StoreFuture;
use crate::conversation::{now_millis, to_millis};
use crate::error::Result;
use crate::js_tool::{JS_TOOL_COLUMNS, JsToolRecord, JsToolStore, ToolOwner};

/// The owner's tool `name` as `client` reads it, if any.
async fn read_js_tool(
    client: &impl GenericClient,
    owner: &ToolOwner,
    name: &ToolName,
) -> Result<Option<JsToolRecord>> {
    let row = client
        .query_opt(
            &format!("SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = $1 AND name = $2"),
            &[&owner.as_str(), &name.as_str()],
        )
        .await
        .map_err(postgres_error)?;
    row.map(|row| read_js_tool_row(&row)?.decode()).transpose()
}

impl PostgresStore {
    /// Raises the revision of `owner`'s tools and announces the change to
    /// the other processes, in the transaction that changes them (the
    /// announcement goes out when it commits).
    async fn raise_js_tools_revision(
        &self,
        client: &impl GenericClient,
        owner: &ToolOwner,
    ) -> Result<()> {
        client
            .execute(
                "INSERT INTO js_tool_revisions (owner, revision) VALUES ($1, 1)
                 ON CONFLICT (owner) DO UPDATE SET revision = js_tool_revisions.revision + 1",
                &[&owner.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        let payload = format!("{}\n{}", self.origin, owner.as_str());
        client
            .execute("SELECT pg_notify($1, $2)", &[&JS_TOOLS_CHANNEL, &payload])
            .await
            .map_err(postgres_error)?;
        Ok(())
    }
}

impl JsToolStore for PostgresStore {
    fn js_tools<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, Vec<JsToolRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = $1 ORDER BY name"
                    ),
                    &[&owner.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            rows.iter()
                .map(|row| read_js_tool_row(row)?.decode())
                .collect()
        })
    }

    fn js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, Option<JsToolRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            read_js_tool(&client, owner, name).await
        })
    }

    fn js_tools_revision<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT revision FROM js_tool_revisions WHERE owner = $1",
                    &[&owner.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            let revision: i64 = match row {
                Some(row) => row.try_get(0).map_err(postgres_error)?,
                None => 0,
            };
            Ok(revision as u64)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn js_tool_changes(&self) -> Option<broadcast::Receiver<ToolOwner>> {
        Some(self.js_tool_changes.subscribe())
    }

    fn create_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let inserted = transaction
                .execute(
                    "INSERT INTO js_tools (owner, name, description, input_schema, function, source,
                                           created_ms, updated_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
                     ON CONFLICT (owner, name) DO NOTHING",
                    &[
                        &tool.owner.as_str(),
                        &tool.name.as_str(),
                        &tool.description,
                        &schema,
                        &tool.function,
                        &tool.source,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            if inserted == 0 {
                return Ok(None);
            }
            self.raise_js_tools_revision(&transaction, &tool.owner)
                .await?;
            let created = read_js_tool(&transaction, &tool.owner, &tool.name).await?;
            transaction.commit().await.map_err(postgres_error)?;
            Ok(created)
        })
    }

    fn update_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let updated = transaction
                .execute(
                    "UPDATE js_tools SET description = $3, input_schema = $4, function = $5,
                                         source = $6, updated_ms = $7
                     WHERE owner = $1 AND name = $2",
                    &[
                        &tool.owner.as_str(),
                        &tool.name.as_str(),
                        &tool.description,
                        &schema,
                        &tool.function,
                        &tool.source,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            if updated == 0 {
                return Ok(None);
            }
            self.raise_js_tools_revision(&transaction, &tool.owner)
                .await?;
            let updated = read_js_tool(&transaction, &tool.owner, &tool.name).await?;
            transaction.commit().await.map_err(postgres_error)?;
            Ok(updated)
        })
    }

    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let deleted = transaction
                .execute(
                    "DELETE FROM js_tools WHERE owner = $1 AND name = $2",
                    &[&owner.as_str(), &name.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            if deleted > 0 {
                self.raise_js_tools_revision(&transaction, owner).await?;
            }
            transaction.commit().await.map_err(postgres_error)?;
            Ok(deleted > 0)
        })
    }
}
