//! The message model and [`restore_active_set`]: rebuilding a conversation's
//! loaded groups from its stored history.
//!
//! History is the single source of truth for what is loaded. Nothing else is
//! persisted, so a restarted gateway, another replica or a stateless transport
//! rebuilds exactly what the model saw by replaying these events in order:
//!
//! - a `load_tool_group` tool call with status [`ToolStatus::Success`] and a
//!   parsable `group_name` loads the group (the same group twice loads once);
//! - a successful `unload_tool_group` call unloads it;
//! - a [`MessageKind::System`] message naming either meta-tool is an event the
//!   host recorded itself (a router's pre-load, an operator's unload); a
//!   host's load may also name `tools`, a partial load of just those tools of
//!   the group (a load without `tools`, as every load stored before partial
//!   loads existed, is a whole load);
//! - a [`MessageKind::Compaction`] summary carries a snapshot of the loads
//!   (whole groups and partial selections, in order), which replaces the
//!   state at that point, so compaction loses nothing;
//! - failed or pending calls are not events; malformed input and groups the
//!   catalog no longer has are skipped and reported, never fatal.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::active_set::{ActiveToolSet, Load};
use crate::catalog::Catalog;
use crate::contract::{
    GROUP_NAME_PARAMETER, LOAD_TOOL_GROUP_TOOL_NAME, UNLOAD_TOOL_GROUP_TOOL_NAME,
};
use crate::meta_tool::group_name_argument;
use crate::name::{GroupId, ToolName};

/// What a stored message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The user's turn.
    User,
    /// The model's text.
    Assistant,
    /// A tool call the model made (`tool_call_id`, `tool_name`, `tool_input`, `tool_status`).
    ToolCall,
    /// The result of a tool call (`tool_call_id`, `tool_name`, `tool_status`).
    ToolResult,
    /// A message from the host; with `tool_name` set, a group event it recorded.
    System,
    /// A compaction summary; `tool_input` holds the loaded-groups snapshot.
    Compaction,
}

impl MessageKind {
    /// The stored spelling: `user`, `assistant`, `tool_call`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
            Self::System => "system",
            Self::Compaction => "compaction",
        }
    }

    /// The kind stored as `text` (the inverse of [`Self::as_str`]).
    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool_call" => Some(Self::ToolCall),
            "tool_result" => Some(Self::ToolResult),
            "system" => Some(Self::System),
            "compaction" => Some(Self::Compaction),
            _ => None,
        }
    }
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Started, no result yet (or the process died before it finished).
    Pending,
    /// Finished successfully.
    Success,
    /// Failed; the error text is the result.
    Error,
}

impl ToolStatus {
    /// The stored spelling: `pending`, `success`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Success => "success",
            Self::Error => "error",
        }
    }

    /// The status stored as `text` (the inverse of [`Self::as_str`]).
    pub fn from_stored(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "success" => Some(Self::Success),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// One stored message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// What it is.
    pub kind: MessageKind,
    /// Its text (for a tool result, what the model reads).
    pub content: String,
    /// Links a tool call to its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call's arguments as JSON text, exactly as the model sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<String>,
    /// How the call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_status: Option<ToolStatus>,
}

impl Message {
    fn plain(kind: MessageKind, content: impl Into<String>) -> Self {
        Self {
            kind,
            content: content.into(),
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
            tool_status: None,
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::Assistant, content)
    }

    /// A plain system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(MessageKind::System, content)
    }

    /// A tool call the model made.
    pub fn tool_call(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        tool_input: impl Into<String>,
        tool_status: ToolStatus,
    ) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            tool_input: Some(tool_input.into()),
            tool_status: Some(tool_status),
            ..Self::plain(MessageKind::ToolCall, "")
        }
    }

    /// The result of a tool call.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
        tool_status: ToolStatus,
    ) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            tool_name: Some(tool_name.into()),
            tool_status: Some(tool_status),
            ..Self::plain(MessageKind::ToolResult, content)
        }
    }

    /// A group load the host made itself (a router's pre-load), recorded so a
    /// rebuild replays it.
    pub fn group_loaded_by_host(group: &GroupId, content: impl Into<String>) -> Self {
        Self::host_group_event(LOAD_TOOL_GROUP_TOOL_NAME, group, content)
    }

    /// A partial load the host made itself (a router's: some of a group's
    /// tools, best first), recorded so a rebuild replays it. Its `tool_input`
    /// is `{"group_name": group, "tools": [tools...]}`. `content` is the
    /// text the model reads ([`crate::GroupPartlyLoaded`]): unlike other host
    /// events this one is shown to the model, which could not otherwise know
    /// that the group has more tools ([`Self::is_partial_load_by_host`]).
    pub fn tools_loaded_by_host(
        group: &GroupId,
        tools: &[ToolName],
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_input: Some(
                json!({ GROUP_NAME_PARAMETER: group, HOST_LOAD_TOOLS_FIELD: tools }).to_string(),
            ),
            ..Self::host_group_event(LOAD_TOOL_GROUP_TOOL_NAME, group, content)
        }
    }

    /// Whether this is a host's successful partial load
    /// ([`Self::tools_loaded_by_host`]), whose text the model reads.
    pub fn is_partial_load_by_host(&self) -> bool {
        self.kind == MessageKind::System
            && matches!(group_event(self), Some(GroupEvent::Load))
            && matches!(
                event_input(self).map(|input| host_load_tools(&input)),
                Ok(Ok(Some(_)))
            )
    }

    /// A group unload the host made itself.
    pub fn group_unloaded_by_host(group: &GroupId, content: impl Into<String>) -> Self {
        Self::host_group_event(UNLOAD_TOOL_GROUP_TOOL_NAME, group, content)
    }

    fn host_group_event(tool: &str, group: &GroupId, content: impl Into<String>) -> Self {
        Self {
            tool_name: Some(tool.to_owned()),
            tool_input: Some(json!({ GROUP_NAME_PARAMETER: group }).to_string()),
            tool_status: Some(ToolStatus::Success),
            ..Self::plain(MessageKind::System, content)
        }
    }

    /// A compaction summary carrying the loads at that point: its
    /// `tool_input` is `{"loaded_groups": [...]}`, one entry per load in
    /// order, a group name for a whole load and `{"group_name", "tools"}`
    /// for a partial one.
    pub fn compaction(summary: impl Into<String>, active: &ActiveToolSet) -> Self {
        let snapshot = CompactionSnapshot {
            loaded_groups: active.loads().iter().map(SnapshotLoad::from).collect(),
        };
        Self {
            tool_input: serde_json::to_string(&snapshot).ok(),
            ..Self::plain(MessageKind::Compaction, summary)
        }
    }
}

/// The field of a host's load event naming the tools of a partial load.
const HOST_LOAD_TOOLS_FIELD: &str = "tools";

/// The loads snapshot stored in a compaction message's `tool_input`.
#[derive(Debug, Serialize, Deserialize)]
struct CompactionSnapshot {
    loaded_groups: Vec<SnapshotLoad>,
}

/// One load of a snapshot. A whole load is the group's name alone, so a
/// snapshot stored before partial loads (names only) reads as whole loads.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum SnapshotLoad {
    /// The whole group.
    Whole(GroupId),
    /// These tools of the group. Names are kept as text: one the catalog no
    /// longer has is ignored on replay, never fatal.
    Tools {
        group_name: GroupId,
        tools: Vec<String>,
    },
}

impl SnapshotLoad {
    fn group(&self) -> &GroupId {
        match self {
            Self::Whole(group)
            | Self::Tools {
                group_name: group, ..
            } => group,
        }
    }
}

impl From<&Load> for SnapshotLoad {
    fn from(load: &Load) -> Self {
        match load {
            Load::Whole(group) => Self::Whole(group.clone()),
            Load::Tools(group, tools) => Self::Tools {
                group_name: group.clone(),
                tools: tools.iter().map(ToString::to_string).collect(),
            },
        }
    }
}

/// The active set rebuilt from history, with the events that were skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// The rebuilt active set.
    pub active: ActiveToolSet,
    /// Events that looked like group events but could not be replayed.
    pub skipped: Vec<SkippedEvent>,
}

/// A history event [`restore_active_set`] could not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedEvent {
    /// Position of the message in the history passed in.
    pub index: usize,
    /// The tool call's id, when it had one.
    pub tool_call_id: Option<String>,
    /// Why it was skipped.
    pub reason: SkipReason,
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

/// Rebuilds a conversation's active set by replaying its history in order.
///
/// ```
/// use toolgate_core::{restore_active_set, Catalog, Message, ToolStatus};
///
/// let catalog = Catalog::new(); // no groups: every load is skipped
/// let history = [
///     Message::user("check my email"),
///     Message::tool_call("c1", "load_tool_group", r#"{"group_name":"google_gmail"}"#, ToolStatus::Success),
/// ];
/// let restored = restore_active_set(&history, &catalog);
/// assert!(restored.active.loaded_groups().is_empty());
/// assert_eq!(restored.skipped.len(), 1);
/// ```
pub fn restore_active_set<'m>(
    messages: impl IntoIterator<Item = &'m Message>,
    catalog: &Catalog,
) -> Restored {
    let mut restored = Restored::default();
    for (index, message) in messages.into_iter().enumerate() {
        let mut skip = |reason| {
            restored.skipped.push(SkippedEvent {
                index,
                tool_call_id: message.tool_call_id.clone(),
                reason,
            });
        };
        match message.kind {
            MessageKind::Compaction => {
                match message
                    .tool_input
                    .as_deref()
                    .map(serde_json::from_str::<CompactionSnapshot>)
                {
                    Some(Ok(snapshot)) => {
                        restored.active = ActiveToolSet::new();
                        for load in snapshot.loaded_groups {
                            if catalog.group(load.group().as_str()).is_none() {
                                skip(SkipReason::UnknownGroup(load.group().to_string()));
                                continue;
                            }
                            match load {
                                SnapshotLoad::Whole(group) => restored.active.replay_load(group),
                                SnapshotLoad::Tools { group_name, tools } => restored
                                    .active
                                    .replay_load_tools(catalog, &group_name, &tools),
                            }
                        }
                    }
                    Some(Err(_)) => skip(SkipReason::MalformedInput),
                    // A summary with no snapshot predates group loading: nothing to replay.
                    None => {}
                }
            }
            MessageKind::ToolCall | MessageKind::System => {
                let Some(event) = group_event(message) else {
                    continue;
                };
                let parsed = event_input(message).and_then(|input| {
                    let tools = match (&event, message.kind) {
                        // Only the host records partial loads: a model's call
                        // loaded the whole group whatever else it sent.
                        (GroupEvent::Load, MessageKind::System) => host_load_tools(&input)?,
                        _ => None,
                    };
                    Ok((event_group(&input)?, tools))
                });
                let (group, tools) = match parsed {
                    Ok(parsed) => parsed,
                    Err(reason) => {
                        skip(reason);
                        continue;
                    }
                };
                let group = match current_group(catalog, group) {
                    Ok(group) => group,
                    Err(group) => {
                        skip(SkipReason::UnknownGroup(group.to_string()));
                        continue;
                    }
                };
                match (event, tools) {
                    (GroupEvent::Load, None) => restored.active.replay_load(group),
                    (GroupEvent::Load, Some(tools)) => {
                        restored.active.replay_load_tools(catalog, &group, &tools);
                    }
                    (GroupEvent::Unload, _) => {
                        restored.active.unload(catalog, group.as_str()).ok();
                    }
                }
            }
            MessageKind::User | MessageKind::Assistant | MessageKind::ToolResult => {}
        }
    }
    restored
}

enum GroupEvent {
    Load,
    Unload,
}

/// Which group event a message is, if it is a successful one.
fn group_event(message: &Message) -> Option<GroupEvent> {
    if message.tool_status != Some(ToolStatus::Success) {
        return None;
    }
    match message.tool_name.as_deref()? {
        LOAD_TOOL_GROUP_TOOL_NAME => Some(GroupEvent::Load),
        UNLOAD_TOOL_GROUP_TOOL_NAME => Some(GroupEvent::Unload),
        _ => None,
    }
}

/// The group an event's group name stands for now: the group itself, or
/// the group of the tool an alias by that name leads to (a group since
/// consolidated into one tool, or renamed). `Err` gives the name back.
fn current_group(catalog: &Catalog, group: GroupId) -> Result<GroupId, GroupId> {
    if catalog.group(group.as_str()).is_some() {
        return Ok(group);
    }
    catalog
        .alias(group.as_str())
        .and_then(|alias| catalog.group_of(alias.tool.as_str()))
        .cloned()
        .ok_or(group)
}

/// An event's `tool_input` as JSON.
fn event_input(message: &Message) -> Result<Value, SkipReason> {
    message
        .tool_input
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or(SkipReason::MalformedInput)
}

/// The group an event names, parsed exactly as the live meta-tool parses it.
fn event_group(input: &Value) -> Result<GroupId, SkipReason> {
    let name = group_name_argument(input).map_err(|_| SkipReason::MalformedInput)?;
    GroupId::new(name).map_err(|_| SkipReason::MalformedInput)
}

/// The tools a host's load names: `None` for a whole load (no `tools`, or
/// `null`); an error when `tools` is not a list of strings.
fn host_load_tools(input: &Value) -> Result<Option<Vec<String>>, SkipReason> {
    match input.get(HOST_LOAD_TOOLS_FIELD) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(tools)) => tools
            .iter()
            .map(|tool| tool.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .map(Some)
            .ok_or(SkipReason::MalformedInput),
        Some(_) => Err(SkipReason::MalformedInput),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
