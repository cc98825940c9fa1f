//! [`GroupsFound`]: `find_tool_groups`' answer, the router's ranking of the
//! groups for a request. It holds a routing decision's [`Tier`], so it sits
//! apart from the other answers (`answers.rs`), which the catalog and the
//! router build on; its text is in `contract/groups_found.rs`.

use serde_json::{Value, json};

use crate::group::ToolGroup;
use crate::host_event::HostEvent;
use crate::name::{GroupId, ToolName};
use crate::routing::{SearchRanks, Tier};
use crate::tool::ToolDefinition;

/// The router's ranking of the groups for a request, as `find_tool_groups`
/// answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupsFound<'c> {
    /// The intent the router saw; `None` when nothing matched.
    pub intent: Option<String>,
    /// Its calibrated confidence.
    pub confidence: f64,
    /// The tier that confidence falls in.
    pub tier: Tier,
    /// The groups it would route.
    pub routed: Vec<GroupId>,
    /// What the search ranked: the groups, or the tools across them.
    pub ranks: SearchRanks,
    /// The groups listed, most likely first: the routed ones (at most
    /// `[routing] search_groups`) when it ranks groups; when it ranks tools,
    /// those of its best tools not loaded yet (at most `[routing]
    /// search_results` in all), in the order of their best.
    pub groups: Vec<FoundGroup<'c>>,
    /// Tools it ranked among those listed that were loaded already, best
    /// first, not listed again (ranking tools).
    pub already_loaded: Vec<&'c ToolName>,
    /// Whether more tools have evidence than it listed: asked again, it
    /// lists the next (ranking tools).
    pub more: bool,
    /// The tools listed that the search loaded ([`FoundTools::Loaded`]),
    /// per group in the order listed; empty when it only names them.
    pub loaded: Vec<FoundLoad<'c>>,
}

/// What `find_tool_groups` does with the tools it lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FoundTools {
    /// Names them: the model loads a group to call one (two round trips
    /// from request to call).
    #[default]
    Named,
    /// Loads them as well (each group's listed tools, a partial load), so
    /// the model can call them at once. `toolgate eval`'s episode cost chose
    /// it for the gateway: 0.4-1.7 fewer extra round trips per task on seven
    /// catalogs left out.
    Loaded,
}

/// The tools of one group a search loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundLoad<'c> {
    /// The group.
    pub group: &'c ToolGroup,
    /// The tools the search listed of it, now loaded.
    pub tools: Vec<&'c ToolDefinition>,
    /// `false` when all of them were loaded already.
    pub newly_loaded: bool,
    /// The change the load made, to record: `None` when it made none.
    pub event: Option<HostEvent>,
}

impl<'c> FoundGroup<'c> {
    /// The tools listed of this group: its best, then its id finders.
    pub fn listed_tools(&self) -> impl Iterator<Item = &'c ToolDefinition> + '_ {
        self.tools
            .iter()
            .copied()
            .chain(self.finders.iter().map(|finder| finder.tool))
    }
}

/// One group of a [`GroupsFound`]: its chance of being needed and its
/// tools that best match the request.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundGroup<'c> {
    /// The group.
    pub group: &'c ToolGroup,
    /// Its probability.
    pub probability: f64,
    /// Its best-matching tools, best first (none when no tool matches).
    pub tools: Vec<&'c ToolDefinition>,
    /// How many tools it has in all.
    pub tool_count: usize,
    /// Its tools that find an id a listed tool of another group requires
    /// ([`IdFinders`](crate::routing::IdFinders)), when not listed already:
    /// a group listed for them alone has no `tools`.
    pub finders: Vec<FoundFinder<'c>>,
}

/// A tool listed because a listed tool requires an id it finds.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundFinder<'c> {
    /// The finder.
    pub tool: &'c ToolDefinition,
    /// The listed tool whose required id it finds.
    pub needed_by: &'c ToolName,
}

impl GroupsFound<'_> {
    /// The answer as structured content.
    pub fn to_json(&self) -> Value {
        json!({
            "ranks": self.ranks.as_str(),
            "already_loaded": self.already_loaded,
            "more": self.more,
            "intent": self.intent,
            "confidence": self.confidence,
            "tier": self.tier.as_str(),
            "routed": self.routed,
            "groups": self
                .groups
                .iter()
                .map(|found| json!({
                    "group": found.group.id,
                    "probability": found.probability,
                    "description": found.group.description,
                    "tool_count": found.tool_count,
                    "tools": found
                        .tools
                        .iter()
                        .map(|tool| json!({
                            "name": tool.name,
                            "description": tool.one_line_description(),
                        }))
                        .collect::<Vec<_>>(),
                    "finders": found
                        .finders
                        .iter()
                        .map(|finder| json!({
                            "name": finder.tool.name,
                            "description": finder.tool.one_line_description(),
                            "needed_by": finder.needed_by,
                        }))
                        .collect::<Vec<_>>(),
                }))
                .collect::<Vec<_>>(),
        })
    }
}
