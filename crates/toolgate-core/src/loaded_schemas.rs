//! [`LoadedSchemas`]: where a host puts a loaded group's schemas, which the
//! load answer's text ([`crate::LoadAnswer`]) and the hosts both follow.

/// Where a loaded group's schemas go (`[tools] loaded_schemas`).
///
/// Providers cache a request's prefix (Anthropic: tools, then system, then
/// messages; OpenAI: any common prefix), so a tool list that grows on a load
/// re-bills everything after it. [`Self::Conversation`] keeps the tool list
/// as it was and puts the schemas in `load_tool_group`'s answer
/// ([`GroupLoaded::answer`](crate::GroupLoaded::answer)); the model then
/// calls the loaded tools through `call_tool`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LoadedSchemas {
    /// The tool list: the next request lists the loaded tools (an MCP
    /// client is sent `list_changed`).
    #[default]
    ToolList,
    /// The conversation: the tool list does not change on a load; the load's
    /// answer carries the tools' full schemas, and `call_tool` (or a call by
    /// name) runs them.
    Conversation,
}

impl LoadedSchemas {
    /// Every value, the default first.
    pub const ALL: [Self; 2] = [Self::ToolList, Self::Conversation];

    /// The setting's spelling: `tool_list`, `conversation`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolList => "tool_list",
            Self::Conversation => "conversation",
        }
    }

    /// The value spelled `text` (the inverse of [`Self::as_str`]).
    pub fn from_setting(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|value| value.as_str() == text)
    }
}

#[cfg(test)]
#[path = "loaded_schemas_tests.rs"]
mod tests;
