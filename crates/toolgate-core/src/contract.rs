//! Every text the model reads from toolgate itself, in one place: the
//! contract texts (`load_tool_group`'s answers, "not
//! available", the "Available Tool Groups" section, the polymorphic tools'
//! errors) and the other meta-tools' answers and descriptions.
//!
//! A wording change is an edit in this module and nowhere else; the agent
//! loop and the MCP gateway only render these values. Tests assert the texts
//! whole.
//!
//! One text is in a file of its own, `contract/groups_found.rs`:
//! `find_tool_groups`' answer, which shows a routing decision's tier. The
//! catalog and the router build on this file's texts (the meta-tools'
//! definitions, the prompt section), so this file may not depend on the
//! router.

use std::fmt;

use serde_json::Value;

use crate::answers::{
    ActionNotAvailable, CallTimedOut, CallToolError, FindGroupsError, GroupLoaded,
    GroupPartlyLoaded, GroupUnloaded, LoadGroupError, MetaError, NotAvailable, ToolsLoaded,
    UnloadGroupError,
};
use crate::load_budget::{Unload, UnloadedForBudget};
use crate::loaded_schemas::LoadedSchemas;
use crate::name::GroupId;
use crate::tool::ToolDefinition;

pub(crate) mod groups_found;

/// Name of the meta-tool that loads a group.
pub const LOAD_TOOL_GROUP_TOOL_NAME: &str = "load_tool_group";
/// Name of the meta-tool that unloads a group.
pub const UNLOAD_TOOL_GROUP_TOOL_NAME: &str = "unload_tool_group";
/// Name of the meta-tool that calls any tool of a loaded group by name.
pub const CALL_TOOL_TOOL_NAME: &str = "call_tool";
/// Name of the meta-tool that ranks the groups for a request (the router).
pub const FIND_TOOL_GROUPS_TOOL_NAME: &str = "find_tool_groups";
/// The argument `load_tool_group` and `unload_tool_group` take: the group.
pub const GROUP_NAME_PARAMETER: &str = "group_name";
/// `load_tool_group`'s optional argument: only these tools of the group.
pub const TOOLS_PARAMETER: &str = "tools";

/// Heading of the system-prompt section.
pub const TOOL_GROUPS_HEADING: &str = "## Available Tool Groups";
/// The instruction under the heading.
pub const TOOL_GROUPS_INSTRUCTION: &str = "Use `load_tool_group` to load tools from a group \
before using them: the tools you name, or the whole group.";
/// The instruction of the search form, before the groups' count: there are
/// too many groups to list.
pub(crate) const TOOL_GROUPS_SEARCH_INSTRUCTION: &str = "Use `find_tool_groups` with what you need to \
find the groups and tools for it, then `load_tool_group` to load the tools you name (or a whole \
group) before using them.";
/// How many of the largest groups the search form names.
pub(crate) const TOOL_GROUPS_SEARCH_NAMED: usize = 10;
/// Separator between the base prompt and the section.
pub const SECTION_SEPARATOR: &str = "\n\n---\n\n";

/// `load_tool_group`'s description.
pub(crate) const LOAD_TOOL_GROUP_DESCRIPTION: &str = "Load tools from a tool group to make them \
available for use: the tools named in `tools`, or the whole group without it. You MUST load a tool \
before you can use it. After loading, the tools will be available for the rest of this \
conversation.";
/// `load_tool_group`'s `group_name` parameter.
pub(crate) const LOAD_GROUP_NAME_DESCRIPTION: &str = "The name of the tool group to load";
/// `load_tool_group`'s `tools` parameter.
pub(crate) const LOAD_TOOLS_DESCRIPTION: &str = "Only these tools of the group, by name; leave it \
out to load the whole group";
/// `unload_tool_group`'s description.
pub(crate) const UNLOAD_TOOL_GROUP_DESCRIPTION: &str = "Unload a previously loaded tool group so \
its tools are no longer offered. Load it again with load_tool_group when needed.";
/// `unload_tool_group`'s `group_name` parameter.
pub(crate) const UNLOAD_GROUP_NAME_DESCRIPTION: &str = "The name of the tool group to unload";
/// `call_tool`'s description.
pub(crate) const CALL_TOOL_DESCRIPTION: &str = "Call a tool of a loaded group by name, when it \
is not in your tool list: load_tool_group's result gives each loaded tool's full schema.";
/// `call_tool`'s `name` parameter.
pub(crate) const CALL_TOOL_NAME_DESCRIPTION: &str = "The tool's name, as load_tool_group listed it";
/// `call_tool`'s `arguments` parameter.
pub(crate) const CALL_TOOL_ARGUMENTS_DESCRIPTION: &str = "The tool's arguments";
/// `find_tool_groups`' description.
pub(crate) const FIND_TOOL_GROUPS_DESCRIPTION: &str = "Rank the tool groups for a request, with \
the router's confidence and each group's best tools. Use it when no group in load_tool_group's \
list obviously fits; the answer says what to do next.";
/// `find_tool_groups`' `query` parameter.
pub(crate) const FIND_QUERY_DESCRIPTION: &str = "What the user wants done, in their words";

/// `Required parameter '{name}' is missing.`: the text for any tool's
/// missing required argument, meta-tools and built-ins alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissingParameter<'a>(pub &'a str);

impl fmt::Display for MissingParameter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Required parameter '{}' is missing.", self.0)
    }
}

/// `1 tool`, `{n} tools`: a group's size in `find_tool_groups`' answer, and
/// what `load_tool_group` loaded.
struct ToolCount(usize);

impl fmt::Display for ToolCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("1 tool"),
            n => write!(f, "{n} tools"),
        }
    }
}

impl fmt::Display for GroupLoaded<'_> {
    /// `Loaded {n} tools from group '{display_name}':` (`Loaded 1 tool ...`
    /// for one) then `- {name}: {description}` per tool, each description on
    /// one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Loaded {} from group '{}':",
            ToolCount(self.tools.len()),
            self.group.display_name
        )?;
        for tool in &self.tools {
            write!(f, "\n- {}: {}", tool.name, tool.one_line_description())?;
        }
        Ok(())
    }
}

/// The line before a whole group's load when the load named tools the group
/// does not have ([`MetaAnswer::LoadedInstead`](crate::MetaAnswer)): `Tool
/// group '{display_name}' has no tool named 'forecast', so the whole group is
/// loaded.`
#[derive(Clone, Copy, Debug)]
pub struct NotInGroup<'a> {
    /// The group's display name.
    pub group: &'a str,
    /// The names asked for that are not its tools, as given.
    pub unknown: &'a [String],
}

impl fmt::Display for NotInGroup<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted: Vec<String> = self
            .unknown
            .iter()
            .map(|name| format!("'{name}'"))
            .collect();
        write!(
            f,
            "Tool group '{}' has no tool named {}, so the whole group is loaded.",
            self.group,
            quoted.join(", ")
        )
    }
}

/// What the model reads for a `load_tool_group` that loaded (or had loaded)
/// a group, by where the host puts the schemas: [`GroupLoaded`]'s text for
/// [`LoadedSchemas::ToolList`]; for [`LoadedSchemas::Conversation`], `Loaded
/// {n} tools from group '{display_name}'. They are not added to your tool
/// list: ...` then one line of JSON per tool, `{"name", "description",
/// "input_schema"}` in that order, the description whole.
///
/// A host's partial load ([`GroupPartlyLoaded::answer`]) reads the same way
/// with [`GroupPartlyLoaded`]'s opening: `Loaded {k} of {n} tools from group
/// '{display_name}' (load_tool_group '{name}' loads the other {n-k}). They
/// are not added to your tool list: ...`, then the loaded tools' schemas.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{ActiveToolSet, Catalog, GroupId, LoadedSchemas, Origin, ToolDefinition, ToolGroup, ToolName, ToolsLoaded};
///
/// let mut catalog = Catalog::new();
/// let tool = ToolDefinition::new(ToolName::new("pdf_info")?, "Page count", json!({"type": "object"}))?;
/// let other = ToolDefinition::new(ToolName::new("pdf_merge")?, "Merge", json!({"type": "object"}))?;
/// let group = ToolGroup::new(GroupId::new("pdf")?, "PDF Tools", "Read PDFs");
/// let tools = vec![(tool, Origin::Builtin), (other, Origin::Builtin)];
/// catalog.register_group_with_tools(group, Origin::Builtin, tools)?;
/// let loaded = ActiveToolSet::new().load(&catalog, "pdf")?;
/// assert_eq!(
///     loaded.answer(LoadedSchemas::Conversation).to_string(),
///     "Loaded 2 tools from group 'PDF Tools'. They are not added to your tool list: call one \
///      with call_tool, as {\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}. \
///      Their schemas, one JSON object per tool:\n\
///      {\"name\":\"pdf_info\",\"description\":\"Page count\",\"input_schema\":{\"type\":\"object\"}}\n\
///      {\"name\":\"pdf_merge\",\"description\":\"Merge\",\"input_schema\":{\"type\":\"object\"}}"
/// );
/// assert_eq!(loaded.answer(LoadedSchemas::ToolList).to_string(), loaded.to_string());
///
/// let ToolsLoaded::Partial(partly) = ActiveToolSet::new().load_tools(&catalog, "pdf", &["pdf_info"])? else {
///     panic!("one of two tools is a partial load");
/// };
/// assert_eq!(
///     partly.answer(LoadedSchemas::Conversation).to_string(),
///     "Loaded 1 of 2 tools from group 'PDF Tools' (load_tool_group 'pdf' loads the other 1). \
///      They are not added to your tool list: call one with call_tool, as {\"name\": \
///      \"<tool name>\", \"arguments\": {<its arguments>}}. Their schemas, one JSON object \
///      per tool:\n\
///      {\"name\":\"pdf_info\",\"description\":\"Page count\",\"input_schema\":{\"type\":\"object\"}}"
/// );
/// assert_eq!(partly.answer(LoadedSchemas::ToolList).to_string(), partly.to_string());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadAnswer<'a, 'c> {
    loaded: Answered<'a, 'c>,
    schemas: LoadedSchemas,
}

/// The load a [`LoadAnswer`] answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answered<'a, 'c> {
    Whole(&'a GroupLoaded<'c>),
    Partial(&'a GroupPartlyLoaded<'c>),
}

impl<'c> GroupLoaded<'c> {
    /// The answer the model reads for this load when the host puts loaded
    /// schemas where `schemas` says.
    pub fn answer(&self, schemas: LoadedSchemas) -> LoadAnswer<'_, 'c> {
        LoadAnswer {
            loaded: Answered::Whole(self),
            schemas,
        }
    }
}

impl<'c> GroupPartlyLoaded<'c> {
    /// What the model reads for this load (a host's: a router's pre-load)
    /// when the host puts loaded schemas where `schemas` says.
    pub fn answer(&self, schemas: LoadedSchemas) -> LoadAnswer<'_, 'c> {
        LoadAnswer {
            loaded: Answered::Partial(self),
            schemas,
        }
    }
}

impl<'c> ToolsLoaded<'c> {
    /// What the model reads for this load when the host puts loaded schemas
    /// where `schemas` says.
    pub fn answer(&self, schemas: LoadedSchemas) -> LoadAnswer<'_, 'c> {
        match self {
            Self::Whole(loaded) => loaded.answer(schemas),
            Self::Partial(loaded) => loaded.answer(schemas),
        }
    }
}

impl fmt::Display for LoadAnswer<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = match (self.schemas, self.loaded) {
            (LoadedSchemas::ToolList, Answered::Whole(loaded)) => return loaded.fmt(f),
            (LoadedSchemas::ToolList, Answered::Partial(loaded)) => return loaded.fmt(f),
            (LoadedSchemas::Conversation, Answered::Whole(loaded)) => {
                write!(
                    f,
                    "Loaded {} from group '{}'.",
                    ToolCount(loaded.tools.len()),
                    loaded.group.display_name
                )?;
                &loaded.tools
            }
            (LoadedSchemas::Conversation, Answered::Partial(loaded)) => {
                PartlyLoadedOpening(loaded).fmt(f)?;
                f.write_str(".")?;
                &loaded.tools
            }
        };
        write!(
            f,
            " They are not added to your tool list: call one with {CALL_TOOL_TOOL_NAME}, as \
             {{\"name\": \"<tool name>\", \"arguments\": {{<its arguments>}}}}. Their schemas, \
             one JSON object per tool:"
        )?;
        schema_lines(f, tools.iter().copied())
    }
}

/// One line per tool, each after a newline: `{"name", "description",
/// "input_schema"}` as JSON, the description whole. Written field by field:
/// the same order whatever the JSON map keeps.
fn schema_lines<'c>(
    f: &mut fmt::Formatter<'_>,
    tools: impl Iterator<Item = &'c ToolDefinition>,
) -> fmt::Result {
    for tool in tools {
        write!(
            f,
            "\n{{\"name\":{},\"description\":{},\"input_schema\":{}}}",
            json(&tool.name.as_str())?,
            json(&tool.description.as_str())?,
            json(&tool.input_schema)?
        )?;
    }
    Ok(())
}

/// `Loaded {k} of {n} tools from group '{display_name}' (load_tool_group
/// '{name}' loads the other {n-k})`: how a partial load's answer opens.
struct PartlyLoadedOpening<'a, 'c>(&'a GroupPartlyLoaded<'c>);

impl fmt::Display for PartlyLoadedOpening<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loaded = self.0;
        let count = loaded.tools.len();
        write!(
            f,
            "Loaded {count} of {} tools from group '{}' ({LOAD_TOOL_GROUP_TOOL_NAME} '{}' loads the other {})",
            loaded.group_tools,
            loaded.group.display_name,
            loaded.group.id,
            loaded.group_tools.saturating_sub(count)
        )
    }
}

impl fmt::Display for GroupPartlyLoaded<'_> {
    /// `Loaded {k} of {n} tools from group '{display_name}' (load_tool_group
    /// '{name}' loads the other {n-k}):` then `- {name}: {description}` per
    /// loaded tool, each description on one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", PartlyLoadedOpening(self))?;
        for tool in &self.tools {
            write!(f, "\n- {}: {}", tool.name, tool.one_line_description())?;
        }
        Ok(())
    }
}

impl fmt::Display for ToolsLoaded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Whole(loaded) => loaded.fmt(f),
            Self::Partial(loaded) => loaded.fmt(f),
        }
    }
}

impl fmt::Display for LoadGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingParameter => MissingParameter(GROUP_NAME_PARAMETER).fmt(f),
            Self::NotFound {
                requested,
                available,
                suggestion,
            } => {
                write!(
                    f,
                    "Tool group '{requested}' not found. Available groups: {}",
                    join(available)
                )?;
                if let Some(suggestion) = suggestion {
                    write!(f, ". Did you mean '{suggestion}'?")?;
                }
                Ok(())
            }
            Self::EmptyGroup { group } => write!(f, "Tool group '{group}' has no available tools."),
            Self::Unavailable { reason } => f.write_str(reason),
            Self::InvalidTools => write!(
                f,
                "Parameter '{TOOLS_PARAMETER}' must be a list of tool names, or left out to load \
                 the whole group."
            ),
            Self::TooLarge {
                group,
                tokens,
                limit,
                tools,
            } => {
                write!(
                    f,
                    "Nothing was loaded: group '{group}' would hold {tokens} tokens of tool \
                     schemas, more than one load may bring for this model ({limit}). Load only \
                     the tools you need, naming them in '{TOOLS_PARAMETER}'. Its {}: {}",
                    ToolCount(tools.len()),
                    join(&tools[..tools.len().min(TOO_LARGE_NAMES)])
                )?;
                match tools.len().checked_sub(TOO_LARGE_NAMES) {
                    Some(more) if more > 0 => write!(f, " and {more} more."),
                    _ => f.write_str("."),
                }
            }
        }
    }
}

/// The most tool names a too-large load's refusal lists.
const TOO_LARGE_NAMES: usize = 100;

impl fmt::Display for GroupUnloaded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unloaded tool group '{}'.", self.group.display_name)
    }
}

impl fmt::Display for UnloadGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingParameter => MissingParameter(GROUP_NAME_PARAMETER).fmt(f),
            Self::NotLoaded { requested, loaded } => {
                let loaded = if loaded.is_empty() {
                    "none".to_owned()
                } else {
                    join(loaded)
                };
                write!(
                    f,
                    "Tool group '{requested}' is not loaded. Loaded groups: {loaded}"
                )
            }
            Self::NoSession { requested } => write!(
                f,
                "Tool group '{requested}' is not loaded: requests without a session load nothing."
            ),
        }
    }
}

impl fmt::Display for NotAvailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tool '{}' is not available for this agent.", self.tool)?;
        if let Some(group) = &self.group {
            write!(
                f,
                " It belongs to tool group '{group}'; call load_tool_group with group_name \
                 '{group}' and tools [\"{}\"] first (without tools it loads the whole group).",
                self.tool
            )?;
        }
        Ok(())
    }
}

/// What the hint says between the tool and its group.
const NOT_AVAILABLE_BELONGS: &str = "' is not available for this agent. It belongs to tool group '";
/// What the hint says after the group's first mention.
const NOT_AVAILABLE_CALL: &str = "'; call load_tool_group with group_name '";

impl NotAvailable {
    /// The hint `text` is, read back: a conversation keeps only the text of
    /// a call's result. `None` unless `text` is exactly what `Display`
    /// writes for a tool with a group to load.
    pub fn read(text: &str) -> Option<Self> {
        let (tool, rest) = text
            .strip_prefix("Tool '")?
            .split_once(NOT_AVAILABLE_BELONGS)?;
        let (group, _) = rest.split_once(NOT_AVAILABLE_CALL)?;
        let hint = Self {
            tool: tool.to_owned(),
            group: Some(GroupId::new(group).ok()?),
        };
        (hint.to_string() == text).then_some(hint)
    }

    /// The call the hint asks for, as a tool's name and its arguments:
    /// `load_tool_group` of the group with this tool alone. `None` when the
    /// tool has no group to load.
    pub fn load_call(&self) -> Option<(&'static str, Value)> {
        let group = self.group.as_ref()?;
        Some((
            LOAD_TOOL_GROUP_TOOL_NAME,
            serde_json::json!({GROUP_NAME_PARAMETER: group.as_str(), TOOLS_PARAMETER: [self.tool]}),
        ))
    }
}

impl fmt::Display for ActionNotAvailable {
    /// `Action '{action}' of tool '{tool}' is not available for this agent.`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Action '{}' of tool '{}' is not available for this agent.",
            self.action, self.tool
        )
    }
}

/// The request the agent loop adds, as the user's last message, when it
/// has the model summarize a conversation grown too long: the summary then
/// stands for everything before it.
pub const COMPACTION_PROMPT: &str = "The conversation so far is about to be replaced by a \
summary that you write now: after it, you will see only your summary and what comes next. \
Do not call any tool; answer with the summary alone, as plain text. Keep what the rest of the \
work needs: the user's requests (the latest one word for word) and preferences, what has been \
done and what it found (names, identifiers, paths, figures, errors), the decisions taken and \
why, and what remains to be done next. Leave out what no longer matters. The tool groups \
loaded now stay loaded.";

/// What the model reads before a compaction's summary, which it wrote
/// itself in answer to [`COMPACTION_PROMPT`].
pub const COMPACTION_SUMMARY_HEADING: &str = "Summary of the conversation so far:";

impl fmt::Display for UnloadedForBudget<'_> {
    /// `Unloaded 'a', 'b' (least recently used first) to keep the loaded
    /// tools within their budget of {budget} tokens; load_tool_group loads a
    /// group again.`, and for a group over the budget alone: `Group '{g}'
    /// alone has {tokens} tokens of tools, over the budget of {budget}: it
    /// is the only group loaded.` Empty when the plan unloads nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plan = self.0;
        if !plan.unload.is_empty() {
            let groups: Vec<String> = plan
                .unload
                .iter()
                .map(|unload| match unload {
                    Unload::Group(group) => format!("'{group}'"),
                    Unload::Tool(group, tool) => format!("'{tool}' of '{group}'"),
                })
                .collect();
            write!(
                f,
                "Unloaded {} (least recently used first) to keep the loaded tools within their \
                 budget of {} tokens; load_tool_group loads a group again.",
                groups.join(", "),
                plan.budget
            )?;
        }
        if let Some(oversized) = &plan.oversized {
            if !plan.unload.is_empty() {
                f.write_str(" ")?;
            }
            write!(
                f,
                "Group '{}' alone has {} tokens of tools, over the budget of {}: it is the only \
                 group loaded.",
                oversized.group, oversized.tokens, oversized.budget
            )?;
        }
        Ok(())
    }
}

/// What the model reads for a call cancelled with its turn.
pub const CALL_CANCELLED: &str = "The tool call was cancelled.";

/// What the model reads for a call whose result the agent loop lost (an
/// interrupted turn, restored).
pub const CALL_FAILED_IN_AGENT: &str = "The tool call failed inside the agent.";

/// `The tool call failed inside the agent: {reason}`: a tool's task ended
/// without a result (it panicked or was aborted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailedInAgent<'a>(pub &'a str);

impl fmt::Display for FailedInAgent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "The tool call failed inside the agent: {}", self.0)
    }
}

impl fmt::Display for CallTimedOut {
    /// `Tool '{tool}' did not finish within {seconds}s; the call was cancelled.`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tool '{}' did not finish within {}s; the call was cancelled.",
            self.tool,
            self.limit.as_secs_f64()
        )
    }
}

impl fmt::Display for CallToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingName => MissingParameter("name").fmt(f),
            Self::MetaTool { name } => write!(f, "'{name}' is a meta-tool: call it directly."),
            Self::ArgumentsNotObject => f.write_str("Parameter 'arguments' must be an object."),
        }
    }
}

impl fmt::Display for FindGroupsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingQuery => MissingParameter("query").fmt(f),
        }
    }
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Load(error) => error.fmt(f),
            Self::Unload(error) => error.fmt(f),
            Self::CallTool(error) => error.fmt(f),
            Self::FindGroups(error) => error.fmt(f),
        }
    }
}

/// What a polymorphic tool's call got wrong; `Display` is the `error` text
/// of its structured answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ActionFault<'a> {
    /// The arguments are not an object.
    NotAnObject,
    /// `action` is not a string.
    ActionNotString(&'a Value),
    /// `action` is absent.
    MissingAction,
    /// The action exists but the policy denies it.
    ActionDenied(&'a str),
    /// No such action.
    InvalidAction(&'a str),
    /// Another enum parameter has a value outside its enum.
    InvalidValue {
        /// The parameter.
        parameter: &'a str,
        /// The value, as the model wrote it.
        value: String,
    },
    /// A parameter the action needs is absent or blank.
    MissingRequired {
        /// The parameter.
        parameter: &'a str,
        /// The action.
        action: &'a str,
    },
}

impl fmt::Display for ActionFault<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("Tool arguments must be a JSON object"),
            Self::ActionNotString(value) => {
                write!(f, "Parameter 'action' must be a string, not {value}")
            }
            Self::MissingAction => f.write_str("Missing required parameter 'action'"),
            Self::ActionDenied(action) => write!(f, "Action '{action}' is not allowed here"),
            Self::InvalidAction(action) => write!(f, "Invalid action '{action}'"),
            Self::InvalidValue { parameter, value } => write!(f, "Invalid {parameter} '{value}'"),
            Self::MissingRequired { parameter, action } => {
                write!(f, "{parameter} is required for action '{action}'")
            }
        }
    }
}

/// `value` as compact JSON.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, fmt::Error> {
    serde_json::to_string(value).map_err(|_| fmt::Error)
}

fn join<T: fmt::Display>(names: &[T]) -> String {
    names
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an MCP gateway's server instructions say, before the groups its
/// caller sees.
pub const GATEWAY_INSTRUCTIONS: &str = "toolgate gateway. Most tools sit in groups: call \
load_tool_group with a group's name to add its tools. Clients that do not refresh their tool \
list can run any loaded tool with call_tool.";

/// What an MCP gateway's server instructions say when it sends every tool
/// ([`crate::Mode::Whole`]): there is no group to load.
pub const GATEWAY_INSTRUCTIONS_WHOLE: &str = "toolgate gateway. Every tool is in the tool list: \
call any of them directly.";

/// `The gateway is shutting down and takes no new calls; retry once it is
/// back.`: a call that came while the gateway drains.
///
/// ```
/// assert_eq!(
///     toolgate_core::GatewayShuttingDown.to_string(),
///     "The gateway is shutting down and takes no new calls; retry once it is back."
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatewayShuttingDown;

impl fmt::Display for GatewayShuttingDown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("The gateway is shutting down and takes no new calls; retry once it is back.")
    }
}

/// `No tool has a name that long ({length} bytes); tool names have at most
/// {max}.`: a called name longer than any the gateway looks up.
///
/// ```
/// use toolgate_core::NameTooLong;
///
/// assert_eq!(
///     NameTooLong { length: 300, max: 128 }.to_string(),
///     "No tool has a name that long (300 bytes); tool names have at most 128."
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameTooLong {
    /// The called name's length, in bytes.
    pub length: usize,
    /// The longest name looked up, in bytes.
    pub max: usize,
}

impl fmt::Display for NameTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "No tool has a name that long ({} bytes); tool names have at most {}.",
            self.length, self.max
        )
    }
}

/// `Tool '{tool}' cannot be called right now: this session's loaded groups
/// could not be read from the store ({reason}). Try again in a moment.`: a
/// call in a session whose history is unreadable for now.
///
/// ```
/// use toolgate_core::SessionUnreadable;
///
/// assert_eq!(
///     SessionUnreadable { tool: "pdf_info", reason: "database is locked" }.to_string(),
///     "Tool 'pdf_info' cannot be called right now: this session's loaded groups could not be \
///      read from the store (database is locked). Try again in a moment."
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionUnreadable<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// Why the store could not be read.
    pub reason: &'a str,
}

impl fmt::Display for SessionUnreadable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tool '{}' cannot be called right now: this session's loaded groups could not be read \
             from the store ({}). Try again in a moment.",
            self.tool, self.reason
        )
    }
}

/// `Tool '{tool}' failed inside the gateway.`: a call that failed in the
/// gateway itself; why is the operator's to read, in the log.
///
/// ```
/// assert_eq!(
///     toolgate_core::FailedInGateway("pdf_info").to_string(),
///     "Tool 'pdf_info' failed inside the gateway."
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailedInGateway<'a>(pub &'a str);

impl fmt::Display for FailedInGateway<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tool '{}' failed inside the gateway.", self.0)
    }
}

#[cfg(test)]
#[path = "contract_tests.rs"]
mod tests;
