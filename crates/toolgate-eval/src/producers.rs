//! Groups a turn needs without naming them, read from the catalog alone: a
//! tool that requires an `X_id` needs, first, a tool that finds X (one
//! whose name says it searches or lists X). A measured candidate, not yet a
//! router setting.

use std::collections::HashMap;

use toolgate_core::{Catalog, GroupId};

use crate::costs::{Costs, Seen};

/// Words in a finder's name.
const FINDERS: [&str; 4] = ["search", "list", "find", "lookup"];

/// For each tool that requires an id, the tool (and its group) that finds
/// what the id names.
pub(crate) struct Producers(HashMap<String, (GroupId, String)>);

impl Producers {
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let mut finders: Vec<(GroupId, String, Vec<String>)> = Vec::new();
        let mut tools: Vec<(GroupId, String, Vec<String>)> = Vec::new();
        for group in catalog.groups() {
            for tool in catalog.group_tools(group.id.as_str()) {
                let name = words(tool.name.as_str());
                if name.iter().any(|w| FINDERS.contains(&w.as_str())) {
                    finders.push((group.id.clone(), tool.name.to_string(), name));
                }
                let required: Vec<String> = tool
                    .input_schema
                    .get("required")
                    .and_then(|r| r.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str())
                    .map(str::to_owned)
                    .collect();
                tools.push((group.id.clone(), tool.name.to_string(), required));
            }
        }
        let mut out = HashMap::new();
        for (group, tool, required) in tools {
            for parameter in required {
                let parts = words(&parameter);
                let Some((last, entity)) = parts.split_last() else {
                    continue;
                };
                if last != "id" || entity.is_empty() {
                    continue;
                }
                let entity = entity.join("");
                // The most specific finder of another group naming it.
                let finder = finders
                    .iter()
                    .filter(|(g, _, name)| {
                        *g != group
                            && name
                                .iter()
                                .any(|w| *w == entity || *w == format!("{entity}s"))
                    })
                    .min_by_key(|(_, _, name)| name.len());
                if let Some((g, t, _)) = finder {
                    out.entry(tool.clone()).or_insert((g.clone(), t.clone()));
                }
            }
        }
        Self(out)
    }

    /// `seen` with the finder of each shown tool's id added, group and
    /// tool, when its group is not shown.
    pub(crate) fn widen(&self, costs: &Costs, seen: &Seen) -> Seen {
        let mut out = seen.clone();
        if seen.all {
            return out;
        }
        for tool in &seen.tools {
            if let Some((group, finder)) = self.0.get(tool)
                && !seen.groups.contains(group)
                && out.tools.insert(finder.clone())
            {
                out.groups.insert(group.clone());
                out.tokens += costs.tools.tool(finder);
            }
        }
        out
    }
}

/// Lower-case words of a name: split at anything not a letter or digit and
/// where a lower-case letter meets an upper-case one.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
#[path = "producers_tests.rs"]
mod tests;
