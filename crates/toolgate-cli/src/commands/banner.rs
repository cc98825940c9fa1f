//! The start-up summary `toolgate serve` and `toolgate chat` show on stderr:
//! where the tools came from, what was skipped, and each group's state.

use std::fmt::Write as _;
use std::path::PathBuf;

use toolgate_core::{Catalog, GroupId, GroupListing};
use toolgate_tools::{StartReport, USER_TOOLS_GROUP};

/// Where the tools came from and what was skipped, one line each.
pub(crate) fn describe_sources(
    out: &mut String,
    report: &StartReport,
    config_files: &[PathBuf],
    manifest_dirs: &[PathBuf],
) {
    for file in config_files {
        let _ = writeln!(out, "  config:    {}", file.display());
    }
    for dir in manifest_dirs {
        let _ = writeln!(
            out,
            "  manifests: {} ({} files loaded)",
            dir.display(),
            report.manifest_files
        );
    }
    for error in &report.manifest_errors {
        let _ = writeln!(out, "  skipped:   {error}");
    }
    if report.imported_tools > 0 {
        let _ = writeln!(
            out,
            "  imported:  {} tools from tools.jsonl catalogs",
            report.imported_tools
        );
    }
    for error in &report.import_errors {
        let _ = writeln!(out, "  skipped:   {error}");
    }
    for renamed in &report.renamed {
        let _ = writeln!(out, "  renamed:   {renamed}");
    }
    for group in &report.shadowed_builtins {
        let _ = writeln!(
            out,
            "  note:      built-in group '{group}' replaced by the upstream of that name"
        );
    }
    if let Some(above) = report.search_added {
        let _ = writeln!(
            out,
            "  search:    find_tool_groups offered: more than {above} groups"
        );
    }
}

/// The core tools and each group with its state. `failed` are upstreams
/// that start on first load but were started already (to list the tools of
/// an eager one after them) and failed: why, not "starts on first load".
pub(crate) fn describe_catalog(
    out: &mut String,
    catalog: &Catalog,
    report: &StartReport,
    failed: &[(GroupId, String)],
) {
    let core: Vec<&str> = catalog.core_tools().map(|t| t.name.as_str()).collect();
    let _ = writeln!(out, "  core tools: {}", core.join(", "));
    let _ = writeln!(out, "  groups:");
    for group in catalog.groups() {
        let count = tool_count(catalog, group.id.as_str());
        let failure = failed.iter().find(|(id, _)| id == &group.id);
        let state = match report.listed.iter().find(|(id, _)| id == &group.id) {
            Some((_, Err(error))) => format!("FAILED: {error}"),
            None if let Some((_, reason)) = failure => {
                format!("FAILED: {reason} (tried again on first load)")
            }
            // Listed like an upstream, but from the store.
            Some((_, Ok(_))) if group.id.as_str() == USER_TOOLS_GROUP => {
                format!("{count} written by agents")
            }
            Some((_, Ok(_))) => format!("{count} (upstream, started)"),
            None if matches!(
                catalog.group_listing(group.id.as_str()),
                Some(GroupListing::Deferred)
            ) =>
            {
                "upstream, starts on first load".to_owned()
            }
            None => count,
        };
        // An error's further lines (an upstream's stderr) under its group.
        let state = state.replace('\n', "\n        ");
        let _ = writeln!(out, "    - {}: {state}", group.id);
    }
    for (group, why) in &report.withheld_builtins {
        let _ = writeln!(out, "    - {group}: not served: {why}");
    }
}

/// "3 tools", or for a group offered as one polymorphic tool "1 tool
/// (actions: search, fetch)", read from the schema the model is sent.
fn tool_count(catalog: &Catalog, group: &str) -> String {
    let tools: Vec<_> = catalog.group_tools(group).collect();
    if let [tool] = tools.as_slice() {
        let actions = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.get(toolgate_core::ACTION_PARAMETER))
            .and_then(|a| a.get("enum"))
            .and_then(|e| e.as_array());
        return match actions {
            Some(actions) if tool.name.as_str() == group => {
                let names: Vec<&str> = actions.iter().filter_map(|a| a.as_str()).collect();
                format!("1 tool (actions: {})", names.join(", "))
            }
            _ => "1 tool".to_owned(),
        };
    }
    format!("{} tools", tools.len())
}

#[cfg(test)]
#[path = "banner_tests.rs"]
mod tests;
