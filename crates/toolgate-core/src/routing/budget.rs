//! The token budget of a routed turn (`[routing] max_token_share`): what
//! the tools a decision shows cost, against what sending every tool would.
//!
//! A decision routes its groups best first; with a budget it passes over a
//! group whose tools no longer fit and goes on to cheaper ones below it, so
//! a turn never costs more than the share of the whole catalog it was
//! given, however flat its scores, and one costly group does not keep out
//! the cheap ones after it. A group costs the tools it shows and the tools
//! that find the ids those require ([`IdFinders`]), each tool counted once.

use std::collections::{HashMap, HashSet};

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::decision::PartialGroup;
use crate::routing::id_finders::IdFinders;
use crate::routing::scorer::ToolScore;
use crate::tokens::{CatalogCost, TokenCounter};

/// The share of every tool's tokens a routed turn may cost when
/// `[routing] max_token_share` is unset: the routing goal's own bound (a
/// turn sees at most 15% of what sending every tool would cost), not a
/// figure fitted to data.
pub const DEFAULT_MAX_TOKEN_SHARE: f64 = 0.15;

/// Schema tokens of a catalog's tools, counted once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCosts {
    per_tool: HashMap<ToolName, usize>,
    per_group: HashMap<GroupId, usize>,
    /// The core tools and the "Available Tool Groups" listing: shown
    /// whatever is routed.
    fixed: usize,
    /// Every tool's schema, meta-tools left out: what sending every tool
    /// costs.
    all_tools: usize,
}

impl ToolCosts {
    /// Counts `catalog`'s schemas with `counter`, each tool once: what
    /// [`CatalogCost`] reports of it, kept per tool too.
    pub fn measure(catalog: &Catalog, counter: &TokenCounter) -> Self {
        let per_tool: HashMap<ToolName, usize> = catalog
            .tools()
            .map(|tool| (tool.definition.name.clone(), counter.tool(tool.definition)))
            .collect();
        // Every tool the report counts (grouped or core) is an enabled
        // tool of the catalog, so in the map.
        let cost = CatalogCost::from_tool_tokens(catalog, counter, |tool| {
            per_tool.get(&tool.name).copied().unwrap_or_default()
        });
        Self {
            per_group: cost
                .groups
                .into_iter()
                .map(|group| (group.group, group.tokens))
                .collect(),
            per_tool,
            fixed: cost.turn1_tokens,
            all_tools: cost.all_tools_tokens,
        }
    }

    /// Tokens of the tool `name`'s schema (0 for a tool not counted).
    pub fn tool(&self, name: &str) -> usize {
        self.per_tool.get(name).copied().unwrap_or(0)
    }

    /// Tokens of every schema of `group` (0 for a group not counted).
    pub fn group(&self, group: &GroupId) -> usize {
        self.per_group.get(group).copied().unwrap_or(0)
    }

    /// Tokens of the core tools and the group listing.
    pub fn fixed(&self) -> usize {
        self.fixed
    }

    /// Tokens of every tool's schema, meta-tools left out.
    pub fn all_tools(&self) -> usize {
        self.all_tools
    }

    /// Tokens `share` of every tool's schemas comes to.
    pub(crate) fn budget(&self, share: f64) -> f64 {
        share * self.all_tools as f64
    }

    /// Tokens of what `groups` show, the core tools and the listing
    /// counted: a group among `partial` its tools, any other whole.
    pub(crate) fn shown(&self, groups: &[GroupId], partial: &[PartialGroup]) -> usize {
        let shown = |group: &GroupId| match partial.iter().find(|p| p.group == *group) {
            Some(partial) => partial.tools.iter().map(|t| self.tool(t.as_str())).sum(),
            None => self.group(group),
        };
        self.fixed + groups.iter().map(shown).sum::<usize>()
    }

    /// The places in `ranked` (best first) of the groups a turn can route
    /// within `share` of every tool's tokens, the core tools, the listing
    /// and the groups `beside` (shown whatever is routed) counted: each
    /// group at the cost of its `per_group` best tools of `tools` (best
    /// first) when it has scored ones, else whole, and of the `finders` of
    /// the ids those tools require, so a routed tool arrives with the tool
    /// that finds its id before a group below it is afforded. Each tool is
    /// counted once, however many groups show or need it. Taken best first,
    /// a group that would break the budget is passed over and the next
    /// ones are tried. The best group is always among them, whatever it
    /// costs.
    pub(crate) fn affordable<'a>(
        &self,
        ranked: &'a [(GroupId, f64)],
        share: f64,
        per_group: Option<usize>,
        tools: &'a [ToolScore],
        beside: &'a [GroupId],
        finders: Option<&'a IdFinders>,
    ) -> Vec<usize> {
        // Each group's best tools, in one pass over the tools.
        let mut best: HashMap<&'a GroupId, Vec<&'a ToolName>> = HashMap::new();
        if let Some(count) = per_group {
            for scored in tools {
                let shown = best.entry(&scored.group).or_default();
                if shown.len() < count {
                    shown.push(&scored.tool);
                }
            }
        }
        let mut counted = Counted::default();
        // What showing `group` adds to what is counted: its shown tools
        // (or the whole group) and their finders, each tool not yet counted.
        let cost_of = |counted: &Counted<'a>, group: &'a GroupId| {
            let mut added = Counted::default();
            let shown = best.get(group).map(Vec::as_slice);
            match shown {
                Some(tools) => {
                    for tool in tools {
                        added.tool(self, group, tool, counted);
                    }
                }
                None => added.whole(self, group, counted),
            }
            // The finders its shown tools need (every tool's, shown whole).
            let needed = finders
                .into_iter()
                .flat_map(|finders| finders.needed_by(group, None))
                .filter(|finder| shown.is_none_or(|tools| tools.contains(&&finder.needed_by)));
            for finder in needed {
                added.tool(self, &finder.group, &finder.tool, counted);
            }
            added
        };
        for group in beside {
            let added = cost_of(&counted, group);
            counted.merge(added);
        }
        let budget = self.budget(share);
        let mut places = Vec::new();
        for (place, (group, _)) in ranked.iter().enumerate() {
            let added = cost_of(&counted, group);
            if place == 0 || (self.fixed + counted.tokens + added.tokens) as f64 <= budget {
                counted.merge(added);
                places.push(place);
            }
        }
        places
    }
}

/// The tools a budget has counted, and their tokens.
#[derive(Default)]
struct Counted<'a> {
    /// Groups counted whole.
    whole: HashSet<&'a GroupId>,
    /// Tools counted one by one.
    tools: HashSet<&'a ToolName>,
    /// Per group, the tokens of its tools counted one by one.
    group_tools: HashMap<&'a GroupId, usize>,
    tokens: usize,
}

impl<'a> Counted<'a> {
    /// Whether `tool` of `group` is counted here.
    fn has(&self, group: &GroupId, tool: &ToolName) -> bool {
        self.whole.contains(group) || self.tools.contains(tool)
    }

    /// Counts `tool` of `group` unless it or `before` already has.
    fn tool(&mut self, costs: &ToolCosts, group: &'a GroupId, tool: &'a ToolName, before: &Self) {
        if !self.has(group, tool) && !before.has(group, tool) {
            let tokens = costs.tool(tool.as_str());
            self.tools.insert(tool);
            *self.group_tools.entry(group).or_default() += tokens;
            self.tokens += tokens;
        }
    }

    /// Counts `group` whole unless it or `before` already has, less its
    /// tools already counted one by one.
    fn whole(&mut self, costs: &ToolCosts, group: &'a GroupId, before: &Self) {
        if self.whole.contains(group) || before.whole.contains(group) {
            return;
        }
        let counted = [&self.group_tools, &before.group_tools]
            .iter()
            .filter_map(|tools| tools.get(group))
            .sum::<usize>();
        self.whole.insert(group);
        self.tokens += costs.group(group).saturating_sub(counted);
    }

    /// Takes in what `other` counted (counted against this one).
    fn merge(&mut self, other: Self) {
        self.whole.extend(other.whole);
        self.tools.extend(other.tools);
        for (group, tokens) in other.group_tools {
            *self.group_tools.entry(group).or_default() += tokens;
        }
        self.tokens += other.tokens;
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
