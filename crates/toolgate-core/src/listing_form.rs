//! [`ListingForm`]: how much of the catalog the "Available Tool Groups"
//! section shows, and the rule that shrinks it.
//!
//! One line per group costs about 25 tokens whatever the group holds. Where
//! `find_tool_groups` is offered it ranks the tools themselves, so lines past
//! [`MIN_SHRUNK_CHARS`] (about 1,000 tokens) give way to a count and a search
//! instruction: with them a task through the search cost 1.6 times as much
//! uncached on toolbench_stable (47 groups, 2,298 tokens of lines) and 3.5
//! times on seal_tools (146 groups, 6,375 tokens), for as many tasks done
//! (`toolgate eval`, the `[search listing]` rows). Where it is not
//! offered the lines are what lets a model load the right group without
//! asking, so they stay until they pass [`MAX_LINES_SHARE`] of the schemas,
//! then shrink to the group names alone: on seven catalogs of real tools the
//! lines are 3.3% of the schemas or less and pay for themselves; at 7% and
//! 12% (the same tools regrouped one plugin per group) the names cost 5-13
//! points of all-tools' bill less for every policy that routes, with as many
//! tasks done within 2 points.

use crate::catalog::Catalog;
use crate::contract::{FIND_TOOL_GROUPS_TOOL_NAME, TOOL_GROUPS_SEARCH_NAMED};
use crate::group::ToolGroup;
use crate::tool::one_line;

/// Longest group description in the listing, in characters, ellipsis included.
pub const GROUP_DESCRIPTION_MAX_CHARS: usize = 200;

/// A group description as the listing shows it: one line, at most
/// [`GROUP_DESCRIPTION_MAX_CHARS`] characters.
pub fn listing_description(description: &str) -> String {
    let line = one_line(description);
    if line.chars().count() <= GROUP_DESCRIPTION_MAX_CHARS {
        return line;
    }
    // Room for the ellipsis; then back up to the last word boundary.
    let limit = GROUP_DESCRIPTION_MAX_CHARS - 1;
    let cut = line
        .char_indices()
        .nth(limit)
        .map_or(line.len(), |(at, _)| at);
    let head = &line[..cut];
    let head = match head.rfind(' ') {
        // The cut already falls between two words.
        _ if line[cut..].starts_with(' ') => head,
        Some(space) if space > 0 => &head[..space],
        // A single giant word has no boundary: cut inside it rather than drop it.
        _ => head,
    };
    format!("{}…", head.trim_end_matches([',', ';', ':', '.', '-', ' ']))
}

/// How the "Available Tool Groups" section shows the groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListingForm {
    /// One line per group: its name and description.
    Lines,
    /// The group names alone, on one line.
    Names,
    /// No group: how many there are, and to search them with
    /// `find_tool_groups`.
    Search,
}

/// Whether the caller can call `find_tool_groups`: the search form needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupSearch {
    /// `find_tool_groups` is offered.
    Offered,
    /// It is not: the section must name the groups.
    NotOffered,
}

impl GroupSearch {
    /// Whether `catalog` holds `find_tool_groups`: a host that offers it
    /// registers it, and a caller's view holds it only when its policy
    /// allows it.
    pub fn of(catalog: &Catalog) -> Self {
        if catalog.tool(FIND_TOOL_GROUPS_TOOL_NAME).is_some() {
            Self::Offered
        } else {
            Self::NotOffered
        }
    }
}

/// The largest share of the schemas (in characters) the one-line-per-group
/// listing may take before it shrinks.
pub const MAX_LINES_SHARE: f64 = 0.05;

/// A listing shorter than this (in characters, about 1,000 tokens) never
/// shrinks: it is cheap whatever the schemas weigh.
pub const MIN_SHRUNK_CHARS: usize = 4_000;

impl ListingForm {
    /// Every form, the fullest first.
    pub const ALL: [Self; 3] = [Self::Lines, Self::Names, Self::Search];

    /// The form's name in settings and reports: `lines`, `names`, `search`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lines => "lines",
            Self::Names => "names",
            Self::Search => "search",
        }
    }

    /// The form named `text` (the inverse of [`Self::as_str`]).
    pub fn from_setting(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|form| form.as_str() == text)
    }

    /// The form `catalog` is listed in: [`Self::fitting`], with the search
    /// form when the catalog holds `find_tool_groups`.
    pub fn of(catalog: &Catalog) -> Self {
        Self::fitting(catalog, GroupSearch::of(catalog))
    }

    /// The form `catalog` is listed in: lines while they are under
    /// [`MIN_SHRUNK_CHARS`]. Longer, the search form where `search` is
    /// offered (it ranks the tools themselves, so the lines would only ride
    /// on every call); where it is not, the lines unless they take more than
    /// [`MAX_LINES_SHARE`] of the schemas of the groups they describe, then
    /// the names.
    pub fn fitting(catalog: &Catalog, search: GroupSearch) -> Self {
        let weight = ListingWeight::of(catalog);
        if weight.lines < MIN_SHRUNK_CHARS {
            return Self::Lines;
        }
        match search {
            GroupSearch::Offered => Self::Search,
            GroupSearch::NotOffered
                if weight.lines as f64 <= MAX_LINES_SHARE * weight.schemas as f64 =>
            {
                Self::Lines
            }
            GroupSearch::NotOffered => Self::Names,
        }
    }
}

/// The groups the search form names: the [`TOOL_GROUPS_SEARCH_NAMED`]
/// available groups with the most tools (equal sizes in catalog order), and
/// how many tools each holds.
pub fn largest_groups(catalog: &Catalog) -> Vec<(&ToolGroup, usize)> {
    let mut groups: Vec<(&ToolGroup, usize)> = catalog
        .available_groups()
        .map(|group| (group, catalog.group_tools(group.id.as_str()).count()))
        .collect();
    // Stable: equal sizes keep catalog order.
    groups.sort_by_key(|(_, size)| std::cmp::Reverse(*size));
    groups.truncate(TOOL_GROUPS_SEARCH_NAMED);
    groups
}

/// The one-line listing's characters against the schemas it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListingWeight {
    /// The lines of the groups whose tools are known (a deferred group's
    /// tools are not listed yet, so neither side counts it).
    pub lines: usize,
    /// Those groups' tools as a provider receives them (name, description
    /// and parameters).
    pub schemas: usize,
}

impl ListingWeight {
    /// Weighs `catalog`'s available groups.
    pub fn of(catalog: &Catalog) -> Self {
        let mut weight = Self::default();
        for group in catalog.available_groups() {
            let schemas = catalog.group_weight(group.id.as_str());
            if schemas == 0 {
                continue;
            }
            // "\n- id: description", as the section writes it.
            weight.lines +=
                5 + group.id.as_str().len() + listing_description(&group.description).len();
            weight.schemas += schemas;
        }
        weight
    }
}

#[cfg(test)]
#[path = "listing_form_tests.rs"]
mod tests;
