//! [`restore_active_set`] and [`SessionTools::restore`]: rebuilding a
//! conversation's tools from its stored history.
//!
//! History is the single source of truth for what is loaded. Nothing else is
//! persisted, so a restarted gateway, another replica or a stateless transport
//! rebuilds exactly what the model saw by replaying these events in order:
//!
//! - a [`HostEvent`] (a [`MessageKind::System`] message) is a change the
//!   host recorded: a load, a partial load of exactly the tools it names
//!   (never widened to the group), an unload; each is applied as it was
//!   applied live ([`ActiveToolSet::apply`]);
//! - a model's `load_tool_group` tool call with status
//!   [`ToolStatus::Success`] and a parsable `group_name` loads the group
//!   whole, and a successful `unload_tool_group` call unloads it, unless a
//!   host event names the call (its `tool_call_id`): then the host's events
//!   are its record. Histories written before hosts recorded every change
//!   (a gateway's loads stored as tool calls with made-up ids among them)
//!   restore this way;
//! - a [`MessageKind::Compaction`] summary carries a snapshot of the loads
//!   (whole groups and partial selections, in order), which replaces the
//!   state at that point, so compaction loses nothing;
//! - failed or pending calls are not events; malformed input and groups the
//!   catalog no longer has are skipped and reported, never fatal.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::active_set::{ActiveToolSet, Load};
use crate::catalog::Catalog;
use crate::contract::{LOAD_TOOL_GROUP_TOOL_NAME, TOOLS_PARAMETER, UNLOAD_TOOL_GROUP_TOOL_NAME};
use crate::history::{Message, MessageKind, ToolStatus};
use crate::host_event::{HostEvent, SkipReason, input_group, read_input};
use crate::load_budget::GroupUse;
use crate::name::{GroupId, ToolName};

impl Message {
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

    /// The load as an event of `group` (its name now): a partial load keeps
    /// the names that are tool names, exactly.
    fn event(self, group: GroupId) -> HostEvent {
        match self {
            Self::Whole(_) => HostEvent::Loaded(group),
            Self::Tools { tools, .. } => HostEvent::ToolsLoaded(
                group,
                tools
                    .iter()
                    .filter_map(|tool| ToolName::new(tool).ok())
                    .collect(),
            ),
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

/// A conversation's tools as its host keeps them: what it may call, and
/// when it last called each group (what the load budget unloads by). Both
/// are rebuilt from history by [`SessionTools::restore`], the one restore.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionTools {
    /// What the conversation may call.
    pub active: ActiveToolSet,
    /// When it last called each group.
    pub usage: GroupUse,
}

impl SessionTools {
    /// A new conversation's: core tools only, nothing called.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tools of the conversation `history` records: its active set
    /// ([`restore_active_set`]) and its calls ([`GroupUse::from_history`]),
    /// with the events that were skipped.
    pub fn restore<'m>(
        history: impl IntoIterator<Item = &'m Message> + Clone,
        catalog: &Catalog,
    ) -> (Self, Vec<SkippedEvent>) {
        let restored = restore_active_set(history.clone(), catalog);
        let tools = Self {
            active: restored.active,
            usage: GroupUse::from_history(history, catalog),
        };
        (tools, restored.skipped)
    }
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
    let messages: Vec<&Message> = messages.into_iter().collect();
    // The model's calls whose changes the host recorded as events of their
    // own: those events replay them, in the order the changes happened.
    let recorded: HashSet<&str> = messages
        .iter()
        .filter(|message| message.kind == MessageKind::System)
        .filter_map(|message| message.tool_call_id.as_deref())
        .collect();
    let mut restored = Restored::default();
    for (index, message) in messages.into_iter().enumerate() {
        let mut skip = |reason| {
            restored.skipped.push(SkippedEvent {
                index,
                tool_call_id: message.tool_call_id.clone(),
                reason,
            });
        };
        let event = match message.kind {
            MessageKind::Compaction => {
                match message
                    .tool_input
                    .as_deref()
                    .map(serde_json::from_str::<CompactionSnapshot>)
                {
                    Some(Ok(snapshot)) => {
                        restored.active = ActiveToolSet::new();
                        for load in snapshot.loaded_groups {
                            match current_group(catalog, load.group().clone()) {
                                Ok(group) => {
                                    restored.active.apply(&load.event(group));
                                }
                                Err(group) => skip(SkipReason::UnknownGroup(group.to_string())),
                            }
                        }
                    }
                    Some(Err(_)) => skip(SkipReason::MalformedInput),
                    // A summary with no snapshot predates group loading: nothing to replay.
                    None => {}
                }
                continue;
            }
            MessageKind::System => match HostEvent::read(message) {
                Some(event) => event,
                None => continue,
            },
            MessageKind::ToolCall => {
                let recorded_elsewhere = message
                    .tool_call_id
                    .as_deref()
                    .is_some_and(|id| recorded.contains(id));
                match model_event(message) {
                    Some(_) if recorded_elsewhere => continue,
                    Some(event) => event,
                    None => continue,
                }
            }
            MessageKind::User | MessageKind::Assistant | MessageKind::ToolResult => continue,
        };
        let event = match event {
            Ok(event) => event,
            Err(reason) => {
                skip(reason);
                continue;
            }
        };
        if !event.changes_tools() {
            continue;
        }
        match current_group(catalog, event.group().clone()) {
            Ok(group) => {
                restored.active.apply(&event.regrouped(group));
            }
            Err(group) => skip(SkipReason::UnknownGroup(group.to_string())),
        }
    }
    restored
}

/// The change a model's successful `load_tool_group` or `unload_tool_group`
/// call made, for a host that recorded no event of its own for it: a load
/// is a whole load. A load of named tools has no such reading: only the
/// host's event records what it loaded, and without one it is skipped.
fn model_event(message: &Message) -> Option<Result<HostEvent, SkipReason>> {
    if message.tool_status != Some(ToolStatus::Success) {
        return None;
    }
    let make: fn(GroupId) -> HostEvent = match message.tool_name.as_deref()? {
        LOAD_TOOL_GROUP_TOOL_NAME => HostEvent::Loaded,
        UNLOAD_TOOL_GROUP_TOOL_NAME => HostEvent::Unloaded,
        _ => return None,
    };
    let input = match read_input(message) {
        Ok(input) => input,
        Err(reason) => return Some(Err(reason)),
    };
    let named = !matches!(
        input.get(TOOLS_PARAMETER),
        None | Some(serde_json::Value::Null)
    );
    if named && message.tool_name.as_deref() == Some(LOAD_TOOL_GROUP_TOOL_NAME) {
        return None;
    }
    Some(input_group(&input).map(make))
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

#[cfg(test)]
#[path = "restore_tests.rs"]
mod tests;
