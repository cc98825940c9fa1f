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

use std::collections::HashMap;

use serde_json::Value;

use crate::active_set::{ActiveToolSet, GroupSelection};
use crate::catalog::{Catalog, GroupVisibility};
use crate::contract::CALL_TOOL_TOOL_NAME;
use crate::history::{Message, MessageKind};
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

    /// The calls of `history` (the model's tool calls, in order), counted as
    /// [`Self::record`] counts them.
    pub fn from_history<'m>(
        history: impl IntoIterator<Item = &'m Message>,
        catalog: &Catalog,
    ) -> Self {
        let mut usage = Self::new();
        for message in history {
            if message.kind != MessageKind::ToolCall {
                continue;
            }
            let Some(tool) = message.tool_name.as_deref() else {
                continue;
            };
            let arguments = message
                .tool_input
                .as_deref()
                .and_then(|input| serde_json::from_str::<Value>(input).ok());
            usage.record(catalog, tool, arguments.as_ref());
        }
        usage
    }

    /// A call of `tool` with `arguments`: its group (an alias's target's;
    /// for `call_tool`, the group of the tool its `name` names) is used now.
    /// A core tool, or a name the catalog does not know, uses no group.
    pub fn record(&mut self, catalog: &Catalog, tool: &str, arguments: Option<&Value>) {
        let tool = if tool == CALL_TOOL_TOOL_NAME {
            match arguments.and_then(|arguments| arguments.get("name")?.as_str()) {
                Some(named) => named,
                None => return,
            }
        } else {
            tool
        };
        let Some(group) = catalog.resolve(tool).and_then(|entry| entry.group) else {
            return;
        };
        self.calls += 1;
        self.last.insert(group.clone(), self.calls);
    }

    /// When `group` was last called; `None` when never.
    fn last_call(&self, group: &GroupId) -> Option<u64> {
        self.last.get(group).copied()
    }
}

impl LoadBudget {
    /// What to unload before `group` is loaded whole into `active` so that
    /// the loaded groups' schemas (each tool's tokens by `tokens`) stay
    /// within the budget: the least recently used groups by `usage`, as
    /// few as it takes. Nothing when there is no bound, when the load
    /// changes nothing (an unknown or empty group, one loaded whole or
    /// always listed) or when everything fits.
    pub fn plan(
        self,
        active: &ActiveToolSet,
        catalog: &Catalog,
        group: &str,
        usage: &GroupUse,
        tokens: &dyn Fn(&ToolDefinition) -> usize,
    ) -> BudgetPlan {
        let Self::Tokens(budget) = self else {
            return BudgetPlan::default();
        };
        let always = |id: &str| catalog.group_visibility(id) == Some(GroupVisibility::Always);
        let Some(target) = catalog.group(group) else {
            return BudgetPlan::default();
        };
        if always(group) || active.selection(group) == Some(GroupSelection::Whole) {
            return BudgetPlan::default();
        }
        let incoming: usize = catalog.group_tools(group).map(tokens).sum();
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
            .map(|(place, id)| (place, id, loaded_tokens(active, catalog, id, tokens)))
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
