//! Groups loaded on demand, at library level, on the shipped example
//! catalog: core tools always there, the listing in the system prompt,
//! loads that succeed, fail, persist, add up and repeat, fewer tools at
//! first, the schemas after a load, manifest metadata, a grouped tool
//! refused before its load and run after it. The agent-loop versions of
//! these (`toolgate-agent`'s `tests/suite/turns.rs`) run against a scripted
//! provider.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{
    ActiveToolSet, Catalog, GroupId, LoadGroupError, Message, ToolState, ToolStatus,
    group_name_argument, restore_active_set, system_prompt,
};

use super::example_catalog::{example_catalog, names};

const CORE_TOOLS: [&str; 13] = [
    "load_tool_group",
    "browser",
    "create_agent",
    "exec",
    "get_current_time",
    "http_request",
    "js_eval",
    "load_skill",
    "read_file",
    "save_memory",
    "search_history",
    "webfetch",
    "write_file",
];

/// What the agent loop does with one `load_tool_group` call.
fn call_load(
    active: &mut ActiveToolSet,
    catalog: &Catalog,
    arguments: serde_json::Value,
) -> Result<String, LoadGroupError> {
    let group = group_name_argument(&arguments)?;
    active.load(catalog, group).map(|loaded| loaded.to_string())
}

#[test]
fn core_tools_always_available() {
    let catalog = example_catalog();
    let active = ActiveToolSet::new();
    // Manifest files load in name order; the meta-tool is registered first.
    assert_eq!(names(active.definitions(&catalog)), CORE_TOOLS);
}

#[test]
fn tool_group_listing_in_system_prompt() {
    let catalog = example_catalog();
    let prompt = system_prompt("You are a helpful assistant.", &catalog);
    let (base, section) = prompt.split_once("\n\n---\n\n").unwrap();
    assert_eq!(base, "You are a helpful assistant.");
    let mut lines = section.lines();
    assert_eq!(lines.next(), Some("## Available Tool Groups"));
    assert_eq!(lines.next(), Some(""));
    assert_eq!(
        lines.next(),
        Some(
            "Use `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group."
        )
    );
    assert_eq!(lines.next(), Some(""));
    let listed: Vec<&str> = lines.map(|line| line.split_once(": ").unwrap().0).collect();
    let groups: Vec<String> = catalog.groups().map(|g| format!("- {}", g.id)).collect();
    assert_eq!(listed, groups);
    assert_eq!(listed.len(), 14);
    assert!(section.contains(
        "- config: Manage providers, models, agents, app settings, environment variables, and tool states"
    ));
}

#[test]
fn load_tool_group_success() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    let text = call_load(&mut active, &catalog, json!({"group_name": "google_gmail"})).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("Loaded 8 tools from group 'Google Gmail':")
    );
    let listed: Vec<&str> = lines
        .map(|line| line.strip_prefix("- ").unwrap().split_once(": ").unwrap().0)
        .collect();
    assert_eq!(listed, names(catalog.group_tools("google_gmail")));
    assert!(listed.contains(&"gmail_search"));
    assert!(active.check_available(&catalog, "gmail_search").is_ok());
}

#[test]
fn load_tool_group_invalid_name() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    let error = call_load(&mut active, &catalog, json!({"group_name": "nonexistent"})).unwrap_err();
    assert_eq!(error.kind(), "not_found");
    let all: Vec<String> = catalog.groups().map(|g| g.id.to_string()).collect();
    assert_eq!(
        error.to_string(),
        format!(
            "Tool group 'nonexistent' not found. Available groups: {}",
            all.join(", ")
        )
    );
}

#[test]
fn loaded_tools_persist_across_turns() {
    let catalog = example_catalog();
    // Turn 1: the model loads Gmail; the loop stores the call.
    let mut turn1 = ActiveToolSet::new();
    call_load(&mut turn1, &catalog, json!({"group_name": "google_gmail"})).unwrap();
    let history = [
        Message::user("check my email"),
        Message::tool_call(
            "c1",
            "load_tool_group",
            r#"{"group_name":"google_gmail"}"#,
            ToolStatus::Success,
        ),
        Message::tool_result(
            "c1",
            "load_tool_group",
            "Loaded 8 tools ...",
            ToolStatus::Success,
        ),
        Message::assistant("You have 3 unread emails."),
        Message::user("archive the first one"),
    ];
    // Turn 2 starts from history alone.
    let turn2 = restore_active_set(&history, &catalog).active;
    assert_eq!(turn2, turn1);
    assert!(turn2.check_available(&catalog, "gmail_archive").is_ok());
}

#[test]
fn multiple_groups_can_be_loaded() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    call_load(&mut active, &catalog, json!({"group_name": "google_gmail"})).unwrap();
    call_load(&mut active, &catalog, json!({"group_name": "google_drive"})).unwrap();
    let visible = names(active.definitions(&catalog));
    assert_eq!(visible.len(), 13 + 8 + 8);
    for tool in names(catalog.group_tools("google_gmail"))
        .into_iter()
        .chain(names(catalog.group_tools("google_drive")))
    {
        assert!(visible.contains(&tool), "{tool}");
    }
}

#[test]
fn duplicate_load_is_idempotent() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    let first = call_load(&mut active, &catalog, json!({"group_name": "pdf"})).unwrap();
    let second = call_load(&mut active, &catalog, json!({"group_name": "pdf"})).unwrap();
    assert_eq!(first, second);
    assert_eq!(active.definitions(&catalog).len(), 13 + 3);
}

#[test]
fn reduced_initial_tool_count() {
    let catalog = example_catalog();
    assert!(catalog.tools().count() >= 100, "the example has 100+ tools");
    assert_eq!(ActiveToolSet::new().definitions(&catalog).len(), 13);
}

#[test]
fn group_schemas_sent_after_load() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    call_load(&mut active, &catalog, json!({"group_name": "config"})).unwrap();
    let definitions = active.definitions(&catalog);
    assert_eq!(definitions.len(), 13 + 17);
    assert_eq!(
        names(definitions[13..].iter().copied()),
        names(catalog.group_tools("config"))
    );
}

#[test]
fn manifest_metadata() {
    let catalog = example_catalog();
    let gmail = catalog.group("google_gmail").unwrap();
    assert_eq!(gmail.display_name, "Google Gmail");
    assert!(catalog.tool("_meta").is_none());
    // The generated form is covered in manifest unit tests; every example sets _meta.
    for group in catalog.groups() {
        assert!(
            !group.description.starts_with("Tools: "),
            "{} has no _meta",
            group.id
        );
    }
}

#[test]
fn grouped_tool_blocked_before_load() {
    let catalog = example_catalog();
    let active = ActiveToolSet::new();
    assert_eq!(
        active
            .check_available(&catalog, "pdf_info")
            .unwrap_err()
            .to_string(),
        "Tool 'pdf_info' is not available for this agent. It belongs to tool group 'pdf'; call load_tool_group with group_name 'pdf' and tools [\"pdf_info\"] first (without tools it loads the whole group)."
    );
}

#[test]
fn grouped_tool_runs_after_load() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    call_load(&mut active, &catalog, json!({"group_name": "pdf"})).unwrap();
    let tool = active.check_available(&catalog, "pdf_info").unwrap();
    assert!(tool.input_schema["properties"].get("path").is_some());
}

#[test]
fn edge_load_every_group_at_once() {
    let catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    for group in catalog.groups() {
        active.load(&catalog, group.id.as_str()).unwrap();
    }
    assert_eq!(active.definitions(&catalog).len(), catalog.tools().count());
}

#[test]
fn edge_disable_a_tool_inside_a_loaded_group_then_restore() {
    let mut catalog = example_catalog();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "pdf").unwrap();
    catalog
        .set_tool_state("pdf_render_page", ToolState::Disabled)
        .unwrap();
    assert_eq!(
        names(active.definitions(&catalog)[13..].iter().copied()),
        ["pdf_info", "pdf_extract_text"]
    );
    let history = [Message::tool_call(
        "c",
        "load_tool_group",
        r#"{"group_name":"pdf"}"#,
        ToolStatus::Success,
    )];
    assert_eq!(restore_active_set(&history, &catalog).active, active);
}

#[test]
fn edge_parallel_loads_in_one_turn_restore_without_duplicates() {
    let catalog = example_catalog();
    // A model issuing the same and different loads as parallel tool calls.
    let history: Vec<Message> = [
        "google_gmail",
        "google_drive",
        "google_gmail",
        "pdf",
        "google_drive",
        "google_gmail",
    ]
    .iter()
    .enumerate()
    .map(|(i, group)| {
        Message::tool_call(
            format!("p{i}"),
            "load_tool_group",
            json!({"group_name": group}).to_string(),
            ToolStatus::Success,
        )
    })
    .collect();
    let restored = restore_active_set(&history, &catalog).active;
    let loaded: Vec<&str> = restored
        .loaded_groups()
        .iter()
        .map(GroupId::as_str)
        .collect();
    assert_eq!(loaded, ["google_gmail", "google_drive", "pdf"]);
    assert_eq!(restored.definitions(&catalog).len(), 13 + 8 + 8 + 3);
}
