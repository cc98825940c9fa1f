//! [`MetaTools`]: the one place that answers the meta-tools for a
//! conversation's active set. The agent loop and the MCP gateway both call
//! it; each only renders the answer for its wire and records what it must.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::active_set::ActiveToolSet;
use crate::answers::{
    GroupLoaded, GroupPartlyLoaded, GroupUnloaded, MetaError, ToolsLoaded, UnloadGroupError,
};
use crate::catalog::Catalog;
use crate::groups_found::{FoundFinder, FoundGroup, FoundLoad, FoundTools, GroupsFound};
use crate::host_event::HostEvent;
use crate::meta_tool::{MetaCall, MetaTool};
use crate::name::{GroupId, ToolName};
use crate::routing::{Decision, Embeddings, IdFinders, Router, SearchRanks, Taxonomy};
use crate::tool::ToolDefinition;

/// The meta-tools a host offers, and how it answers them.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{ActiveToolSet, Catalog, MetaAnswer, MetaTool, MetaTools};
///
/// let catalog = Catalog::new();
/// let meta = MetaTools::new([MetaTool::UnloadToolGroup]);
/// let call = meta.parse("load_tool_group", &json!({})).unwrap();
/// assert_eq!(call.unwrap_err().to_string(), "Required parameter 'group_name' is missing.");
/// assert!(meta.parse("call_tool", &json!({})).is_none(), "not offered");
/// ```
#[derive(Clone, Debug, Default)]
pub struct MetaTools {
    offered: Vec<MetaTool>,
    taxonomy: Option<Taxonomy>,
    /// The embedding model `find_tool_groups` scores with, when there is one.
    embeddings: Option<Arc<dyn Embeddings>>,
    /// What `find_tool_groups` does with the tools it lists.
    found_tools: FoundTools,
    /// The routers `find_tool_groups` last used, with the catalog revision
    /// and scope each indexes (one per caller's view): rebuilt only when the
    /// catalog changed.
    router: Arc<Mutex<Vec<IndexedRouter>>>,
}

/// A router and the catalog revision and scope it indexes.
type IndexedRouter = ((u64, u64), Arc<Router>);

/// Routers kept at once: one per view in use, the oldest let go first.
const ROUTERS_KEPT: usize = 16;

/// A meta-tool's answer when the call succeeds.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaAnswer<'c> {
    /// The group is loaded (or already was).
    Loaded(GroupLoaded<'c>),
    /// The tools named of the group are loaded (or already were), not the
    /// whole group.
    PartlyLoaded(GroupPartlyLoaded<'c>),
    /// A load named tools the group does not have: the whole group is
    /// loaded (or already was) instead.
    LoadedInstead {
        /// The whole group's load.
        loaded: GroupLoaded<'c>,
        /// The names asked for that are not its tools, as given.
        unknown: Vec<String>,
    },
    /// The group is unloaded.
    Unloaded(GroupUnloaded<'c>),
    /// `call_tool`: run this tool with these arguments, through the same
    /// checks as a direct call of it.
    Call {
        /// The tool's name, as the model gave it (it may be an alias).
        tool: String,
        /// Its arguments, an object.
        arguments: Value,
    },
    /// `find_tool_groups`: the ranking.
    Found(GroupsFound<'c>),
}

impl MetaAnswer<'_> {
    /// The changes the answer made to the active set, in order, to record.
    pub fn events(&self) -> Vec<HostEvent> {
        match self {
            Self::Loaded(loaded) | Self::LoadedInstead { loaded, .. } => {
                loaded.event().into_iter().collect()
            }
            Self::PartlyLoaded(loaded) => loaded.event().into_iter().collect(),
            Self::Unloaded(unloaded) => vec![unloaded.event()],
            Self::Found(found) => found
                .loaded
                .iter()
                .filter_map(|load| load.event.clone())
                .collect(),
            Self::Call { .. } => Vec::new(),
        }
    }
}

impl MetaTools {
    /// `load_tool_group` and the other meta-tools `offered`.
    /// `find_tool_groups` is answered once a taxonomy is set
    /// ([`Self::with_taxonomy`]).
    pub fn new(offered: impl IntoIterator<Item = MetaTool>) -> Self {
        let mut tools = vec![MetaTool::LoadToolGroup];
        for tool in offered {
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        Self {
            offered: tools,
            taxonomy: None,
            embeddings: None,
            found_tools: FoundTools::default(),
            router: Arc::default(),
        }
    }

    /// What `find_tool_groups` does with the tools it lists: names them
    /// (the default) or loads them as well.
    pub fn with_found_tools(mut self, found_tools: FoundTools) -> Self {
        self.found_tools = found_tools;
        self
    }

    /// Answers `find_tool_groups` with a router under `taxonomy`.
    pub fn with_taxonomy(mut self, taxonomy: Taxonomy) -> Self {
        self.taxonomy = Some(taxonomy);
        self
    }

    /// Scores `find_tool_groups` semantically too, with `embeddings`
    /// ([`Router::hybrid_search`]).
    pub fn with_embeddings(mut self, embeddings: Arc<dyn Embeddings>) -> Self {
        self.embeddings = Some(embeddings);
        self
    }

    /// The embedding model `find_tool_groups` scores with, when there is
    /// one ([`Self::with_embeddings`]).
    pub fn embeddings(&self) -> Option<&Arc<dyn Embeddings>> {
        self.embeddings.as_ref()
    }

    /// The definitions a host registers as core tools beside
    /// `load_tool_group`, which every [`Catalog`] holds already.
    pub fn extra_definitions(&self) -> Vec<ToolDefinition> {
        self.offered
            .iter()
            .filter(|tool| **tool != MetaTool::LoadToolGroup)
            .map(|tool| tool.definition())
            .collect()
    }

    /// The offered meta-tool called `name`; `None` for any other tool.
    pub fn recognize(&self, name: &str) -> Option<MetaTool> {
        let tool = MetaTool::from_name(name).filter(|tool| self.offered.contains(tool))?;
        match tool {
            MetaTool::FindToolGroups if self.taxonomy.is_none() => None,
            MetaTool::LoadToolGroup
            | MetaTool::UnloadToolGroup
            | MetaTool::CallTool
            | MetaTool::FindToolGroups => Some(tool),
        }
    }

    /// Reads a call of `name` if it is an offered meta-tool: `None` for any
    /// other tool, else the call or the error the model reads.
    pub fn parse(&self, name: &str, arguments: &Value) -> Option<Result<MetaCall, MetaError>> {
        self.recognize(name)
            .map(|tool| MetaCall::parse(tool, arguments))
    }

    /// Answers `call` for a conversation's active set; `None` for a caller
    /// without a conversation (a stateless MCP request), whose loads change
    /// nothing that lasts and who can unload nothing. A load's group must
    /// have been prepared (its tools listed) first.
    pub fn answer<'c>(
        &self,
        call: &MetaCall,
        active: Option<&mut ActiveToolSet>,
        catalog: &'c Catalog,
    ) -> Result<MetaAnswer<'c>, MetaError> {
        match call {
            MetaCall::Load { group, tools } => {
                let mut alone = ActiveToolSet::new();
                let active = active.unwrap_or(&mut alone);
                match tools {
                    None => Ok(MetaAnswer::Loaded(active.load(catalog, group)?)),
                    Some(tools) => load_named(active, catalog, group, tools),
                }
            }
            MetaCall::Unload { group } => match active {
                Some(active) => Ok(MetaAnswer::Unloaded(active.unload(catalog, group)?)),
                None => Err(UnloadGroupError::NoSession {
                    requested: group.clone(),
                }
                .into()),
            },
            MetaCall::CallTool { tool, arguments } => Ok(MetaAnswer::Call {
                tool: tool.clone(),
                arguments: arguments.clone(),
            }),
            MetaCall::FindGroups { query } => {
                let mut found = self.find(query, catalog, active.as_deref());
                match (self.found_tools, active) {
                    (FoundTools::Loaded, Some(active)) => {
                        found.loaded = load_found(&found.groups, active, catalog);
                    }
                    // Nothing it lists is loaded, so asked again it would
                    // list the same tools.
                    _ => found.more = false,
                }
                Ok(MetaAnswer::Found(found))
            }
        }
    }

    /// The router over `catalog`, built once per catalog revision; built
    /// again on a later call while an embedding model has not given the
    /// tools' vectors yet (one that embeds them in the background answers
    /// lexically until it has them).
    fn router(&self, catalog: &Catalog) -> Arc<Router> {
        let key = (catalog.revision(), catalog.scope());
        let mut cached = self.router.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(position) = cached.iter().position(|(indexed, _)| *indexed == key) {
            let (_, router) = &cached[position];
            if self.embeddings.is_none() || router.is_semantic() {
                return Arc::clone(router);
            }
            cached.remove(position);
        }
        let taxonomy = self.taxonomy.clone().unwrap_or_default();
        let router = Arc::new(Router::hybrid_search(
            catalog,
            taxonomy,
            self.embeddings.clone(),
        ));
        // Routers of an older revision are of no more use.
        cached.retain(|((revision, _), _)| *revision == key.0);
        if cached.len() >= ROUTERS_KEPT {
            cached.remove(0);
        }
        cached.push((key, Arc::clone(&router)));
        router
    }

    /// What `find_tool_groups` answers `query` for a conversation whose
    /// active set is `active` (`None`: a caller without one).
    fn find<'c>(
        &self,
        query: &str,
        catalog: &'c Catalog,
        active: Option<&ActiveToolSet>,
    ) -> GroupsFound<'c> {
        let router = self.router(catalog);
        match router.taxonomy().search {
            SearchRanks::Tools => find_tools(&router, query, catalog, active),
            SearchRanks::Groups => find_groups(&router, query, catalog),
        }
    }
}

/// The search ranking groups: the routed groups, each with its best tools.
fn find_groups<'c>(router: &Router, query: &str, catalog: &'c Catalog) -> GroupsFound<'c> {
    let taxonomy = router.taxonomy();
    let (shown_groups, shown_tools) = (taxonomy.search_groups, taxonomy.search_tools);
    let (decision, evidence) = router.route_explained(query, &[]);
    let tool_scores = evidence.tools;
    // The groups the router routes (those scoring `route_above` of
    // the best, say), most likely first: the same rule for what is
    // worth showing a turn and a search.
    let groups: Vec<FoundGroup<'c>> = decision
        .ranked
        .iter()
        .filter(|(id, _)| decision.routed.contains(id))
        .take(shown_groups)
        .filter_map(|(id, probability)| {
            let group = catalog.group(id.as_str())?;
            let tools = tool_scores
                .iter()
                .filter(|scored| scored.group == *id)
                .filter_map(|scored| catalog.tool(scored.tool.as_str()))
                .map(|tool| tool.definition)
                .take(shown_tools)
                .collect();
            Some(FoundGroup {
                group,
                probability: *probability,
                tools,
                tool_count: catalog.group_tools(id.as_str()).count(),
                finders: Vec::new(),
            })
        })
        .collect();
    answer_of(router, decision, groups, SearchRanks::Groups, catalog)
}

/// The answer of a search that ranked `ranks` and lists `groups` for
/// `decision`, with the id finders their tools need.
fn answer_of<'c>(
    router: &Router,
    decision: Decision,
    mut groups: Vec<FoundGroup<'c>>,
    ranks: SearchRanks,
    catalog: &'c Catalog,
) -> GroupsFound<'c> {
    if let Some(id_finders) = router.id_finders() {
        with_finders(&mut groups, id_finders, &decision.ranked, catalog);
    }
    GroupsFound {
        intent: decision.intent,
        confidence: decision.confidence,
        tier: decision.tier,
        routed: decision.routed,
        ranks,
        groups,
        already_loaded: Vec::new(),
        more: false,
        loaded: Vec::new(),
    }
}

/// The search ranking tools across groups, with no cap per group: the best
/// `[routing] search_results` tools that `active` does not hold yet, under
/// their groups (in the order of each group's best), then the id finders
/// they need. Those it passes over as loaded are named apart; asked again
/// once it loaded what it listed, it lists the next.
fn find_tools<'c>(
    router: &Router,
    query: &str,
    catalog: &'c Catalog,
    active: Option<&ActiveToolSet>,
) -> GroupsFound<'c> {
    let wanted = router.taxonomy().search_results;
    let (decision, evidence) = router.route_every_tool(query, &[]);
    let mut groups: Vec<FoundGroup<'c>> = Vec::new();
    let mut already_loaded = Vec::new();
    let mut listed = 0;
    let mut ranked = evidence.tools.iter();
    for scored in ranked.by_ref() {
        let Some(tool) = catalog.tool(scored.tool.as_str()).map(|t| t.definition) else {
            continue;
        };
        if active.is_some_and(|active| active.holds(&scored.group, &tool.name)) {
            already_loaded.push(&tool.name);
            continue;
        }
        match groups
            .iter_mut()
            .find(|found| found.group.id == scored.group)
        {
            Some(found) => found.tools.push(tool),
            None => {
                let Some(group) = catalog.group(scored.group.as_str()) else {
                    continue;
                };
                groups.push(FoundGroup {
                    group,
                    probability: probability_of(&decision.ranked, &group.id),
                    tools: vec![tool],
                    tool_count: catalog.group_tools(group.id.as_str()).count(),
                    finders: Vec::new(),
                });
            }
        }
        listed += 1;
        if listed == wanted {
            break;
        }
    }
    let more = ranked.next().is_some();
    GroupsFound {
        already_loaded,
        more,
        ..answer_of(router, decision, groups, SearchRanks::Tools, catalog)
    }
}

/// `group`'s probability among `ranked` (0 when it is not ranked).
fn probability_of(ranked: &[(GroupId, f64)], group: &GroupId) -> f64 {
    ranked
        .iter()
        .find(|(id, _)| id == group)
        .map_or(0.0, |(_, p)| *p)
}

/// The names of `tools` that are not tools of `group` in `catalog` (by
/// their names or aliases), as given: a load naming any of them loads the
/// whole group instead ([`MetaAnswer::LoadedInstead`]). A model that guesses
/// a group's tool names does not know them; loading nothing left a small
/// model answering the user with the error.
pub fn not_in_group(catalog: &Catalog, group: &str, tools: &[String]) -> Vec<String> {
    let members: Vec<&ToolName> = catalog.group_tools(group).map(|tool| &tool.name).collect();
    tools
        .iter()
        .filter(|tool| {
            catalog
                .resolve(tool)
                .is_none_or(|found| !members.contains(&&found.definition.name))
        })
        .cloned()
        .collect()
}

/// A load of the `tools` named of `group` (each by its name or an alias of
/// it): the group's usual errors; the whole group when they are all of its
/// tools, or when one is not ([`not_in_group`]).
fn load_named<'c>(
    active: &mut ActiveToolSet,
    catalog: &'c Catalog,
    group: &str,
    tools: &[String],
) -> Result<MetaAnswer<'c>, MetaError> {
    let unknown = not_in_group(catalog, group, tools);
    if !unknown.is_empty() {
        let loaded = active.load(catalog, group)?;
        return Ok(MetaAnswer::LoadedInstead { loaded, unknown });
    }
    let named: Vec<&str> = tools
        .iter()
        .filter_map(|tool| catalog.resolve(tool))
        .map(|found| found.definition.name.as_str())
        .collect();
    Ok(match active.load_tools(catalog, group, &named)? {
        ToolsLoaded::Whole(loaded) => MetaAnswer::Loaded(loaded),
        ToolsLoaded::Partial(loaded) => MetaAnswer::PartlyLoaded(loaded),
    })
}

/// Loads the tools `groups` list into `active`, each group's as one partial
/// load.
fn load_found<'c>(
    groups: &[FoundGroup<'c>],
    active: &mut ActiveToolSet,
    catalog: &'c Catalog,
) -> Vec<FoundLoad<'c>> {
    groups
        .iter()
        .filter_map(|found| {
            let tools: Vec<&'c ToolDefinition> = found.listed_tools().collect();
            let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
            if names.is_empty() {
                return None;
            }
            // A group the search lists is loadable; one that is not stays
            // listed, by name only.
            let loaded = active
                .load_tools(catalog, found.group.id.as_str(), &names)
                .ok()?;
            let newly_loaded = match &loaded {
                ToolsLoaded::Whole(loaded) => loaded.newly_loaded,
                ToolsLoaded::Partial(loaded) => loaded.newly_loaded,
            };
            Some(FoundLoad {
                group: found.group,
                tools,
                newly_loaded,
                event: loaded.event(),
            })
        })
        .collect()
}

/// `groups` with the finder of each listed tool's required id
/// ([`IdFinders`]) that is not listed: beside its group's tools when the
/// group is listed, else in a group listed for it, after the others.
fn with_finders<'c>(
    groups: &mut Vec<FoundGroup<'c>>,
    id_finders: &IdFinders,
    ranked: &[(GroupId, f64)],
    catalog: &'c Catalog,
) {
    let mut needed = Vec::new();
    for found in groups.iter() {
        let listed: Vec<ToolName> = found.tools.iter().map(|t| t.name.clone()).collect();
        needed.extend(
            id_finders
                .needed_by(&found.group.id, Some(&listed))
                .cloned(),
        );
    }
    for finder in needed {
        let listed = groups.iter().any(|found| {
            found.tools.iter().any(|t| t.name == finder.tool)
                || found.finders.iter().any(|f| f.tool.name == finder.tool)
        });
        let (Some(tool), Some(needed_by)) = (
            catalog.tool(finder.tool.as_str()).map(|t| t.definition),
            catalog
                .tool(finder.needed_by.as_str())
                .map(|t| &t.definition.name),
        ) else {
            continue;
        };
        if listed {
            continue;
        }
        let found = FoundFinder { tool, needed_by };
        match groups.iter_mut().find(|g| g.group.id == finder.group) {
            Some(group) => group.finders.push(found),
            None => {
                let Some(group) = catalog.group(finder.group.as_str()) else {
                    continue;
                };
                groups.push(FoundGroup {
                    group,
                    probability: probability_of(ranked, &finder.group),
                    tools: Vec::new(),
                    tool_count: catalog.group_tools(finder.group.as_str()).count(),
                    finders: vec![found],
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "meta_tools_tests.rs"]
mod tests;
