//! Groups a turn needs without naming them, read from the catalog alone.
//!
//! "Movies directed by Sofia Coppola" names the person group's credits,
//! whose tool requires a `person_id`; nothing in the turn names the search
//! group whose `search_person` finds that id. A tool that requires an
//! `X_id` needs, first, a tool of another group that finds X: one whose
//! name says it searches, lists, finds or looks up X (or Xs), the most
//! specific such name when several do. A routed turn that shows the first
//! shows the second beside it ([`Decision::finders`]).
//!
//! [`Decision::finders`]: crate::routing::Decision::finders

use std::collections::HashMap;

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::text::words;

/// Words in a finder's name.
const FINDER_WORDS: [&str; 4] = ["search", "list", "find", "lookup"];

/// A tool shown because a shown tool requires an id it finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdFinder {
    /// The finder's group.
    pub group: GroupId,
    /// The finder.
    pub tool: ToolName,
    /// The shown tool whose required id it finds.
    pub needed_by: ToolName,
}

/// For each tool of a catalog that requires an id, the tool of another group
/// that finds what the id names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdFinders {
    /// Per group, the finders its tools need, in the group's tool order.
    by_group: HashMap<GroupId, Vec<IdFinder>>,
}

impl IdFinders {
    /// Reads `catalog`'s names and required parameters: one pass over its
    /// tools to index the finders by the words of their names, one to look
    /// each required id up, so a catalog of many tools and many parameters
    /// costs no more than their number.
    pub fn new(catalog: &Catalog) -> Self {
        // Every finder, with the length of its name in words, in catalog
        // order; and the finders (their places) each word names.
        let mut finders: Vec<(&GroupId, &ToolName, usize)> = Vec::new();
        let mut by_word: HashMap<String, Vec<usize>> = HashMap::new();
        for group in catalog.groups() {
            for tool in catalog.group_tools(group.id.as_str()) {
                let name: Vec<String> = words(tool.name.as_str()).collect();
                if name.iter().any(|w| FINDER_WORDS.contains(&w.as_str())) {
                    for word in &name {
                        let places = by_word.entry(word.clone()).or_default();
                        if places.last() != Some(&finders.len()) {
                            places.push(finders.len());
                        }
                    }
                    finders.push((&group.id, &tool.name, name.len()));
                }
            }
        }
        // The most specific finder of another group naming `entity` (or
        // its plural); the first in catalog order among equals.
        let finder_of = |entity: &str, group: &GroupId| {
            let mut places: Vec<usize> = [entity.to_owned(), format!("{entity}s")]
                .iter()
                .filter_map(|word| by_word.get(word))
                .flatten()
                .copied()
                .collect();
            places.sort_unstable();
            places.dedup();
            places
                .into_iter()
                .map(|place| finders[place])
                .filter(|(g, _, _)| *g != group)
                .min_by_key(|(_, _, length)| *length)
        };
        let mut by_group: HashMap<GroupId, Vec<IdFinder>> = HashMap::new();
        for group in catalog.groups() {
            for tool in catalog.group_tools(group.id.as_str()) {
                let finder = required(&tool.input_schema)
                    .filter_map(named_entity)
                    .find_map(|entity| finder_of(&entity, &group.id));
                if let Some((finder_group, finder, _)) = finder {
                    by_group
                        .entry(group.id.clone())
                        .or_default()
                        .push(IdFinder {
                            group: finder_group.clone(),
                            tool: finder.clone(),
                            needed_by: tool.name.clone(),
                        });
                }
            }
        }
        Self { by_group }
    }

    /// Whether no tool of the catalog needs a finder.
    pub fn is_empty(&self) -> bool {
        self.by_group.is_empty()
    }

    /// How many tools need a finder.
    pub fn len(&self) -> usize {
        self.by_group.values().map(Vec::len).sum()
    }

    /// The finders `group`'s `shown` tools need (every tool's when `None`:
    /// the group is shown whole), in the group's tool order.
    pub fn needed_by<'a>(
        &'a self,
        group: &GroupId,
        shown: Option<&'a [ToolName]>,
    ) -> impl Iterator<Item = &'a IdFinder> + 'a {
        self.by_group
            .get(group)
            .into_iter()
            .flatten()
            .filter(move |finder| shown.is_none_or(|tools| tools.contains(&finder.needed_by)))
    }
}

/// The names of a schema's required parameters.
fn required(schema: &serde_json::Map<String, serde_json::Value>) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str())
}

/// What an id parameter names, its words run together: `person_id` and
/// `personId` give `person`, `tv_show_id` gives `tvshow`; a bare `id`, or a
/// parameter not ending in one, names nothing.
fn named_entity(parameter: &str) -> Option<String> {
    let parts: Vec<String> = words(parameter).collect();
    match parts.split_last() {
        Some((last, entity)) if last == "id" && !entity.is_empty() => Some(entity.concat()),
        _ => None,
    }
}

#[cfg(test)]
#[path = "id_finders_tests.rs"]
mod tests;
