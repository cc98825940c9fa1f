//! A dataset in the normalized layout (`tools.jsonl`, `groups.jsonl`,
//! `queries.jsonl`) and its split into a tuning part and a reported part.
//!
//! The split is fixed when the dataset is loaded, so every policy is tuned and
//! measured on the same queries: the `dev` split where the dataset has one,
//! else a stable 30% of the conversations. The 30% is chosen by a hash of the
//! conversation id (the query id outside conversations), so the turns of one
//! conversation stay on one side and a rerun picks the same queries.
//!
//! A tool or group whose name toolgate refuses is loaded under the name the
//! gateway would expose it by (see `toolgate_core::import_jsonl`), and the
//! queries' gold tools and groups that name it are renamed the same way, so
//! such a tool can be found like any other. Gold tools that name no tool of
//! the catalog are kept as they are; gold groups that name no group are
//! dropped.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use toolgate_core::{Catalog, GroupId, ImportReport, import_jsonl};

use crate::error::{EvalError, Result};

/// A dataset: its catalog and its labelled queries.
#[derive(Debug)]
pub struct Dataset {
    /// The directory name.
    pub name: String,
    /// Every tool and group.
    pub catalog: Catalog,
    /// The queries, in file order.
    pub queries: Vec<Query>,
    /// How the queries were split.
    pub split_rule: String,
    /// Catalog lines that could not be imported, with the reason.
    pub skipped: Vec<String>,
    /// Tools and groups loaded under another name than their lines', with
    /// the reason: one line each for the operator.
    pub renamed: Vec<String>,
}

/// One labelled user turn.
#[derive(Clone, Debug)]
pub struct Query {
    /// Its id.
    pub id: String,
    /// The user's text.
    pub text: String,
    /// Earlier turns of the same conversation, oldest first.
    pub context: Vec<String>,
    /// Tools it needs.
    pub gold_tools: Vec<String>,
    /// Groups it needs.
    pub gold_groups: Vec<GroupId>,
    /// In the tuning part (else the reported part).
    pub tune: bool,
    /// Position in [`Dataset::queries`].
    pub index: usize,
}

impl Query {
    /// [`Query::context`] as the router takes it.
    pub(crate) fn earlier_turns(&self) -> Vec<&str> {
        self.context.iter().map(String::as_str).collect()
    }
}

#[derive(Deserialize)]
struct RawQuery {
    id: serde_json::Value,
    query: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    split: Option<String>,
    #[serde(default)]
    conversation_id: Option<String>,
    #[serde(default)]
    turn: Option<usize>,
}

impl Dataset {
    /// Loads `dir/tools.jsonl` (with `groups.jsonl`) and `dir/queries.jsonl`.
    ///
    /// ```no_run
    /// # fn main() -> toolgate_eval::Result<()> {
    /// let dataset = toolgate_eval::Dataset::load(std::path::Path::new("data/seal_tools"))?;
    /// println!("{}: {} queries, {}", dataset.name, dataset.queries.len(), dataset.split_rule);
    /// # Ok(())
    /// # }
    /// ```
    pub fn load(dir: &Path) -> Result<Self> {
        let mut catalog = Catalog::new();
        let tools = dir.join("tools.jsonl");
        let report = import_jsonl(&mut catalog, &tools).map_err(|source| EvalError::Catalog {
            path: tools,
            source,
        })?;
        let renames = Renames::of(&report);
        let raw = read_queries(&dir.join("queries.jsonl"))?;
        let has_dev = raw.iter().any(|q| q.split.as_deref() == Some("dev"));
        let split_rule = if has_dev {
            "tuned on the `dev` split, reported on the others".to_owned()
        } else {
            "tuned on 30% of the conversations (stable hash of the id), reported on the other 70%"
                .to_owned()
        };
        let turns = conversations(&raw);
        let mut queries = Vec::new();
        for query in raw {
            let id = match &query.id {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let context = match (&query.conversation_id, query.turn) {
                (Some(conversation), Some(turn)) => earlier_turns(&turns[conversation], turn),
                _ => Vec::new(),
            };
            let tune = if has_dev {
                query.split.as_deref() == Some("dev")
            } else {
                stable_hash(query.conversation_id.as_deref().unwrap_or(&id)) % 10 < 3
            };
            queries.push(Query {
                index: queries.len(),
                id,
                context,
                gold_tools: renames.tools(query.tools),
                gold_groups: renames.groups(&query.groups, &catalog),
                text: query.query,
                tune,
            });
        }
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Self {
            name,
            catalog,
            queries,
            split_rule,
            skipped: report.errors.iter().map(ToString::to_string).collect(),
            renamed: (report.renamed_tools.iter().map(ToString::to_string))
                .chain(report.renamed_groups.iter().map(ToString::to_string))
                .collect(),
        })
    }
}

/// The names the import loaded refused tools and groups under, by the
/// names the dataset gives.
struct Renames<'r> {
    tools: HashMap<&'r str, &'r str>,
    groups: HashMap<&'r str, &'r GroupId>,
}

impl<'r> Renames<'r> {
    fn of(report: &'r ImportReport) -> Self {
        Self {
            tools: report
                .renamed_tools
                .iter()
                .map(|renamed| (renamed.original.as_str(), renamed.loaded.as_str()))
                .collect(),
            groups: report
                .renamed_groups
                .iter()
                .map(|renamed| (renamed.original.as_str(), &renamed.loaded))
                .collect(),
        }
    }

    /// Gold tools under the names they were loaded by (a name the catalog
    /// lacks stays as it is).
    fn tools(&self, gold: Vec<String>) -> Vec<String> {
        gold.into_iter()
            .map(|tool| match self.tools.get(tool.as_str()) {
                Some(&loaded) => loaded.to_owned(),
                None => tool,
            })
            .collect()
    }

    /// Gold groups under the ids they were loaded by, those the catalog has.
    fn groups(&self, gold: &[String], catalog: &Catalog) -> Vec<GroupId> {
        gold.iter()
            .filter_map(|g| match self.groups.get(g.as_str()) {
                Some(&loaded) => Some(loaded.clone()),
                None => GroupId::new(g.as_str()).ok(),
            })
            .filter(|g| catalog.group(g.as_str()).is_some())
            .collect()
    }
}

/// The lines of `path`, each a query (blank lines skipped).
fn read_queries(path: &Path) -> Result<Vec<RawQuery>> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::ReadQueries {
        path: path.to_path_buf(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(number, line)| {
            serde_json::from_str(line).map_err(|source| EvalError::Query {
                path: path.to_path_buf(),
                line: number + 1,
                source,
            })
        })
        .collect()
}

/// Each conversation's turns: (turn, text).
fn conversations(raw: &[RawQuery]) -> HashMap<String, Vec<(usize, String)>> {
    let mut turns: HashMap<String, Vec<(usize, String)>> = HashMap::new();
    for query in raw {
        if let (Some(conversation), Some(turn)) = (&query.conversation_id, query.turn) {
            turns
                .entry(conversation.clone())
                .or_default()
                .push((turn, query.query.clone()));
        }
    }
    turns
}

/// The texts of the turns before `turn`, oldest first.
fn earlier_turns(turns: &[(usize, String)], turn: usize) -> Vec<String> {
    let mut earlier: Vec<&(usize, String)> = turns.iter().filter(|(t, _)| *t < turn).collect();
    earlier.sort_by_key(|(t, _)| *t);
    earlier.into_iter().map(|(_, text)| text.clone()).collect()
}

/// FNV-1a: stable across runs and platforms.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[path = "dataset_tests.rs"]
mod tests;
