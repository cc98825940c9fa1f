//! [`LoadBudget`]: a bound on the tokens of the loaded tools' schemas, kept
//! by unloading what was used least recently before a load would pass it.
//!
//! What goes is a group loaded whole, as one, or one tool of a group loaded
//! in part (by name, a search, a router): a load of named tools is undone
//! tool by tool. "Used" means called: [`GroupUse`] stamps a group and the
//! tool each time the tool is called (directly, through an alias, or
//! through `call_tool`), never when it is loaded, so a group loaded long ago
//! and called all along stays while one loaded and never called goes first.
//! What was never called goes before anything called, oldest load first;
//! among the rest, the oldest last call goes first. The group being loaded
//! never goes, and a group always listed (`visibility = "always"`) is
//! outside the budget.
//!
//! A load larger than the whole budget is loaded alone: everything else is
//! unloaded, and the load's answer says the group is over the budget
//! ([`UnloadedForBudget`]). The caller records each unload in the
//! conversation's history, so a restore replays it exactly.
//!
//! A caller's policy narrows what it sees, never what its loads count: each
//! loaded group counts the tokens of its loaded tools in the caller's view
//! or in the whole catalog, whichever is more, so a group the policy hides
//! counts too, and a reload that shows more cannot take a session past the
//! budget.

use std::collections::HashMap;

use serde_json::Value;

use crate::active_set::{ActiveToolSet, GroupSelection};
use crate::catalog::{Catalog, GroupVisibility};
use crate::contract::CALL_TOOL_TOOL_NAME;
use crate::history::{Message, MessageKind};
use crate::host_event::HostEvent;
use crate::name::{GroupId, ToolName};
use crate::tool::ToolDefinition;

mod plan;

pub use plan::{BudgetPlan, Oversized, Unload, UnloadedForBudget};

/// The most tokens of tool schemas a conversation's loaded groups may hold
/// (`[tools] max_loaded_tokens`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LoadBudget {
    /// No bound: loaded groups stay until unloaded (the default).
    #[default]
    Unlimited,
    /// At most this many tokens, counted as toolgate counts schema tokens
    /// ([`crate::TokenCounter::tool`]).
    Tokens(usize),
}

/// When each group and each tool was last called, in call order: what the
/// budget unloads by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupUse {
    /// Each group's last call, by the number of calls before it.
    last: HashMap<GroupId, u64>,
    /// Each tool's last call, the same way.
    tools: HashMap<ToolName, u64>,
    /// Calls counted so far.
    calls: u64,
}

impl GroupUse {
    /// No call yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls of `history`, counted as [`Self::record`] counts them: the
    /// model's tool calls and the uses a host recorded ([`HostEvent::Used`]),
    /// in order.
    pub fn from_history<'m>(
        history: impl IntoIterator<Item = &'m Message>,
        catalog: &Catalog,
    ) -> Self {
        let mut usage = Self::new();
        for message in history {
            match message.kind {
                MessageKind::ToolCall => {
                    let Some(tool) = message.tool_name.as_deref() else {
                        continue;
                    };
                    let arguments = message
                        .tool_input
                        .as_deref()
                        .and_then(|input| serde_json::from_str::<Value>(input).ok());
                    usage.record(catalog, tool, arguments.as_ref());
                }
                MessageKind::System => {
                    if let Some(Ok(HostEvent::Used(group, tool))) = HostEvent::read(message) {
                        usage.mark(&group, &tool);
                    }
                }
                MessageKind::User
                | MessageKind::Assistant
                | MessageKind::ToolResult
                | MessageKind::Compaction => {}
            }
        }
        usage
    }

    /// A call of `tool` with `arguments`: its group (an alias's target's;
    /// for `call_tool`, the group of the tool its `name` names) is used now.
    /// A core tool, or a name the catalog does not know, uses no group.
    /// Returns the use to record for a host whose history does not hold the
    /// call ([`HostEvent::Used`]): `None` when the tool was the one used last
    /// already, which changes no order the budget reads.
    pub fn record(
        &mut self,
        catalog: &Catalog,
        tool: &str,
        arguments: Option<&Value>,
    ) -> Option<HostEvent> {
        let tool = if tool == CALL_TOOL_TOOL_NAME {
            arguments.and_then(|arguments| arguments.get("name")?.as_str())?
        } else {
            tool
        };
        let entry = catalog.resolve(tool)?;
        let group = entry.group?.clone();
        let tool = entry.definition.name.clone();
        self.mark(&group, &tool)
            .then_some(HostEvent::Used(group, tool))
    }

    /// Marks `tool` of `group` used now; whether it was not the one used
    /// last.
    fn mark(&mut self, group: &GroupId, tool: &ToolName) -> bool {
        let latest = self.tools.get(tool) == Some(&self.calls) && self.calls > 0;
        self.calls += 1;
        self.last.insert(group.clone(), self.calls);
        self.tools.insert(tool.clone(), self.calls);
        !latest
    }

    /// When `tool` was last called; `None` when never.
    fn last_tool_call(&self, tool: &ToolName) -> Option<u64> {
        self.tools.get(tool).copied()
    }

    /// When `group` was last called; `None` when never.
    fn last_call(&self, group: &GroupId) -> Option<u64> {
        self.last.get(group).copied()
    }
}

/// A load the budget makes room for: a group whole, or (`tools`) only the
/// tools of it a call names, by their names or aliases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incoming<'a> {
    /// The group.
    pub group: &'a str,
    /// The tools named; `None`: the whole group.
    pub tools: Option<&'a [String]>,
}

impl Incoming<'_> {
    /// The tokens of tool schemas the group holds once this load is made,
    /// for a caller who sees `view` of `catalog` (counted in whichever holds
    /// more): the whole group's, or what it holds already and the named
    /// tools it does not. 0 when the load changes nothing: a group the
    /// caller cannot see, an empty one, one loaded whole or always listed.
    pub fn tokens(
        &self,
        active: &ActiveToolSet,
        (view, catalog): (&Catalog, &Catalog),
        tokens: &dyn Fn(&ToolDefinition) -> usize,
    ) -> usize {
        let group = self.group;
        let Some(target) = view.group(group) else {
            return 0;
        };
        if view.group_visibility(group) == Some(GroupVisibility::Always)
            || active.selection(group) == Some(GroupSelection::Whole)
        {
            return 0;
        }
        match self.tools {
            None => {
                let whole =
                    |catalog: &Catalog| -> usize { catalog.group_tools(group).map(tokens).sum() };
                whole(view).max(whole(catalog))
            }
            // What the group holds already, and the named tools it does not.
            Some(named) => {
                let id = &target.id;
                let held = loaded_tokens(active, view, id, tokens)
                    .max(loaded_tokens(active, catalog, id, tokens));
                let mut added: Vec<&ToolDefinition> = Vec::new();
                for name in named {
                    if let Some(tool) = view.resolve(name).filter(|tool| tool.group == Some(id))
                        && active.check_available(view, name).is_err()
                        && !added.iter().any(|other| other.name == tool.definition.name)
                    {
                        added.push(tool.definition);
                    }
                }
                held + added.into_iter().map(tokens).sum::<usize>()
            }
        }
    }
}

impl<'a> From<&'a str> for Incoming<'a> {
    /// The whole group `group`.
    fn from(group: &'a str) -> Self {
        Self { group, tools: None }
    }
}

impl LoadBudget {
    /// What to unload before `load` (a group whole, or some of its tools)
    /// joins `active` for a caller who sees `view` of `catalog`, so that the
    /// loaded groups'
    /// schemas (each tool's tokens by `tokens`, counted in the view or the
    /// catalog, whichever holds more) stay within the budget: the least
    /// recently used groups by `usage`, as few as it takes. Nothing when
    /// there is no bound, when the load changes nothing (a group the caller
    /// cannot see, an empty one, one loaded whole or always listed) or when
    /// everything fits.
    pub fn plan<'a>(
        self,
        active: &ActiveToolSet,
        (view, catalog): (&Catalog, &Catalog),
        load: impl Into<Incoming<'a>>,
        usage: &GroupUse,
        tokens: &dyn Fn(&ToolDefinition) -> usize,
    ) -> BudgetPlan {
        let Self::Tokens(budget) = self else {
            return BudgetPlan::default();
        };
        let load = load.into();
        let group = load.group;
        let always = |id: &str| view.group_visibility(id) == Some(GroupVisibility::Always);
        let incoming = load.tokens(active, (view, catalog), tokens);
        let Some(target) = view.group(group).filter(|_| incoming > 0) else {
            return BudgetPlan::default();
        };
        let others = candidates(active, (view, catalog), usage, tokens, &|id, _| {
            id.as_str() == group || always(id.as_str())
        });
        let mut plan = shed(budget, incoming, others);
        if incoming > budget {
            plan.oversized = Some(Oversized {
                group: target.id.clone(),
                tokens: incoming,
                budget,
            });
        }
        plan
    }

    /// What to unload after a search loaded `kept` (each group's tools it
    /// listed) into `active`, so that the loaded schemas are back within the
    /// budget: the least recently used of everything else, as few as it
    /// takes. The search's own tools stay, even past the budget. Nothing
    /// when there is no bound or everything fits.
    pub fn trim(
        self,
        active: &ActiveToolSet,
        (view, catalog): (&Catalog, &Catalog),
        kept: &[(GroupId, Vec<ToolName>)],
        usage: &GroupUse,
        tokens: &dyn Fn(&ToolDefinition) -> usize,
    ) -> BudgetPlan {
        let Self::Tokens(budget) = self else {
            return BudgetPlan::default();
        };
        let always =
            |id: &GroupId| view.group_visibility(id.as_str()) == Some(GroupVisibility::Always);
        let is_kept = |id: &GroupId, tool: Option<&ToolName>| {
            kept.iter()
                .any(|(group, tools)| group == id && tool.is_none_or(|tool| tools.contains(tool)))
        };
        let counted = |catalog: &Catalog, tool: &ToolName| {
            catalog
                .tool(tool.as_str())
                .map_or(0, |tool| tokens(tool.definition))
        };
        let incoming = kept
            .iter()
            .filter(|(group, _)| !always(group))
            .flat_map(|(_, tools)| tools)
            .map(|tool| counted(view, tool).max(counted(catalog, tool)))
            .sum();
        let others = candidates(active, (view, catalog), usage, tokens, &|id, tool| {
            always(id) || is_kept(id, tool)
        });
        shed(budget, incoming, others)
    }
}

/// What else is loaded within the budget, each with its tokens, least
/// recently used first (never called first, then by last call; ties in
/// load order): a group loaded whole as one, each tool of a group loaded in
/// part on its own; none that `skip` says of its group and tool (`None`: the
/// group whole).
fn candidates(
    active: &ActiveToolSet,
    (view, catalog): (&Catalog, &Catalog),
    usage: &GroupUse,
    tokens: &dyn Fn(&ToolDefinition) -> usize,
    skip: &dyn Fn(&GroupId, Option<&ToolName>) -> bool,
) -> Vec<Candidate> {
    let counted = |catalog: &Catalog, tool: &ToolName| {
        catalog
            .tool(tool.as_str())
            .map_or(0, |tool| tokens(tool.definition))
    };
    let mut others: Vec<Candidate> = Vec::new();
    for (place, id) in active.loaded_groups().iter().enumerate() {
        match active.selection(id.as_str()) {
            Some(GroupSelection::Tools(names)) => {
                for (order, name) in names.into_iter().enumerate() {
                    if skip(id, Some(name)) {
                        continue;
                    }
                    let size = counted(view, name).max(counted(catalog, name));
                    others.push(Candidate {
                        last: usage.last_tool_call(name),
                        place: (place, order),
                        unload: Unload::Tool(id.clone(), name.clone()),
                        tokens: size,
                    });
                }
            }
            Some(GroupSelection::Whole) | None => {
                if skip(id, None) {
                    continue;
                }
                let size = loaded_tokens(active, view, id, tokens)
                    .max(loaded_tokens(active, catalog, id, tokens));
                others.push(Candidate {
                    last: usage.last_call(id),
                    place: (place, 0),
                    unload: Unload::Group(id.clone()),
                    tokens: size,
                });
            }
        }
    }
    others.sort_by_key(|candidate| (candidate.last, candidate.place));
    others
}

/// The plan that unloads the first of `others` (least recently used first)
/// until they and `incoming` fit `budget`.
fn shed(budget: usize, incoming: usize, others: Vec<Candidate>) -> BudgetPlan {
    let mut total = incoming
        + others
            .iter()
            .map(|candidate| candidate.tokens)
            .sum::<usize>();
    let mut plan = BudgetPlan {
        budget,
        ..BudgetPlan::default()
    };
    for Candidate {
        unload,
        tokens: size,
        ..
    } in others
    {
        if total <= budget {
            break;
        }
        total -= size;
        plan.unload.push(unload);
    }
    plan
}

/// Something loaded the budget may unload.
struct Candidate {
    /// When it was last called; `None` when never.
    last: Option<u64>,
    /// Where it was loaded: its group's place, and its own among the group's.
    place: (usize, usize),
    unload: Unload,
    tokens: usize,
}

/// Tokens of `group`'s tools that `active` holds.
fn loaded_tokens(
    active: &ActiveToolSet,
    catalog: &Catalog,
    group: &GroupId,
    tokens: &dyn Fn(&ToolDefinition) -> usize,
) -> usize {
    match active.selection(group.as_str()) {
        Some(GroupSelection::Whole) => catalog.group_tools(group.as_str()).map(tokens).sum(),
        Some(GroupSelection::Tools(names)) => names
            .iter()
            .filter_map(|name| catalog.tool(name.as_str()))
            .map(|tool| tokens(tool.definition))
            .sum(),
        None => 0,
    }
}

#[cfg(test)]
#[path = "load_budget_tests.rs"]
mod tests;
