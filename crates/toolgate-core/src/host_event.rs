//! [`HostEvent`]: a change to a conversation's tools that the host made and
//! records in its history, in one encoding whichever front end wrote it.
//!
//! Every change the meta-tools, a router or the load budget make to an
//! active set is one of these; the live set applies it with
//! [`ActiveToolSet::apply`](crate::ActiveToolSet::apply) and a restore
//! applies the stored record the same way, so the two cannot disagree. An
//! event names the model's call that caused it, when one did: a restore
//! then replays that call through its events alone.
//!
//! Stored as a [`MessageKind::System`] message whose `tool_name` says what
//! happened (`load_tool_group`, `unload_tool_group`, or `group_used`) and
//! whose `tool_input` is `{"group_name": ...}`, with `"tools": [...]` for a
//! partial load or unload and for the tool a use called.

use serde_json::{Value, json};

use crate::answers::{GroupLoaded, GroupPartlyLoaded, GroupUnloaded, ToolsLoaded};
use crate::contract::{
    GROUP_NAME_PARAMETER, LOAD_TOOL_GROUP_TOOL_NAME, UNLOAD_TOOL_GROUP_TOOL_NAME,
};
use crate::history::{Message, MessageKind, ToolStatus};
use crate::meta_tool::group_name_argument;
use crate::name::{GroupId, ToolName};

/// What a host event's `tool_name` says it records.
#[derive(Clone, Copy)]
enum Recorded {
    Load,
    Unload,
    Use,
}

/// The `tool_name` of a [`HostEvent::Used`] record. Not a valid call of
/// any tool: host events are system messages, never tool calls.
pub const GROUP_USED_EVENT: &str = "group_used";

/// The field of a partial load's record naming its tools.
const TOOLS_FIELD: &str = "tools";

/// A change the host made to a conversation's tools.
///
/// ```
/// use toolgate_core::{ActiveToolSet, GroupId, HostEvent, ToolName};
///
/// let pdf = GroupId::new("pdf")?;
/// let event = HostEvent::ToolsLoaded(pdf.clone(), vec![ToolName::new("pdf_merge")?]);
/// let stored = event.message(Some("call-1"), "");
/// assert_eq!(HostEvent::read(&stored), Some(Ok(event.clone())));
///
/// let mut active = ActiveToolSet::new();
/// assert!(active.apply(&event));
/// assert!(!active.apply(&event), "applying it again changes nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostEvent {
    /// The group was loaded whole.
    Loaded(GroupId),
    /// These tools of the group were loaded, exactly: a restore never
    /// widens them to the group, whatever the catalog holds by then.
    ToolsLoaded(GroupId, Vec<ToolName>),
    /// The group was unloaded (by the model, or by the load budget).
    Unloaded(GroupId),
    /// These tools of a group loaded in part were unloaded (by the load
    /// budget); the group goes when none is left.
    ToolsUnloaded(GroupId, Vec<ToolName>),
    /// This tool of the group was called: what the load budget unloads by,
    /// for a host whose history does not hold the calls themselves (a
    /// gateway).
    Used(GroupId, ToolName),
}

impl HostEvent {
    /// The group the event is about.
    pub fn group(&self) -> &GroupId {
        match self {
            Self::Loaded(group)
            | Self::ToolsLoaded(group, _)
            | Self::Unloaded(group)
            | Self::ToolsUnloaded(group, _)
            | Self::Used(group, _) => group,
        }
    }

    /// The same event about `group` instead (a group renamed since, or
    /// consolidated into one tool whose alias kept the old name).
    pub fn regrouped(self, group: GroupId) -> Self {
        match self {
            Self::Loaded(_) => Self::Loaded(group),
            Self::ToolsLoaded(_, tools) => Self::ToolsLoaded(group, tools),
            Self::Unloaded(_) => Self::Unloaded(group),
            Self::ToolsUnloaded(_, tools) => Self::ToolsUnloaded(group, tools),
            Self::Used(_, tool) => Self::Used(group, tool),
        }
    }

    /// Whether it changes what the conversation may call (every event but
    /// [`Self::Used`]).
    pub fn changes_tools(&self) -> bool {
        match self {
            Self::Loaded(_)
            | Self::ToolsLoaded(..)
            | Self::Unloaded(_)
            | Self::ToolsUnloaded(..) => true,
            Self::Used(..) => false,
        }
    }

    /// The event as history stores it. `cause` is the id of the model's
    /// call that made it, when a model's call did; `content` is what the
    /// model reads of it, empty when it reads nothing (see
    /// [`Self::is_read_by_model`]).
    pub fn message(&self, cause: Option<&str>, content: impl Into<String>) -> Message {
        let tool = match self {
            Self::Loaded(_) | Self::ToolsLoaded(..) => LOAD_TOOL_GROUP_TOOL_NAME,
            Self::Unloaded(_) | Self::ToolsUnloaded(..) => UNLOAD_TOOL_GROUP_TOOL_NAME,
            Self::Used(..) => GROUP_USED_EVENT,
        };
        let input = match self {
            Self::ToolsLoaded(group, tools) | Self::ToolsUnloaded(group, tools) => {
                json!({ GROUP_NAME_PARAMETER: group, TOOLS_FIELD: tools })
            }
            Self::Used(group, tool) => json!({ GROUP_NAME_PARAMETER: group, TOOLS_FIELD: [tool] }),
            Self::Loaded(group) | Self::Unloaded(group) => {
                json!({ GROUP_NAME_PARAMETER: group })
            }
        };
        Message {
            kind: MessageKind::System,
            content: content.into(),
            tool_call_id: cause.map(str::to_owned),
            tool_name: Some(tool.to_owned()),
            tool_input: Some(input.to_string()),
            tool_status: Some(ToolStatus::Success),
        }
    }

    /// The event `message` records: `None` when it records none, an error
    /// when it looks like one but cannot be read. A host's load stored
    /// without `tools` is a whole load.
    pub fn read(message: &Message) -> Option<Result<Self, SkipReason>> {
        if message.kind != MessageKind::System || message.tool_status != Some(ToolStatus::Success) {
            return None;
        }
        let what = match message.tool_name.as_deref()? {
            LOAD_TOOL_GROUP_TOOL_NAME => Recorded::Load,
            UNLOAD_TOOL_GROUP_TOOL_NAME => Recorded::Unload,
            GROUP_USED_EVENT => Recorded::Use,
            _ => return None,
        };
        Some(read_input(message).and_then(|input| {
            let group = input_group(&input)?;
            match (what, partial_tools(&input)?) {
                (Recorded::Load, None) => Ok(Self::Loaded(group)),
                (Recorded::Load, Some(tools)) => Ok(Self::ToolsLoaded(group, tools)),
                (Recorded::Unload, None) => Ok(Self::Unloaded(group)),
                (Recorded::Unload, Some(tools)) => Ok(Self::ToolsUnloaded(group, tools)),
                (Recorded::Use, Some(tools)) if tools.len() == 1 => {
                    let tool = tools.into_iter().next().ok_or(SkipReason::MalformedInput)?;
                    Ok(Self::Used(group, tool))
                }
                (Recorded::Use, _) => Err(SkipReason::MalformedInput),
            }
        }))
    }

    /// Whether the model reads `message` as a partial load: a host's partial
    /// load with text (a router's, whose text is the model's only news that
    /// the group has more tools than it was given).
    pub fn is_read_by_model(message: &Message) -> bool {
        !message.content.is_empty()
            && matches!(Self::read(message), Some(Ok(Self::ToolsLoaded(..))))
    }
}

/// Why a history event was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// `tool_input` is not a JSON object with a non-blank string `group_name`
    /// (or, for a host's load, its `tools` is not a list of strings; for a
    /// compaction, not a snapshot).
    MalformedInput,
    /// The group is not in the catalog any more.
    UnknownGroup(String),
}

impl GroupLoaded<'_> {
    /// The change to record: `None` when the group was loaded already.
    pub fn event(&self) -> Option<HostEvent> {
        self.newly_loaded
            .then(|| HostEvent::Loaded(self.group.id.clone()))
    }
}

impl GroupPartlyLoaded<'_> {
    /// The change to record: `None` when every tool was loaded already.
    pub fn event(&self) -> Option<HostEvent> {
        self.newly_loaded
            .then(|| HostEvent::ToolsLoaded(self.group.id.clone(), self.added.clone()))
    }
}

impl ToolsLoaded<'_> {
    /// The change to record: `None` when nothing changed.
    pub fn event(&self) -> Option<HostEvent> {
        match self {
            Self::Whole(loaded) => loaded.event(),
            Self::Partial(loaded) => loaded.event(),
        }
    }
}

impl GroupUnloaded<'_> {
    /// The change to record.
    pub fn event(&self) -> HostEvent {
        HostEvent::Unloaded(self.group.id.clone())
    }
}

/// A stored event's `tool_input` as JSON.
pub(crate) fn read_input(message: &Message) -> Result<Value, SkipReason> {
    message
        .tool_input
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or(SkipReason::MalformedInput)
}

/// The group an event names, parsed exactly as the live meta-tool parses it.
pub(crate) fn input_group(input: &Value) -> Result<GroupId, SkipReason> {
    let name = group_name_argument(input).map_err(|_| SkipReason::MalformedInput)?;
    GroupId::new(name).map_err(|_| SkipReason::MalformedInput)
}

/// The tools a load names: `None` for a whole load (no `tools`, or `null`);
/// an error when `tools` is not a list of tool names.
fn partial_tools(input: &Value) -> Result<Option<Vec<ToolName>>, SkipReason> {
    match input.get(TOOLS_FIELD) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(tools)) => tools
            .iter()
            .map(|tool| tool.as_str().and_then(|name| ToolName::new(name).ok()))
            .collect::<Option<Vec<ToolName>>>()
            .map(Some)
            .ok_or(SkipReason::MalformedInput),
        Some(_) => Err(SkipReason::MalformedInput),
    }
}
