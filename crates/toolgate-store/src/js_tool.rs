//! [`JsToolRecord`] and [`JsToolStore`]: the JavaScript tools agents write,
//! stored per owner beside the conversations (not in a manifest directory:
//! a tool an agent writes is data, like its prompts). Each owner's tools
//! have a revision, raised with every change, so processes sharing a store
//! can tell cheaply that another changed them.

use std::fmt;
use std::time::SystemTime;

use serde_json::{Map, Value};
use toolgate_core::ToolName;

use crate::agent::StoreFuture;
use crate::conversation::from_millis;
use crate::error::{Result, StoreError};

/// Whose tools these are: an agent's id (`toolgate chat`) or the owner a
/// gateway is configured with (`toolgate serve`). Each owner sees only its
/// own tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolOwner(String);

impl ToolOwner {
    /// Wraps an owner chosen by the caller.
    pub fn new(owner: impl Into<String>) -> Self {
        Self(owner.into())
    }

    /// The owner as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One JavaScript tool as stored: its definition and its source. Whoever
/// stores it has checked it (a valid name and schema, a source that
/// compiles and defines `function`); the store keeps what it is given.
#[derive(Clone, Debug, PartialEq)]
pub struct JsToolRecord {
    /// Whose tool it is.
    pub owner: ToolOwner,
    /// The name the model calls it by; unique per owner.
    pub name: ToolName,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Map<String, Value>,
    /// The function of `source` a call runs, with the arguments as one
    /// object.
    pub function: String,
    /// The script.
    pub source: String,
    /// When it was created (millisecond precision; set by the store).
    pub created: SystemTime,
    /// When it was last changed (millisecond precision; set by the store).
    pub updated: SystemTime,
}

impl JsToolRecord {
    /// A record to create or update; the store sets its times.
    pub fn new(
        owner: ToolOwner,
        name: ToolName,
        description: impl Into<String>,
        input_schema: Map<String, Value>,
        function: impl Into<String>,
        source: impl Into<String>,
    ) -> Self {
        Self {
            owner,
            name,
            description: description.into(),
            input_schema,
            function: function.into(),
            source: source.into(),
            created: SystemTime::UNIX_EPOCH,
            updated: SystemTime::UNIX_EPOCH,
        }
    }
}

/// Where the JavaScript tools agents write live. Object-safe, so tools can
/// hold an `Arc<dyn JsToolStore>` whatever the backend.
pub trait JsToolStore: Send + Sync + fmt::Debug {
    /// The owner's tools, by name.
    fn js_tools<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, Vec<JsToolRecord>>;

    /// The owner's tool `name`, if stored.
    fn js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, Option<JsToolRecord>>;

    /// The revision of the owner's tools: raised with every create, update
    /// and delete of one of them, in the same transaction, so a process
    /// holding what it read can tell, with one read by key, that another
    /// changed them. 0 for an owner whose tools never changed.
    fn js_tools_revision<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, u64>;

    /// Whether other processes may change these tools while this one runs
    /// (a database server, not a file this process owns): then what was
    /// read must be checked against [`Self::js_tools_revision`] before use.
    fn is_shared(&self) -> bool {
        false
    }

    /// The owners whose tools other processes changed, as they announce
    /// them, so a process can show the change before anyone asks; `None`
    /// for a store no one shares.
    fn js_tool_changes(&self) -> Option<tokio::sync::broadcast::Receiver<ToolOwner>> {
        None
    }

    /// Stores a new tool (created and updated now) and returns it as
    /// stored; `None` when its owner already has a tool of that name, which
    /// is left as it was.
    fn create_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>>;

    /// Replaces the owner's tool of that name (its creation time kept,
    /// updated now) and returns it as stored; `None` when there is none.
    fn update_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>>;

    /// Deletes the owner's tool `name`. Returns whether it existed.
    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool>;
}

/// The columns of a `js_tools` row, in [`JsToolRow`]'s order.
pub(crate) const JS_TOOL_COLUMNS: &str =
    "owner, name, description, input_schema, function, source, created_ms, updated_ms";

/// Raw columns of one `js_tools` row, as every SQL backend stores it; the
/// name and the schema decode outside the driver, so a bad value names the
/// tool.
pub(crate) struct JsToolRow {
    pub(crate) owner: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: String,
    pub(crate) function: String,
    pub(crate) source: String,
    pub(crate) created_ms: i64,
    pub(crate) updated_ms: i64,
}

impl JsToolRow {
    pub(crate) fn decode(self) -> Result<JsToolRecord> {
        let corrupt = |reason: String| StoreError::CorruptJsTool {
            owner: self.owner.clone(),
            name: self.name.clone(),
            reason,
        };
        let name = ToolName::new(self.name.as_str()).map_err(|error| corrupt(error.to_string()))?;
        let input_schema = match serde_json::from_str(&self.input_schema) {
            Ok(Value::Object(schema)) => schema,
            Ok(_) => return Err(corrupt("input_schema: not a JSON object".to_owned())),
            Err(error) => return Err(corrupt(format!("input_schema: {error}"))),
        };
        Ok(JsToolRecord {
            owner: ToolOwner::new(self.owner),
            name,
            description: self.description,
            input_schema,
            function: self.function,
            source: self.source,
            created: from_millis(self.created_ms),
            updated: from_millis(self.updated_ms),
        })
    }
}
