//! [`LoadBudget`]: a bound on the tokens of the loaded groups' schemas, kept
//! by unloading the groups least recently used before a load would pass it.
//!
//! "Used" means called: [`GroupUse`] stamps a group each time one of its
//! tools is called (directly, through an alias, or through `call_tool`),
//! never when it is loaded, so a group loaded long ago and called all along
//! stays while one loaded and never called goes first. Groups never called
//! go before any called one, oldest load first; among called ones, the
//! oldest last call goes first. The group being loaded never goes, and a
//! group always listed (`visibility = "always"`) is outside the budget.
//!
//! A group larger than the whole budget is loaded alone: every other loaded
//! group is unloaded, and the load's answer says the group is over the
//! budget ([`UnloadedForBudget`]). The caller records each unload in the
//! conversation's history as an unload of the group, so a restore replays
//! it exactly.
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
use crate::name::GroupId;
use crate::tool::ToolDefinition;

mod plan;

pub use plan::{BudgetPlan, Oversized, UnloadedForBudget};

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

/// When each group was last called, in call order: what the budget unloads
/// by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupUse {
    /// Each group's last call, by the number of calls before it.
    last: HashMap<GroupId, u64>,
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
                    if let Some(Ok(HostEvent::Used(group))) = HostEvent::read(message) {
                        usage.mark(&group);
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
    /// call ([`HostEvent::Used`]): `None` when the group was the one used
    /// last already, which changes no order the budget reads.
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
        let group = catalog.resolve(tool).and_then(|entry| entry.group)?.clone();
        self.mark(&group).then_some(HostEvent::Used(group))
    }

    /// Marks `group` used now; whether it was not the one used last.
    fn mark(&mut self, group: &GroupId) -> bool {
        let latest = self.last.get(group) == Some(&self.calls) && self.calls > 0;
        self.calls += 1;
        self.last.insert(group.clone(), self.calls);
        !latest
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
        let Some(target) = view.group(group) else {
            return BudgetPlan::default();
        };
        if always(group) || active.selection(group) == Some(GroupSelection::Whole) {
            return BudgetPlan::default();
        }
        let incoming = match load.tools {
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
        };
        if incoming == 0 {
            return BudgetPlan::default();
        }
        // The other loaded groups within the budget, each with its tokens,
        // least recently used first (never called first, then by last
        // call; ties in load order, which `loaded_groups` is).
        let mut others: Vec<(usize, &GroupId, usize)> = active
            .loaded_groups()
            .iter()
            .enumerate()
            .filter(|(_, id)| id.as_str() != group && !always(id.as_str()))
            .map(|(place, id)| {
                let counted = loaded_tokens(active, view, id, tokens)
                    .max(loaded_tokens(active, catalog, id, tokens));
                (place, id, counted)
            })
            .collect();
        others.sort_by_key(|(place, id, _)| (usage.last_call(id), *place));
        let mut total = incoming + others.iter().map(|(_, _, t)| t).sum::<usize>();
        let mut plan = BudgetPlan {
            budget,
            ..BudgetPlan::default()
        };
        for (_, id, group_tokens) in others {
            if total <= budget {
                break;
            }
            total -= group_tokens;
            plan.unload.push(id.clone());
        }
        if incoming > budget {
            plan.oversized = Some(Oversized {
                group: target.id.clone(),
                tokens: incoming,
                budget,
            });
        }
        plan
    }
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
