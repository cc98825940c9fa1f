//! [`Alias`]: an old tool name that keeps working.

use serde_json::{Map, Value};

use crate::action::ACTION_PARAMETER;
use crate::name::ToolName;

/// An old tool name that keeps working: a call to it goes to `tool`, with
/// `action` (for a polymorphic tool) and fixed `arguments` added.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{Alias, ToolName};
///
/// let alias = Alias::new(ToolName::new("web")?).with_action("search");
/// assert_eq!(
///     alias.arguments(json!({"query": "rust"})),
///     json!({"action": "search", "query": "rust"}),
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Alias {
    /// The tool that answers now.
    pub tool: ToolName,
    /// The action to call, when `tool` is polymorphic.
    pub action: Option<String>,
    /// Arguments the old tool implied (`prompt_type: "system"` for a former
    /// `view_system_prompt`); the caller's own arguments cannot override them.
    pub arguments: Map<String, Value>,
}

impl Alias {
    /// An alias to `tool` itself.
    pub fn new(tool: ToolName) -> Self {
        Self {
            tool,
            action: None,
            arguments: Map::new(),
        }
    }

    /// The alias calling `action` of its tool.
    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// The arguments for the new tool: the call's, then the fixed ones, then
    /// the action first.
    pub fn arguments(&self, call: Value) -> Value {
        let mut arguments = Map::new();
        if let Some(action) = &self.action {
            arguments.insert(ACTION_PARAMETER.to_owned(), Value::String(action.clone()));
        }
        if let Value::Object(call) = call {
            for (key, value) in call {
                arguments.entry(key).or_insert(value);
            }
        }
        for (key, value) in &self.arguments {
            arguments.insert(key.clone(), value.clone());
        }
        Value::Object(arguments)
    }
}
