//! Groups a turn needs without naming them, read from the catalog alone.
//!
//! "Movies directed by Sofia Coppola" names the person group's credits,
//! whose tool requires a `person_id`; nothing in the turn names the search
//! group whose `search_person` finds that id. A tool that requires an
//! `X_id` (or `X_ids`, or a bare `id` titled "X ID") needs, first, a tool of
//! another group that finds X: one whose name says it searches, lists, finds
//! or looks up X (or Xs), the most specific such name when several do; when
//! no finder's name names X, a finder whose name names nothing else and
//! whose description's first sentence names X (Spotify's `search`: "albums,
//! artists, playlists or tracks that match a keyword"). A routed turn that
//! shows the first shows the second beside it ([`Decision::finders`]).
//!
//! [`Decision::finders`]: crate::routing::Decision::finders

use std::collections::HashMap;

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::text::{is_stop_word, words};

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
    /// Reads `catalog`'s names, finders' descriptions and required
    /// parameters: one pass over its tools to index the finders by the words
    /// of their names (and a generic finder's first sentence), one to look
    /// each required id up, so a catalog of many tools and many parameters
    /// costs no more than their number.
    pub fn new(catalog: &Catalog) -> Self {
        // Every finder, with the length of its name in words, in catalog
        // order; and the finders (their places) each word names.
        let mut finders: Vec<(&GroupId, &ToolName, usize)> = Vec::new();
        let mut by_name_word = WordIndex::default();
        let mut by_description_word = WordIndex::default();
        for group in catalog.groups() {
            for tool in catalog.group_tools(group.id.as_str()) {
                let name: Vec<String> = words(tool.name.as_str()).collect();
                if name.iter().any(|w| FINDER_WORDS.contains(&w.as_str())) {
                    by_name_word.add(name.iter().cloned(), finders.len());
                    // A name that names what it finds says all: a search
                    // for locations does not find what its description
                    // happens to mention.
                    let generic = name
                        .iter()
                        .all(|w| FINDER_WORDS.contains(&w.as_str()) || is_stop_word(w));
                    if generic {
                        let says = first_sentence(&tool.description);
                        by_description_word.add(words(says), finders.len());
                    }
                    finders.push((&group.id, &tool.name, name.len()));
                }
            }
        }
        // The most specific finder of another group whose name names
        // `entity` (or its plural), else the shortest-named generic finder
        // whose description does; the first in catalog order among equals.
        let finder_of = |entity: &str, group: &GroupId| {
            [&by_name_word, &by_description_word]
                .into_iter()
                .find_map(|index| {
                    index
                        .places(entity)
                        .into_iter()
                        .map(|place| finders[place])
                        .filter(|(g, _, _)| *g != group)
                        .min_by_key(|(_, _, length)| *length)
                })
        };
        let mut by_group: HashMap<GroupId, Vec<IdFinder>> = HashMap::new();
        for group in catalog.groups() {
            for tool in catalog.group_tools(group.id.as_str()) {
                let finder = required(&tool.input_schema)
                    .filter_map(|parameter| parameter_entity(&tool.input_schema, parameter))
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

/// The finders (their places in catalog order) each word names.
#[derive(Default)]
struct WordIndex(HashMap<String, Vec<usize>>);

impl WordIndex {
    /// Records that the finder at `place` names `words`.
    fn add(&mut self, words: impl IntoIterator<Item = String>, place: usize) {
        for word in words {
            let places = self.0.entry(word).or_default();
            if places.last() != Some(&place) {
                places.push(place);
            }
        }
    }

    /// The finders that name `entity` or its plural, in catalog order.
    fn places(&self, entity: &str) -> Vec<usize> {
        let mut places: Vec<usize> = [entity.to_owned(), format!("{entity}s")]
            .iter()
            .filter_map(|word| self.0.get(word))
            .flatten()
            .copied()
            .collect();
        places.sort_unstable();
        places.dedup();
        places
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

/// What a required parameter of `schema` names: its name's entity, else,
/// for a bare `id` or `ids`, the word before "ID" in its title ("Spotify
/// Album ID" gives `album`).
fn parameter_entity(
    schema: &serde_json::Map<String, serde_json::Value>,
    parameter: &str,
) -> Option<String> {
    named_entity(parameter).or_else(|| {
        if !is_id(&parameter.to_lowercase()) {
            return None;
        }
        let title = schema
            .get("properties")?
            .get(parameter)?
            .get("title")?
            .as_str()?;
        // Split at anything not a letter or digit only: "IDs" is one word.
        let title: Vec<String> = title
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect();
        let at = title.iter().position(|word| is_id(word))?;
        title
            .get(at.checked_sub(1)?)
            .filter(|word| !is_stop_word(word))
            .cloned()
    })
}

/// What a description says a tool does: up to its first full stop (one
/// not inside a word, as in `ClinicalTrials.gov`). What follows tells how
/// to use it, and mentions things ("allows users to...") it does not find.
fn first_sentence(description: &str) -> &str {
    let mut chars = description.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '.' && chars.peek().is_none_or(|(_, next)| !next.is_alphanumeric()) {
            return &description[..at];
        }
    }
    description
}

/// Whether a lowercase word is `id` or `ids`.
fn is_id(word: &str) -> bool {
    matches!(word, "id" | "ids")
}

/// What an id parameter names, its words run together: `person_id` and
/// `personId` give `person`, `tv_show_id` gives `tvshow`, `track_ids` gives
/// `track`; a bare `id`, a parameter not ending in one, or one whose other
/// words are too common to name anything (`is_id`), names nothing.
fn named_entity(parameter: &str) -> Option<String> {
    let parts: Vec<String> = words(parameter).collect();
    match parts.split_last() {
        Some((last, entity)) if is_id(last) && !entity.iter().all(|w| is_stop_word(w)) => {
            Some(entity.concat())
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "id_finders_tests.rs"]
mod tests;
