//! What a policy shows for one query ([`Seen`]) and what that costs in
//! tool-schema tokens ([`Costs`]).
//!
//! Every tool is counted once per dataset and every policy adds up the same
//! counts, so the policies differ only in what they show, never in how it is
//! counted.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use toolgate_core::routing::ToolCosts;
use toolgate_core::{
    ActionPolicy, Catalog, GroupId, MAX_TOOL_NAME_LEN, Origin, PolymorphicTool, TokenCounter,
    ToolDefinition, ToolGroup, ToolName,
};

/// What one query lets the model see under a policy.
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    /// The groups shown (empty when `all`).
    pub(crate) groups: HashSet<GroupId>,
    /// The tools shown (empty when `all`).
    pub(crate) tools: HashSet<String>,
    pub(crate) tokens: usize,
    pub(crate) micros: f64,
    /// The whole catalog was shown.
    pub(crate) all: bool,
}

impl Seen {
    /// Whether `group` was shown.
    pub(crate) fn shows_group(&self, group: &GroupId) -> bool {
        self.all || self.groups.contains(group)
    }

    /// Whether the tool `name` was shown.
    pub(crate) fn shows_tool(&self, name: &str) -> bool {
        self.all || self.tools.contains(name)
    }
}

/// Token costs, counted once per tool.
pub(crate) struct Costs {
    /// Each tool's and group's schema tokens, as the router counts them
    /// for its budget.
    pub(crate) tools: Arc<ToolCosts>,
    /// Each group's tokens as one polymorphic tool (as `[groups."*"]`
    /// exposes it: groups of one tool, or that cannot be one tool, as tools).
    per_group_polymorphic: HashMap<GroupId, usize>,
    /// Every tool schema (meta-tools left out).
    pub(crate) all_tools: usize,
    all_polymorphic: usize,
    /// The core tools and the "Available Tool Groups" listing.
    pub(crate) core_and_listing: usize,
}

impl Costs {
    pub(crate) fn new(catalog: &Catalog, counter: &TokenCounter) -> Self {
        let tools = ToolCosts::measure(catalog, counter);
        let per_group_polymorphic: HashMap<GroupId, usize> = catalog
            .groups()
            .map(|g| {
                let tokens =
                    polymorphic_tokens(catalog, counter, g).unwrap_or_else(|| tools.group(&g.id));
                (g.id.clone(), tokens)
            })
            .collect();
        let all_polymorphic = per_group_polymorphic.values().sum::<usize>()
            + catalog
                .tools()
                .filter(|t| t.group.is_none() && *t.origin != Origin::MetaTool)
                .map(|t| tools.tool(t.definition.name.as_str()))
                .sum::<usize>();
        Self {
            all_tools: tools.all_tools(),
            core_and_listing: tools.fixed(),
            tools: Arc::new(tools),
            per_group_polymorphic,
            all_polymorphic,
        }
    }

    /// What `seen` costs when every group is sent as one polymorphic tool.
    pub(crate) fn polymorphic(&self, seen: &Seen) -> Seen {
        let tokens = if seen.all {
            self.all_polymorphic
        } else {
            self.core_and_listing
                + seen
                    .groups
                    .iter()
                    .map(|g| self.per_group_polymorphic[g])
                    .sum::<usize>()
        };
        Seen {
            groups: seen.groups.clone(),
            tools: seen.tools.clone(),
            tokens,
            micros: seen.micros,
            all: seen.all,
        }
    }

    /// Core tools, the listing and `groups`; or every tool when `all`.
    pub(crate) fn groups_seen(&self, catalog: &Catalog, groups: &[GroupId], all: bool) -> Seen {
        if all {
            return Seen {
                groups: HashSet::new(),
                tools: HashSet::new(),
                tokens: self.all_tools,
                micros: 0.0,
                all: true,
            };
        }
        let tools = groups
            .iter()
            .flat_map(|g| catalog.group_tools(g.as_str()).map(|t| t.name.to_string()))
            .collect();
        Seen {
            groups: groups.iter().cloned().collect(),
            tools,
            tokens: self.core_and_listing
                + groups.iter().map(|g| self.tools.group(g)).sum::<usize>(),
            micros: 0.0,
            all: false,
        }
    }

    /// Core tools, the listing and some tools of some groups (a partial
    /// load): `tools` per group.
    pub(crate) fn partial_seen(&self, tools: &[(GroupId, Vec<&str>)]) -> Seen {
        Seen {
            groups: tools
                .iter()
                .filter(|(_, names)| !names.is_empty())
                .map(|(group, _)| group.clone())
                .collect(),
            tools: tools
                .iter()
                .flat_map(|(_, names)| names.iter().map(|n| (*n).to_owned()))
                .collect(),
            tokens: self.core_and_listing
                + tools
                    .iter()
                    .flat_map(|(_, names)| names.iter().map(|n| self.tools.tool(n)))
                    .sum::<usize>(),
            micros: 0.0,
            all: false,
        }
    }

    /// The named tools alone (how hosted tool search works: no listing).
    pub(crate) fn tools_seen(&self, catalog: &Catalog, names: &[&str]) -> Seen {
        Seen {
            groups: names
                .iter()
                .filter_map(|n| catalog.group_of(n).cloned())
                .collect(),
            tools: names.iter().map(|n| (*n).to_owned()).collect(),
            tokens: names.iter().map(|n| self.tools.tool(n)).sum(),
            micros: 0.0,
            all: false,
        }
    }
}

/// A group's tokens as one polymorphic tool named after it (its id made a
/// valid tool name); `None` for a group of one tool or one that cannot be a
/// polymorphic tool.
fn polymorphic_tokens(
    catalog: &Catalog,
    counter: &TokenCounter,
    group: &ToolGroup,
) -> Option<usize> {
    let members: Vec<&ToolDefinition> = catalog.group_tools(group.id.as_str()).collect();
    if members.len() < 2 {
        return None;
    }
    let name: String = group
        .id
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME_LEN)
        .collect();
    let name = ToolName::new(name).ok()?;
    let (tool, _) = PolymorphicTool::consolidate(
        name,
        group.description.clone(),
        &members,
        group.id.as_str(),
        &ActionPolicy::default(),
    )
    .ok()?;
    Some(counter.tool(tool.definition()))
}
