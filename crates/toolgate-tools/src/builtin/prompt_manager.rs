//! The `prompt_manager` group: an agent views and updates its own system
//! prompt, its other prompts and its name. Exposed as one
//! polymorphic `prompt_manager` tool by default (actions `view` and
//! `update`).
//!
//! The agent is the calling conversation's, as stored; without one every
//! call answers an error.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::ToolDefinition;
use toolgate_store::{AgentRecord, AgentStore, SYSTEM_PROMPT};

use super::arguments::{definition, optional_string, string_argument};
use crate::context::CallContext;
use crate::error::ToolboxError;
use crate::output::ToolOutput;

pub(super) const GROUP: &str = "prompt_manager";
pub(super) const DISPLAY_NAME: &str = "Prompt Manager";
pub(super) const DESCRIPTION: &str = "View or update your own prompts and name";

const VIEW: &str = "prompt_manager_view";
const UPDATE: &str = "prompt_manager_update";

/// The prompt types, as the model names them. `name` is the agent's name;
/// the others are prompts stored under the same type.
pub const PROMPT_TYPES: [&str; 4] = [
    SYSTEM_PROMPT,
    "conversation_consolidation",
    "memory_management",
    NAME,
];
const NAME: &str = "name";

/// Longest system prompt an agent may set, in characters.
const MAX_SYSTEM_PROMPT_CHARS: usize = 50_000;
/// Longest other prompt or name, in characters.
const MAX_OTHER_CHARS: usize = 10_000;

#[derive(Debug)]
pub(super) struct PromptManager {
    agents: Arc<dyn AgentStore>,
}

impl PromptManager {
    pub(super) fn new(agents: Arc<dyn AgentStore>) -> Self {
        Self { agents }
    }

    pub(super) fn definitions() -> Result<Vec<ToolDefinition>, ToolboxError> {
        let prompt_type = json!({
            "type": "string",
            "enum": PROMPT_TYPES,
            "description": "system, conversation_consolidation, memory_management, or name"
        });
        Ok(vec![
            definition(
                VIEW,
                "Show one of your prompts, or your name.",
                json!({
                    "type": "object",
                    "properties": {"prompt_type": prompt_type},
                    "required": ["prompt_type"]
                }),
            )?,
            definition(
                UPDATE,
                "Replace one of your prompts, or your name.",
                json!({
                    "type": "object",
                    "properties": {
                        "prompt_type": prompt_type,
                        "content": {"type": "string", "description": "The new value"}
                    },
                    "required": ["prompt_type", "content"]
                }),
            )?,
        ])
    }

    /// Runs a `prompt_manager` tool; `None` when `tool` is not one.
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        context: &CallContext,
    ) -> Option<ToolOutput> {
        if tool != VIEW && tool != UPDATE {
            return None;
        }
        Some(self.run(tool, arguments, context).await)
    }

    async fn run(&self, tool: &str, arguments: &Value, context: &CallContext) -> ToolOutput {
        let Some(agent_id) = &context.agent else {
            return error(
                "No current agent context: prompt_manager works in conversations that have an agent",
            );
        };
        let prompt_type = match string_argument(arguments, "prompt_type") {
            Ok(prompt_type) => prompt_type,
            Err(output) => return output,
        };
        if !PROMPT_TYPES.contains(&prompt_type) {
            return error(format!("Invalid prompt_type '{prompt_type}'"));
        }
        let agent = match self.agents.agent(agent_id).await {
            Ok(Some(agent)) => agent,
            Ok(None) => {
                return error(format!(
                    "No current agent context: agent '{agent_id}' is not stored"
                ));
            }
            Err(failure) => return error(format!("Could not read agent '{agent_id}': {failure}")),
        };
        if tool == VIEW {
            let value = read(&agent, prompt_type).unwrap_or("(not set)");
            return ToolOutput::json(json!({
                "type": "view_result",
                "prompt_type": prompt_type,
                "value": value,
                "agent_name": agent.name,
            }));
        }
        let content = match optional_string(arguments, "content") {
            Ok(Some(content)) if !content.trim().is_empty() => content,
            Ok(_) => return error("content is required for update action"),
            Err(output) => return output,
        };
        let limit = if prompt_type == SYSTEM_PROMPT {
            MAX_SYSTEM_PROMPT_CHARS
        } else {
            MAX_OTHER_CHARS
        };
        let length = content.chars().count();
        if length > limit {
            return error(format!(
                "Failed to update: {prompt_type} is {length} characters long, more than the {limit} allowed"
            ));
        }
        let mut updated = agent;
        if prompt_type == NAME {
            updated.name = content.trim().to_owned();
        } else {
            updated
                .prompts
                .insert(prompt_type.to_owned(), content.to_owned());
        }
        if let Err(failure) = self.agents.save_agent(updated.clone()).await {
            return error(format!("Failed to update: {failure}"));
        }
        ToolOutput::json(json!({
            "type": "update_result",
            "prompt_type": prompt_type,
            "success": true,
            "new_value": read(&updated, prompt_type),
            "agent_name": updated.name,
        }))
    }
}

fn read<'a>(agent: &'a AgentRecord, prompt_type: &str) -> Option<&'a str> {
    if prompt_type == NAME {
        Some(agent.name.as_str())
    } else {
        agent.prompt(prompt_type)
    }
}

fn error(message: impl Into<String>) -> ToolOutput {
    let mut output = ToolOutput::json(json!({
        "type": "error",
        "error": message.into(),
        "allowed_prompt_types": PROMPT_TYPES,
    }));
    output.is_error = true;
    output
}
