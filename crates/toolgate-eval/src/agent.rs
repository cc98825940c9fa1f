//! The agents an [`Episode`] is played by, and where each policy starts
//! a task.
//!
//! A task needs its gold tools (those of the catalog). On each call the
//! model either has every one of them visible, and uses them, or makes one
//! extra round trip to get more. `load_tool_group` loads the tools it names
//! of a group, or the whole group; with [`Loads::Tools`] each agent takes
//! the cheapest step the policy offers (with [`Loads::Groups`] it loads
//! whole groups only, as before a load could name tools):
//!
//! - the **oracle** agent knows what it needs: it loads exactly the missing
//!   tools by name, each group's in one call, all in one round trip
//!   (parallel calls), without the search a policy begins with, or asks a
//!   tool search for them by name;
//! - the **listing** agent chooses as a model reading the prompt would. A
//!   round trip loads, in this order of preference: the tools it has read
//!   the names of (a search listed them) and cannot call yet, those of the
//!   best [`LISTING_DEPTH`] groups that have some; else the search's next
//!   page, where the search ranks tools across groups (asking it again in
//!   other words); else the best [`LISTING_DEPTH`] groups whole, ranked by
//!   BM25 of the request against what it has read of each (its listing
//!   line, and the lines of its tools already shown or named by a search),
//!   a search's groups first. It gives up after [`MAX_ROUNDS`] extra round
//!   trips in all, a search's included, as on a tool search, where it reads
//!   the next page. So a weak listing line costs what it would cost a model.
//!
//! How a policy starts is a [`Start`]: what the first call shows, and the
//! round trips it makes before the agent chooses (a `find_tool_groups`
//! call, a tool search).

use std::collections::{HashMap, HashSet};

use serde_json::json;
use toolgate_core::routing::{Bm25, ToolCosts, terms};
use toolgate_core::{
    Catalog, GROUP_NAME_PARAMETER, GroupId, GroupLoaded, GroupPartlyLoaded, ListingForm, MetaTool,
    TOOLS_PARAMETER, TokenCounter, ToolDefinition, ToolName, largest_groups, listing_description,
    tool_groups_section_as,
};

use crate::episode::{Episode, Placement, Round};

/// Groups the listing agent loads per round trip.
pub(crate) const LISTING_DEPTH: usize = 2;

/// Extra round trips the listing agent makes before it gives up, whatever
/// they were (a search, a load): the same bound for every policy, so a
/// policy that searches first is not granted one more than a tool search.
pub(crate) const MAX_ROUNDS: usize = 3;

/// How the agents load a group's tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loads {
    /// By name where the agent knows the names (`load_tool_group` with
    /// `tools`), the whole group where it does not.
    Tools,
    /// Whole groups only, as before a load could name tools: a comparison.
    Groups,
}

/// Who plays the episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agent {
    Oracle,
    Listing,
}

impl Agent {
    pub(crate) const ALL: [Self; 2] = [Self::Oracle, Self::Listing];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Oracle => "oracle",
            Self::Listing => "listing",
        }
    }
}

/// How a policy begins a task.
#[derive(Clone, Debug, Default)]
pub(crate) struct Start {
    /// Tools visible on the first call, beyond the meta-tools.
    pub(crate) visible: HashSet<String>,
    /// Their tokens (the task's own), in the tool list or, with
    /// [`Placement::ConversationRouted`], in a message after the request.
    pub(crate) tokens: usize,
    /// Groups a search named, best first: the listing agent loads them
    /// before any other.
    pub(crate) named: Vec<GroupId>,
    /// Tools a search named without making them callable: the listing agent
    /// has read their lines.
    pub(crate) read: Vec<String>,
    /// Round trips made before the agent chooses (a `find_tool_groups`
    /// call and its answer).
    pub(crate) rounds: Vec<Round>,
    /// The search's next pages, best first, where it ranks tools across
    /// groups: what asking it again in other words answers.
    pub(crate) pages: Vec<Page>,
}

/// One answer of a search that ranks tools across groups and loads those
/// it lists.
#[derive(Clone, Debug, Default)]
pub(crate) struct Page {
    /// The tools it lists, now callable, best first.
    pub(crate) tools: Vec<String>,
    /// Their groups, best first.
    pub(crate) groups: Vec<GroupId>,
    /// The call and its answer's text (the schemas counted apart).
    pub(crate) tokens: usize,
}

/// What an agent has of a task under way.
struct Progress {
    visible: HashSet<String>,
    /// Groups loaded whole.
    whole: HashSet<usize>,
    /// Groups a search named, best first.
    named: Vec<GroupId>,
    /// Tools whose lines it has read (a search named them).
    read: Vec<String>,
    pages: std::collections::VecDeque<Page>,
}

/// The catalog as the agents see it, its tokens counted once.
#[derive(Clone)]
pub(crate) struct Stage<'a> {
    catalog: &'a Catalog,
    counter: &'a TokenCounter,
    tools: &'a ToolCosts,
    /// Groups in catalog order.
    groups: Vec<GroupId>,
    /// Per group: its tools, in catalog order.
    members: Vec<Vec<String>>,
    /// Per group: the terms the listing shows of it (in the listing's
    /// form).
    listing_terms: Vec<Vec<(String, f64)>>,
    /// Per group: the load call and the answer's text.
    load_tokens: Vec<usize>,
    index: HashMap<GroupId, usize>,
    /// The form the groups are listed in.
    pub(crate) form: ListingForm,
    /// The "Available Tool Groups" section (the meta-tools, core tools
    /// among them, are counted apart: which a policy offers varies).
    pub(crate) listing: usize,
    load_tool: usize,
    call_tool: usize,
    find_tool: usize,
    search_tool: usize,
}

impl<'a> Stage<'a> {
    /// The stage of `catalog` with its groups listed in `form`.
    pub(crate) fn new(
        catalog: &'a Catalog,
        counter: &'a TokenCounter,
        tools: &'a ToolCosts,
        form: ListingForm,
    ) -> Self {
        let groups: Vec<GroupId> = catalog.groups().map(|g| g.id.clone()).collect();
        let members: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                catalog
                    .group_tools(g.as_str())
                    .map(|t| t.name.to_string())
                    .collect()
            })
            .collect();
        let load_tokens = catalog
            .groups()
            .map(|group| {
                let call = json!({ "group_name": group.id.as_str() }).to_string();
                let answer = GroupLoaded {
                    group,
                    tools: catalog.group_tools(group.id.as_str()).collect(),
                    newly_loaded: true,
                };
                counter.count(MetaTool::LoadToolGroup.name())
                    + counter.count(&call)
                    + counter.count(&answer.to_string())
            })
            .collect();
        let index = groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.clone(), i))
            .collect();
        Self {
            catalog,
            counter,
            tools,
            groups,
            members,
            listing_terms: Vec::new(),
            load_tokens,
            index,
            form,
            listing: 0,
            load_tool: counter.tool(&MetaTool::LoadToolGroup.definition()),
            call_tool: counter.tool(&MetaTool::CallTool.definition()),
            find_tool: counter.tool(&MetaTool::FindToolGroups.definition()),
            search_tool: search_tool_definition().map_or(0, |d| counter.tool(&d)),
        }
        .in_form(form)
    }

    /// The same stage with the groups listed in `form`: the section's
    /// tokens, and what the listing agent reads of each group (its name
    /// and description; its name alone; or, in the search form, the names
    /// of the largest groups and nothing of the others).
    pub(crate) fn in_form(mut self, form: ListingForm) -> Self {
        self.listing =
            tool_groups_section_as(self.catalog, form).map_or(0, |s| self.counter.count(&s));
        let largest: HashSet<&GroupId> = largest_groups(self.catalog)
            .into_iter()
            .map(|(group, _)| &group.id)
            .collect();
        self.listing_terms = self
            .catalog
            .groups()
            .map(|g| {
                let named = match form {
                    ListingForm::Lines | ListingForm::Names => true,
                    ListingForm::Search => largest.contains(&g.id),
                };
                let mut out: Vec<(String, f64)> = if named {
                    terms(g.id.as_str()).into_iter().map(|t| (t, 2.0)).collect()
                } else {
                    Vec::new()
                };
                if form == ListingForm::Lines {
                    out.extend(
                        terms(&listing_description(&g.description))
                            .into_iter()
                            .map(|t| (t, 1.0)),
                    );
                }
                out
            })
            .collect();
        self.form = form;
        self
    }

    /// The gold tools of `gold` the catalog has.
    pub(crate) fn needed(&self, gold: &[String]) -> Vec<String> {
        let mut needed: Vec<String> = gold
            .iter()
            .filter(|name| self.catalog.group_of(name).is_some())
            .cloned()
            .collect();
        needed.sort();
        needed.dedup();
        needed
    }

    /// Tokens of the tools `names`.
    pub(crate) fn tool_tokens<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> usize {
        names.into_iter().map(|n| self.tools.tool(n)).sum()
    }

    /// Tokens of a call that names `argument` (a request, a search).
    pub(crate) fn call_tokens(&self, tool: &str, argument: &str) -> usize {
        self.counter.count(tool)
            + self
                .counter
                .count(&json!({ "query": argument }).to_string())
    }

    /// The meta-tools a group-loading policy sends: `load_tool_group`, with
    /// `call_tool` when loads answer in the conversation, and
    /// `find_tool_groups` when `find`.
    pub(crate) fn meta_tools(&self, placement: Placement, find: bool) -> usize {
        let call = if placement.lists_loads() {
            0
        } else {
            self.call_tool
        };
        self.load_tool + call + if find { self.find_tool } else { 0 }
    }

    /// A task of a group-loading policy, from `start`, played by `agent`,
    /// loading as `loads` says.
    pub(crate) fn load_groups(
        &self,
        request: &str,
        needed: &[String],
        start: Start,
        agent: Agent,
        placement: Placement,
        loads: Loads,
    ) -> Episode {
        // A search the policy begins with is a step the oracle need not
        // take: it knows the names, and loads them at once.
        let start = match (agent, loads) {
            (Agent::Oracle, Loads::Tools) if !start.rounds.is_empty() => Start::default(),
            _ => start,
        };
        let mut rounds = start.rounds;
        let mut progress = Progress {
            visible: start.visible,
            whole: HashSet::new(),
            named: start.named,
            read: start.read,
            pages: start.pages.into(),
        };
        let missing = |visible: &HashSet<String>| -> Vec<String> {
            needed
                .iter()
                .filter(|n| !visible.contains(*n))
                .cloned()
                .collect()
        };
        loop {
            let lacking = missing(&progress.visible);
            if lacking.is_empty() {
                break;
            }
            let round = match agent {
                Agent::Oracle => self.oracle_round(&lacking, &mut progress, placement, loads),
                Agent::Listing if rounds.len() >= MAX_ROUNDS => None,
                Agent::Listing => self.listing_round(request, &mut progress, placement, loads),
            };
            match round {
                Some(round) => rounds.push(round),
                None => break,
            }
        }
        let (task_tools, routed_message) = match placement {
            Placement::ConversationRouted => (0, start.tokens),
            Placement::ToolList | Placement::Conversation => (start.tokens, 0),
        };
        Episode {
            task_tools,
            routed_message,
            system: self.listing,
            request: self.counter.count(request),
            done: missing(&progress.visible).is_empty(),
            rounds,
            using_calls: needed.len() + 1,
            ..Episode::default()
        }
    }

    /// The oracle's one round trip: each group's missing tools by name, or
    /// with [`Loads::Groups`] each such group whole.
    fn oracle_round(
        &self,
        lacking: &[String],
        progress: &mut Progress,
        placement: Placement,
        loads: Loads,
    ) -> Option<Round> {
        let mut groups: Vec<usize> = lacking
            .iter()
            .filter_map(|n| self.catalog.group_of(n))
            .filter_map(|g| self.index.get(g).copied())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        if groups.is_empty() {
            return None;
        }
        let mut round = Round::default();
        for group in groups {
            match loads {
                Loads::Tools => {
                    let tools: Vec<String> = self.members[group]
                        .iter()
                        .filter(|t| lacking.contains(*t))
                        .cloned()
                        .collect();
                    round = round + self.named_load(group, &tools, progress, placement);
                }
                Loads::Groups => round = round + self.whole_load(group, progress, placement),
            }
        }
        Some(round)
    }

    /// The listing agent's next round trip, by its preference (the
    /// module's doc): `None` when it has nothing left to try.
    fn listing_round(
        &self,
        request: &str,
        progress: &mut Progress,
        placement: Placement,
        loads: Loads,
    ) -> Option<Round> {
        if loads == Loads::Tools {
            let named = self.named_choice(progress);
            if !named.is_empty() {
                let mut round = Round::default();
                for (group, tools) in named {
                    round = round + self.named_load(group, &tools, progress, placement);
                }
                return Some(round);
            }
            if let Some(page) = progress.pages.pop_front() {
                return Some(self.page_round(&page, progress, placement));
            }
        }
        let choice = self.listing_choice(request, progress);
        if choice.is_empty() {
            return None;
        }
        let mut round = Round::default();
        for group in choice {
            round = round + self.whole_load(group, progress, placement);
        }
        Some(round)
    }

    /// The groups (at most [`LISTING_DEPTH`]) with tools the listing agent
    /// has read and cannot call, a search's groups in its order first, each
    /// with those tools.
    fn named_choice(&self, progress: &Progress) -> Vec<(usize, Vec<String>)> {
        let unseen: Vec<&String> = progress
            .read
            .iter()
            .filter(|t| !progress.visible.contains(*t))
            .collect();
        let mut groups: Vec<usize> = progress
            .named
            .iter()
            .filter_map(|g| self.index.get(g).copied())
            .collect();
        groups.extend(
            unseen
                .iter()
                .filter_map(|t| self.catalog.group_of(t))
                .filter_map(|g| self.index.get(g).copied()),
        );
        let mut out: Vec<(usize, Vec<String>)> = Vec::new();
        for group in groups {
            if out.len() == LISTING_DEPTH {
                break;
            }
            if out.iter().any(|(g, _)| *g == group) {
                continue;
            }
            let mut tools: Vec<String> = Vec::new();
            for tool in &unseen {
                let in_group = self.catalog.group_of(tool).and_then(|g| self.index.get(g));
                if in_group == Some(&group) && !tools.contains(*tool) {
                    tools.push((*tool).clone());
                }
            }
            if !tools.is_empty() {
                out.push((group, tools));
            }
        }
        out
    }

    /// One `load_tool_group` call naming `tools` of `group`: the call, its
    /// answer (a partial load's, or the whole group's once the names cover
    /// it) and the schemas it adds; they become visible.
    fn named_load(
        &self,
        group: usize,
        tools: &[String],
        progress: &mut Progress,
        placement: Placement,
    ) -> Round {
        let members = &self.members[group];
        // The group's tools loaded once this load is done, in catalog order.
        let loaded: Vec<&String> = members
            .iter()
            .filter(|t| progress.visible.contains(*t) || tools.contains(t))
            .collect();
        let Some(found) = self.catalog.group(self.groups[group].as_str()) else {
            return Round::default();
        };
        if loaded.len() == members.len() {
            return self.whole_load(group, progress, placement);
        }
        let definitions: Vec<&ToolDefinition> = loaded
            .iter()
            .filter_map(|t| self.catalog.tool(t))
            .map(|t| t.definition)
            .collect();
        let answer = GroupPartlyLoaded {
            group: found,
            tools: definitions,
            group_tools: members.len(),
            newly_loaded: true,
            added: Vec::new(),
        };
        let call =
            json!({ GROUP_NAME_PARAMETER: found.id.as_str(), TOOLS_PARAMETER: tools }).to_string();
        let mut round = Round {
            listed: 0,
            messages: self.counter.count(MetaTool::LoadToolGroup.name())
                + self.counter.count(&call)
                + self.counter.count(&answer.to_string()),
        };
        if placement.lists_loads() {
            round.listed = self.tool_tokens(
                tools
                    .iter()
                    .filter(|t| !progress.visible.contains(*t))
                    .map(String::as_str),
            );
        } else {
            // The answer carries the schemas of every tool of the group
            // loaded so far.
            round.messages += self.tool_tokens(loaded.iter().map(|t| t.as_str()));
        }
        progress.visible.extend(tools.iter().cloned());
        round
    }

    /// One `load_tool_group` call loading `group` whole; its tools become
    /// visible.
    fn whole_load(&self, group: usize, progress: &mut Progress, placement: Placement) -> Round {
        let members = &self.members[group];
        let mut round = Round {
            listed: 0,
            messages: self.load_tokens[group],
        };
        if placement.lists_loads() {
            round.listed = self.tool_tokens(
                members
                    .iter()
                    .filter(|t| !progress.visible.contains(*t))
                    .map(String::as_str),
            );
        } else {
            round.messages += self.tool_tokens(members.iter().map(String::as_str));
        }
        progress.whole.insert(group);
        progress.visible.extend(members.iter().cloned());
        round
    }

    /// The search asked again: `page`'s tools become callable and read, its
    /// groups named after those named before.
    fn page_round(&self, page: &Page, progress: &mut Progress, placement: Placement) -> Round {
        let round = if placement.lists_loads() {
            Round {
                listed: self.tool_tokens(
                    page.tools
                        .iter()
                        .filter(|t| !progress.visible.contains(*t))
                        .map(String::as_str),
                ),
                messages: page.tokens,
            }
        } else {
            Round {
                listed: 0,
                messages: page.tokens + self.tool_tokens(page.tools.iter().map(String::as_str)),
            }
        };
        progress.visible.extend(page.tools.iter().cloned());
        progress.read.extend(page.tools.iter().cloned());
        for group in &page.groups {
            if !progress.named.contains(group) {
                progress.named.push(group.clone());
            }
        }
        round
    }

    /// The groups the listing agent loads whole next: those a search named
    /// first, in its order, then by BM25 of `request` over what it has read
    /// of each group; never a group whole or loaded already.
    fn listing_choice(&self, request: &str, progress: &Progress) -> Vec<usize> {
        let Progress {
            visible,
            whole,
            named,
            read,
            ..
        } = progress;
        let open =
            |g: usize| !whole.contains(&g) && !self.members[g].iter().all(|t| visible.contains(t));
        let mut choice: Vec<usize> = named
            .iter()
            .filter_map(|g| self.index.get(g).copied())
            .filter(|g| open(*g))
            .take(LISTING_DEPTH)
            .collect();
        if choice.len() == LISTING_DEPTH {
            return choice;
        }
        let seen: HashSet<&str> = visible
            .iter()
            .map(String::as_str)
            .chain(read.iter().map(String::as_str))
            .collect();
        let documents = self.listing_terms.iter().enumerate().map(|(g, line)| {
            let mut document = line.clone();
            for tool in self.members[g].iter().filter(|t| seen.contains(t.as_str())) {
                if let Some(found) = self.catalog.tool(tool) {
                    document.extend(tool_line_terms(found.definition));
                }
            }
            document
        });
        let index = Bm25::new(documents);
        let query: Vec<(String, f64)> = terms(request).into_iter().map(|t| (t, 1.0)).collect();
        let scores = index.scores(&query);
        let mut order: Vec<usize> = (0..self.groups.len()).filter(|g| open(*g)).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        for g in order {
            if choice.len() == LISTING_DEPTH {
                break;
            }
            if !choice.contains(&g) {
                choice.push(g);
            }
        }
        choice
    }

    /// A task of a tool search that returns `k` tools per call (found tools
    /// placed as `placement` says), from the ranking `ranked`, played by
    /// `agent`: the oracle asks by name for what the first page missed; the
    /// listing agent reads the next page.
    pub(crate) fn search_tools(
        &self,
        request: &str,
        needed: &[String],
        ranked: &[&str],
        k: usize,
        agent: Agent,
        placement: Placement,
    ) -> Episode {
        let mut visible: HashSet<String> = HashSet::new();
        let mut rounds = Vec::new();
        let call = self.call_tokens(SEARCH_TOOL_NAME, request);
        let mut page = 0;
        loop {
            let lacking: Vec<&String> = needed.iter().filter(|n| !visible.contains(*n)).collect();
            if lacking.is_empty() {
                break;
            }
            let found: Vec<&str> = match agent {
                Agent::Oracle if page > 0 => lacking.iter().map(|n| n.as_str()).collect(),
                _ if page == MAX_ROUNDS => break,
                _ => ranked.iter().skip(page * k).take(k).copied().collect(),
            };
            if found.is_empty() {
                break;
            }
            page += 1;
            let schemas = self.tool_tokens(found.iter().copied());
            let references: usize = found.iter().map(|n| self.counter.count(n)).sum();
            rounds.push(if placement.lists_loads() {
                Round {
                    listed: schemas,
                    messages: call + references,
                }
            } else {
                Round {
                    listed: 0,
                    messages: call + schemas,
                }
            });
            visible.extend(found.iter().map(|n| (*n).to_owned()));
        }
        Episode {
            shared_tools: self.search_tool,
            request: self.counter.count(request),
            done: needed.iter().all(|n| visible.contains(n)),
            rounds,
            using_calls: needed.len() + 1,
            ..Episode::default()
        }
    }
}

/// The terms of a tool's line as a listing or search shows it: its name and
/// its description.
fn tool_line_terms(tool: &ToolDefinition) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = terms(tool.name.as_str())
        .into_iter()
        .map(|t| (t, 1.0))
        .collect();
    out.extend(
        terms(&tool.one_line_description())
            .into_iter()
            .map(|t| (t, 1.0)),
    );
    out
}

/// The name of the tool-search baseline's one tool.
const SEARCH_TOOL_NAME: &str = "search_tools";

/// The tool-search baseline's one tool, as hosted tool search offers it (a
/// query in, tool references out).
fn search_tool_definition() -> Option<ToolDefinition> {
    let mut schema = serde_json::Map::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert(
        "properties".to_owned(),
        json!({"query": {"type": "string", "description": "What you want to do, in a few words"}}),
    );
    schema.insert("required".to_owned(), json!(["query"]));
    Some(ToolDefinition {
        name: ToolName::new(SEARCH_TOOL_NAME).ok()?,
        description: "Search the tool catalog for tools that can do a task. The tools found can \
be called right away."
            .to_owned(),
        input_schema: schema,
        annotations: None,
        timeout: None,
    })
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
