//! The agents an [`Episode`] is played by, and where each policy starts
//! a task.
//!
//! A task needs its gold tools (those of the catalog). On each call the
//! model either has every one of them visible, and uses them, or makes one
//! extra round trip to get more:
//!
//! - the **oracle** agent knows what it needs: it loads exactly the groups
//!   holding the missing tools, all in one round trip (parallel calls), or
//!   asks a tool search for them by name;
//! - the **listing** agent chooses as a model reading the prompt would: it
//!   ranks the groups not yet whole by BM25 of the request against what it
//!   has read of each (its listing line, and the lines of its tools already
//!   shown or named by a search), and loads the best [`LISTING_DEPTH`] per
//!   round trip, giving up after [`MAX_ROUNDS`]; on a tool search it reads
//!   the next page of results. So a weak listing line costs what it would
//!   cost a model.
//!
//! How a policy starts is a [`Start`]: what the first call shows, and the
//! round trips it makes before the agent chooses (a `find_tool_groups`
//! call, a tool search).

use std::collections::{HashMap, HashSet};

use serde_json::json;
use toolgate_core::routing::{Bm25, ToolCosts, terms};
use toolgate_core::{
    Catalog, GroupId, GroupLoaded, ListingForm, MetaTool, TokenCounter, ToolDefinition, ToolName,
    largest_groups, listing_description, tool_groups_section_as,
};

use crate::episode::{Episode, Placement, Round};

/// Groups the listing agent loads per round trip.
pub(crate) const LISTING_DEPTH: usize = 2;

/// Round trips the listing agent makes before it gives up.
pub(crate) const MAX_ROUNDS: usize = 3;

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

    /// A task of a group-loading policy, from `start`, played by `agent`.
    pub(crate) fn load_groups(
        &self,
        request: &str,
        needed: &[String],
        start: Start,
        agent: Agent,
        placement: Placement,
    ) -> Episode {
        let mut visible = start.visible;
        let mut rounds = start.rounds;
        let mut loaded: HashSet<usize> = HashSet::new();
        let missing = |visible: &HashSet<String>| -> Vec<String> {
            needed
                .iter()
                .filter(|n| !visible.contains(*n))
                .cloned()
                .collect()
        };
        let mut own_rounds = 0;
        loop {
            let lacking = missing(&visible);
            if lacking.is_empty() {
                break;
            }
            let choice: Vec<usize> = match agent {
                Agent::Oracle => {
                    let mut groups: Vec<usize> = lacking
                        .iter()
                        .filter_map(|n| self.catalog.group_of(n))
                        .filter_map(|g| self.index.get(g).copied())
                        .collect();
                    groups.sort_unstable();
                    groups.dedup();
                    groups
                }
                Agent::Listing => {
                    if own_rounds == MAX_ROUNDS {
                        break;
                    }
                    self.listing_choice(request, &visible, &loaded, &start.named, &start.read)
                }
            };
            if choice.is_empty() {
                break;
            }
            own_rounds += 1;
            let mut round = Round::default();
            for group in choice {
                loaded.insert(group);
                round.messages += self.load_tokens[group];
                let members = &self.members[group];
                if placement.lists_loads() {
                    round.listed += self.tool_tokens(
                        members
                            .iter()
                            .filter(|t| !visible.contains(*t))
                            .map(String::as_str),
                    );
                } else {
                    round.messages += self.tool_tokens(members.iter().map(String::as_str));
                }
                visible.extend(members.iter().cloned());
            }
            rounds.push(round);
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
            done: missing(&visible).is_empty(),
            rounds,
            using_calls: needed.len() + 1,
            ..Episode::default()
        }
    }

    /// The groups the listing agent loads next: those a search named first,
    /// in its order, then by BM25 of `request` over what it has read of
    /// each group; never a group whole or loaded already.
    fn listing_choice(
        &self,
        request: &str,
        visible: &HashSet<String>,
        loaded: &HashSet<usize>,
        named: &[GroupId],
        read: &[String],
    ) -> Vec<usize> {
        let open =
            |g: usize| !loaded.contains(&g) && !self.members[g].iter().all(|t| visible.contains(t));
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
