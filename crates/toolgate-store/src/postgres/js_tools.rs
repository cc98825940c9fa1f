//! The JavaScript tools agents write, in the `js_tools` table.

use serde_json::Value;
use toolgate_core::ToolName;

use super::PostgresStore;
use super::rows::{postgres_error, read_js_tool_row};
use crate::agent::StoreFuture;
use crate::conversation::{now_millis, to_millis};
use crate::error::Result;
use crate::js_tool::{JS_TOOL_COLUMNS, JsToolRecord, JsToolStore, ToolOwner};

impl PostgresStore {
    /// The owner's tool `name` as stored, if any.
    async fn read_js_tool(
        &self,
        owner: &ToolOwner,
        name: &ToolName,
    ) -> Result<Option<JsToolRecord>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = $1 AND name = $2"),
                &[&owner.as_str(), &name.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        row.map(|row| read_js_tool_row(&row)?.decode()).transpose()
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
        Box::pin(self.read_js_tool(owner, name))
    }

    fn create_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let client = self.client().await?;
            let inserted = client
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
            drop(client);
            if inserted == 0 {
                return Ok(None);
            }
            self.read_js_tool(&tool.owner, &tool.name).await
        })
    }

    fn update_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let client = self.client().await?;
            let updated = client
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
            drop(client);
            if updated == 0 {
                return Ok(None);
            }
            self.read_js_tool(&tool.owner, &tool.name).await
        })
    }

    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await?;
            let deleted = client
                .execute(
                    "DELETE FROM js_tools WHERE owner = $1 AND name = $2",
                    &[&owner.as_str(), &name.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            Ok(deleted > 0)
        })
    }
}
