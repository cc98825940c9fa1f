//! The meta-tools, the core tools a model calls to change what it can see:
//! [`MetaTool`] names them and gives their definitions, [`MetaCall`] reads a
//! call's arguments. [`crate::MetaTools`] answers them.

use serde_json::{Map, Value, json};

use crate::answers::{CallToolError, FindGroupsError, LoadGroupError, MetaError, UnloadGroupError};
use crate::contract::{
    CALL_TOOL_ARGUMENTS_DESCRIPTION, CALL_TOOL_DESCRIPTION, CALL_TOOL_NAME_DESCRIPTION,
    CALL_TOOL_TOOL_NAME, FIND_QUERY_DESCRIPTION, FIND_TOOL_GROUPS_DESCRIPTION,
    FIND_TOOL_GROUPS_TOOL_NAME, GROUP_NAME_PARAMETER, LOAD_GROUP_NAME_DESCRIPTION,
    LOAD_TOOL_GROUP_DESCRIPTION, LOAD_TOOL_GROUP_TOOL_NAME, LOAD_TOOLS_DESCRIPTION,
    TOOLS_PARAMETER, UNLOAD_GROUP_NAME_DESCRIPTION, UNLOAD_TOOL_GROUP_DESCRIPTION,
    UNLOAD_TOOL_GROUP_TOOL_NAME,
};
use crate::name::ToolName;
use crate::tool::ToolDefinition;

/// One of toolgate's meta-tools. They are core tools: always visible, never
/// grouped, needing no permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaTool {
    /// `load_tool_group {"group_name"}`: adds a group's tools to the active
    /// set. Every catalog has it.
    LoadToolGroup,
    /// `unload_tool_group {"group_name"}`: takes a loaded group out again.
    UnloadToolGroup,
    /// `call_tool {"name", "arguments"}`: calls a tool of a loaded group by
    /// name, for a model whose tool list does not show it (an MCP client
    /// that never refreshes its list, or [`crate::LoadedSchemas::Conversation`]).
    CallTool,
    /// `find_tool_groups {"query"}`: the router's ranking of the groups for
    /// a request.
    FindToolGroups,
}

impl MetaTool {
    /// Every meta-tool, in the order a host registers them.
    pub const ALL: [Self; 4] = [
        Self::LoadToolGroup,
        Self::UnloadToolGroup,
        Self::CallTool,
        Self::FindToolGroups,
    ];

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::LoadToolGroup => LOAD_TOOL_GROUP_TOOL_NAME,
            Self::UnloadToolGroup => UNLOAD_TOOL_GROUP_TOOL_NAME,
            Self::CallTool => CALL_TOOL_TOOL_NAME,
            Self::FindToolGroups => FIND_TOOL_GROUPS_TOOL_NAME,
        }
    }

    /// The meta-tool called `name`, if one is.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Its definition, as models and MCP clients receive it.
    pub fn definition(self) -> ToolDefinition {
        let (description, properties, required) = match self {
            Self::LoadToolGroup => (
                LOAD_TOOL_GROUP_DESCRIPTION,
                json!({
                    GROUP_NAME_PARAMETER: {"type": "string", "description": LOAD_GROUP_NAME_DESCRIPTION},
                    TOOLS_PARAMETER: {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": LOAD_TOOLS_DESCRIPTION
                    }
                }),
                json!([GROUP_NAME_PARAMETER]),
            ),
            Self::UnloadToolGroup => (
                UNLOAD_TOOL_GROUP_DESCRIPTION,
                json!({GROUP_NAME_PARAMETER: {"type": "string", "description": UNLOAD_GROUP_NAME_DESCRIPTION}}),
                json!([GROUP_NAME_PARAMETER]),
            ),
            Self::CallTool => (
                CALL_TOOL_DESCRIPTION,
                json!({
                    "name": {"type": "string", "description": CALL_TOOL_NAME_DESCRIPTION},
                    "arguments": {"type": "object", "description": CALL_TOOL_ARGUMENTS_DESCRIPTION}
                }),
                json!(["name"]),
            ),
            Self::FindToolGroups => (
                FIND_TOOL_GROUPS_DESCRIPTION,
                json!({"query": {"type": "string", "description": FIND_QUERY_DESCRIPTION}}),
                json!(["query"]),
            ),
        };
        let mut schema = Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.insert("properties".to_owned(), properties);
        schema.insert("required".to_owned(), required);
        ToolDefinition {
            name: ToolName::new_unchecked(self.name()),
            description: description.to_owned(),
            input_schema: schema,
            annotations: None,
            timeout: None,
        }
    }
}

/// The `load_tool_group` definition sent to models.
pub fn load_tool_group_definition() -> ToolDefinition {
    MetaTool::LoadToolGroup.definition()
}

/// The `unload_tool_group` definition, for hosts that let the model shed groups.
pub fn unload_tool_group_definition() -> ToolDefinition {
    MetaTool::UnloadToolGroup.definition()
}

/// The `group_name` argument, or [`LoadGroupError::MissingParameter`] when it is
/// absent, blank or not a string.
pub fn group_name_argument(arguments: &Value) -> Result<&str, LoadGroupError> {
    non_blank(arguments, GROUP_NAME_PARAMETER).ok_or(LoadGroupError::MissingParameter)
}

/// A meta-tool call with its arguments read.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaCall {
    /// `load_tool_group`.
    Load {
        /// The group asked for, trimmed.
        group: String,
        /// Only these of its tools, as given (trimmed); `None`: the whole
        /// group.
        tools: Option<Vec<String>>,
    },
    /// `unload_tool_group`.
    Unload {
        /// The group asked for, trimmed.
        group: String,
    },
    /// `call_tool`: the tool and its arguments (an object).
    CallTool {
        /// The tool's name.
        tool: String,
        /// Its arguments; `{}` when none were given.
        arguments: Value,
    },
    /// `find_tool_groups`.
    FindGroups {
        /// The request, in the user's words.
        query: String,
    },
}

impl MetaCall {
    /// Reads a call of `tool`. `arguments` that are not an object (a model's
    /// unparsable argument text arrives as `null`) lack every parameter.
    pub fn parse(tool: MetaTool, arguments: &Value) -> Result<Self, MetaError> {
        match tool {
            MetaTool::LoadToolGroup => Ok(Self::Load {
                group: group_name_argument(arguments)?.to_owned(),
                tools: tools_argument(arguments)?,
            }),
            MetaTool::UnloadToolGroup => match group_name_argument(arguments) {
                Ok(group) => Ok(Self::Unload {
                    group: group.to_owned(),
                }),
                Err(_) => Err(UnloadGroupError::MissingParameter.into()),
            },
            MetaTool::CallTool => {
                let tool = non_blank_untrimmed(arguments, "name")
                    .ok_or(MetaError::CallTool(CallToolError::MissingName))?;
                if MetaTool::from_name(tool).is_some() {
                    return Err(MetaError::CallTool(CallToolError::MetaTool {
                        name: tool.to_owned(),
                    }));
                }
                let arguments = match arguments.get("arguments") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(object @ Value::Object(_)) => object.clone(),
                    Some(_) => return Err(MetaError::CallTool(CallToolError::ArgumentsNotObject)),
                };
                Ok(Self::CallTool {
                    tool: tool.to_owned(),
                    arguments,
                })
            }
            MetaTool::FindToolGroups => non_blank_untrimmed(arguments, "query")
                .map(|query| Self::FindGroups {
                    query: query.to_owned(),
                })
                .ok_or(MetaError::FindGroups(FindGroupsError::MissingQuery)),
        }
    }

    /// The group whose tools must be known before the call is answered: a
    /// load's group (its MCP server may have to start first).
    pub fn group_to_prepare(&self) -> Option<&str> {
        match self {
            Self::Load { group, .. } => Some(group),
            Self::Unload { .. } | Self::CallTool { .. } | Self::FindGroups { .. } => None,
        }
    }
}

/// `load_tool_group`'s `tools`: `None` when left out (or `null`), else the
/// names, trimmed; an empty list, a blank name or anything but a list of
/// strings is [`LoadGroupError::InvalidTools`].
fn tools_argument(arguments: &Value) -> Result<Option<Vec<String>>, LoadGroupError> {
    let tools = match arguments.get(TOOLS_PARAMETER) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(tools)) if !tools.is_empty() => tools,
        Some(_) => return Err(LoadGroupError::InvalidTools),
    };
    tools
        .iter()
        .map(|tool| {
            tool.as_str()
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
        })
        .collect::<Option<Vec<String>>>()
        .map(Some)
        .ok_or(LoadGroupError::InvalidTools)
}

/// A string parameter that is present and not blank, trimmed.
fn non_blank<'a>(arguments: &'a Value, name: &str) -> Option<&'a str> {
    non_blank_untrimmed(arguments, name).map(str::trim)
}

/// A string parameter that is present and not blank, as given.
fn non_blank_untrimmed<'a>(arguments: &'a Value, name: &str) -> Option<&'a str> {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .filter(|value| !value.trim().is_empty())
}

#[cfg(test)]
#[path = "meta_tool_tests.rs"]
mod tests;
