use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::answers::ToolsLoaded;
use crate::catalog::ToolState;
use crate::group::ToolGroup;
use crate::name::ToolName;
use crate::origin::Origin;

fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition::new(ToolName::new(name).unwrap(), description, json!({})).unwrap()
}

fn add_group(catalog: &mut Catalog, id: &str, display: &str, tools: &[&str]) {
    let group = ToolGroup::new(
        GroupId::new(id).unwrap(),
        display,
        format!("{display} things"),
    );
    let tools = tools
        .iter()
        .map(|name| (tool(name, &format!("Does {name}")), Origin::Builtin))
        .collect();
    catalog
        .register_group_with_tools(group, Origin::Builtin, tools)
        .unwrap();
}

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    catalog
        .register_tool(tool("get_current_time", "Now"), None, Origin::Builtin)
        .unwrap();
    add_group(
        &mut catalog,
        "pdf",
        "PDF Tools",
        &["pdf_info", "pdf_extract_text"],
    );
    add_group(
        &mut catalog,
        "google_gmail",
        "Google Gmail",
        &["gmail_search"],
    );
    add_group(
        &mut catalog,
        "google_drive",
        "Google Drive",
        &["drive_list"],
    );
    catalog
}

fn names(tools: Vec<&ToolDefinition>) -> Vec<&str> {
    tools.into_iter().map(|tool| tool.name.as_str()).collect()
}

#[test]
fn a_new_set_has_core_tools_only() {
    let catalog = catalog();
    let active = ActiveToolSet::new();
    assert_eq!(
        names(active.definitions(&catalog)),
        ["load_tool_group", "get_current_time"]
    );
}

#[test]
fn an_always_visible_group_is_listed_after_the_core_tools_and_callable_unloaded() {
    let mut catalog = catalog();
    catalog
        .set_group_visibility("google_drive", GroupVisibility::Always)
        .unwrap();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "pdf").unwrap();
    // Loading it adds nothing twice, and it keeps its place.
    active.load(&catalog, "google_drive").unwrap();
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "drive_list",
            "pdf_info",
            "pdf_extract_text"
        ]
    );
    assert!(
        ActiveToolSet::new()
            .check_available(&catalog, "drive_list")
            .is_ok()
    );
    assert!(
        ActiveToolSet::new()
            .check_available(&catalog, "gmail_search")
            .is_err()
    );
}

#[test]
fn loading_returns_the_contract_text_and_expands_the_set() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let loaded = active.load(&catalog, "pdf").unwrap();
    assert_eq!(
        loaded.to_string(),
        "Loaded 2 tools from group 'PDF Tools':\n- pdf_info: Does pdf_info\n- pdf_extract_text: Does pdf_extract_text"
    );
    assert!(loaded.newly_loaded);
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "pdf_info",
            "pdf_extract_text"
        ]
    );
}

#[test]
fn loading_twice_is_idempotent_with_the_same_text() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let first = active.load(&catalog, "pdf").unwrap().to_string();
    let again = active.load(&catalog, "pdf").unwrap();
    assert_eq!(again.to_string(), first);
    assert!(!again.newly_loaded);
    assert_eq!(active.definitions(&catalog).len(), 4);
}

#[test]
fn groups_join_in_first_load_order() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "google_drive").unwrap();
    active.load(&catalog, "pdf").unwrap();
    active.load(&catalog, "google_drive").unwrap();
    let loaded: Vec<&str> = active.loaded_groups().iter().map(GroupId::as_str).collect();
    assert_eq!(loaded, ["google_drive", "pdf"]);
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "drive_list",
            "pdf_info",
            "pdf_extract_text"
        ]
    );
}

#[test]
fn an_unknown_group_lists_the_available_ones_and_suggests_a_close_match() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let error = active.load(&catalog, "nonexistent").unwrap_err();
    assert_eq!(error.kind(), "not_found");
    assert_eq!(
        error.to_string(),
        "Tool group 'nonexistent' not found. Available groups: pdf, google_gmail, google_drive"
    );
    let error = active.load(&catalog, "gmail").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Tool group 'gmail' not found. Available groups: pdf, google_gmail, google_drive. Did you mean 'google_gmail'?"
    );
    let error = active.load(&catalog, "google_drvie").unwrap_err();
    assert!(
        error.to_string().ends_with("Did you mean 'google_drive'?"),
        "{error}"
    );
    assert!(active.loaded_groups().is_empty());
}

#[test]
fn a_group_with_every_tool_disabled_answers_empty_group() {
    let mut catalog = catalog();
    catalog
        .set_tool_state("gmail_search", ToolState::Disabled)
        .unwrap();
    let mut active = ActiveToolSet::new();
    let error = active.load(&catalog, "google_gmail").unwrap_err();
    assert_eq!(error.kind(), "empty_group");
    assert_eq!(
        error.to_string(),
        "Tool group 'google_gmail' has no available tools."
    );
    assert!(active.loaded_groups().is_empty());
}

#[test]
fn disabling_a_tool_inside_a_loaded_group_removes_only_that_tool() {
    let mut catalog = catalog();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "pdf").unwrap();
    catalog
        .set_tool_state("pdf_info", ToolState::Disabled)
        .unwrap();
    assert_eq!(
        names(active.definitions(&catalog)),
        ["load_tool_group", "get_current_time", "pdf_extract_text"]
    );
    assert_eq!(
        active
            .check_available(&catalog, "pdf_info")
            .unwrap_err()
            .to_string(),
        "Tool 'pdf_info' is not available for this agent."
    );
    assert!(active.check_available(&catalog, "pdf_extract_text").is_ok());
}

#[test]
fn a_grouped_tool_is_blocked_before_its_load_with_a_self_correcting_hint() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let error = active.check_available(&catalog, "pdf_info").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Tool 'pdf_info' is not available for this agent. It belongs to tool group 'pdf'; call load_tool_group with group_name 'pdf' and tools [\"pdf_info\"] first (without tools it loads the whole group)."
    );
    active.load(&catalog, "pdf").unwrap();
    assert_eq!(
        active
            .check_available(&catalog, "pdf_info")
            .unwrap()
            .name
            .as_str(),
        "pdf_info"
    );
}

#[test]
fn an_unknown_tool_is_simply_not_available() {
    let catalog = catalog();
    let active = ActiveToolSet::new();
    let error = active.check_available(&catalog, "rm_rf").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Tool 'rm_rf' is not available for this agent."
    );
    assert!(!error.to_string().contains("forbidden"));
    assert!(active.check_available(&catalog, "get_current_time").is_ok());
}

#[test]
fn unloading_removes_the_group_and_a_reload_appends_it() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "pdf").unwrap();
    active.load(&catalog, "google_gmail").unwrap();
    assert_eq!(
        active.unload(&catalog, "pdf").unwrap().to_string(),
        "Unloaded tool group 'PDF Tools'."
    );
    assert!(active.check_available(&catalog, "pdf_info").is_err());
    active.load(&catalog, "pdf").unwrap();
    let loaded: Vec<&str> = active.loaded_groups().iter().map(GroupId::as_str).collect();
    assert_eq!(loaded, ["google_gmail", "pdf"]);
}

#[test]
fn unloading_a_group_that_is_not_loaded_says_what_is() {
    let catalog = catalog();
    let mut active = ActiveToolSet::new();
    let error = active.unload(&catalog, "pdf").unwrap_err();
    assert_eq!(error.kind(), "not_loaded");
    assert_eq!(
        error.to_string(),
        "Tool group 'pdf' is not loaded. Loaded groups: none"
    );
    active.load(&catalog, "google_drive").unwrap();
    assert_eq!(
        active.unload(&catalog, "ghost").unwrap_err().to_string(),
        "Tool group 'ghost' is not loaded. Loaded groups: google_drive"
    );
}

#[test]
fn the_group_name_argument_must_be_a_non_blank_string() {
    use crate::meta_tool::group_name_argument;
    assert_eq!(
        group_name_argument(&json!({"group_name": "pdf"})),
        Ok("pdf")
    );
    assert_eq!(
        group_name_argument(&json!({"group_name": " pdf "})),
        Ok("pdf")
    );
    for bad in [
        json!({}),
        json!({"group_name": ""}),
        json!({"group_name": "  "}),
        json!({"group_name": 3}),
        json!(null),
        json!("pdf"),
    ] {
        let error = group_name_argument(&bad).unwrap_err();
        assert_eq!(error.kind(), "missing_parameter");
        assert_eq!(
            error.to_string(),
            "Required parameter 'group_name' is missing."
        );
    }
}

#[test]
fn many_threads_loading_into_one_set_give_no_duplicates() {
    use std::sync::{Arc, Mutex};
    let catalog = Arc::new(catalog());
    let active = Arc::new(Mutex::new(ActiveToolSet::new()));
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let (catalog, active) = (Arc::clone(&catalog), Arc::clone(&active));
            std::thread::spawn(move || {
                let group = ["pdf", "google_gmail", "google_drive"][i % 3];
                let mut set = active.lock().unwrap();
                set.load(&catalog, group)
                    .map(|loaded| loaded.tools.len())
                    .unwrap()
            })
        })
        .collect();
    for handle in handles {
        assert!(handle.join().unwrap() >= 1);
    }
    let active = active.lock().unwrap();
    let mut loaded: Vec<&str> = active.loaded_groups().iter().map(GroupId::as_str).collect();
    loaded.sort_unstable();
    assert_eq!(loaded, ["google_drive", "google_gmail", "pdf"]);
    assert_eq!(active.definitions(&catalog).len(), 2 + 4);
}

/// [`catalog`] plus `mail`, a group of four tools.
fn catalog_with_mail() -> Catalog {
    let mut catalog = catalog();
    add_group(
        &mut catalog,
        "mail",
        "Mail",
        &["mail_send", "mail_search", "mail_read", "mail_delete"],
    );
    catalog
}

fn tool_names(names: &[&str]) -> Vec<ToolName> {
    names
        .iter()
        .map(|name| ToolName::new(*name).unwrap())
        .collect()
}

fn partial(loaded: ToolsLoaded<'_>) -> crate::answers::GroupPartlyLoaded<'_> {
    match loaded {
        ToolsLoaded::Partial(partial) => partial,
        ToolsLoaded::Whole(whole) => panic!("loaded whole: {whole}"),
    }
}

fn whole(loaded: ToolsLoaded<'_>) -> GroupLoaded<'_> {
    match loaded {
        ToolsLoaded::Whole(whole) => whole,
        ToolsLoaded::Partial(partial) => panic!("loaded partly: {partial}"),
    }
}

#[test]
fn a_partial_load_shows_only_its_tools_in_the_order_given() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    let loaded = partial(
        active
            .load_tools(&catalog, "mail", &tool_names(&["mail_read", "mail_send"]))
            .unwrap(),
    );
    assert_eq!(
        loaded.to_string(),
        "Loaded 2 of 4 tools from group 'Mail' (load_tool_group 'mail' loads the other 2):\n\
         - mail_read: Does mail_read\n\
         - mail_send: Does mail_send"
    );
    assert!(loaded.newly_loaded);
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "mail_read",
            "mail_send"
        ]
    );
    assert_eq!(active.loaded_groups(), [GroupId::new("mail").unwrap()]);
    assert!(active.is_loaded("mail"));
    let selected = tool_names(&["mail_read", "mail_send"]);
    assert_eq!(
        active.selection("mail"),
        Some(GroupSelection::Tools(selected.iter().collect()))
    );
    assert_eq!(active.selection("pdf"), None);
}

#[test]
fn a_tool_of_a_partly_loaded_group_that_is_not_loaded_names_its_group() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_send"]))
        .unwrap();
    assert!(active.check_available(&catalog, "mail_send").is_ok());
    assert_eq!(
        active
            .check_available(&catalog, "mail_delete")
            .unwrap_err()
            .to_string(),
        "Tool 'mail_delete' is not available for this agent. It belongs to tool group 'mail'; call load_tool_group with group_name 'mail' and tools [\"mail_delete\"] first (without tools it loads the whole group)."
    );
}

#[test]
fn a_whole_load_after_a_partial_one_appends_the_rest_and_moves_nothing() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_read", "mail_send"]))
        .unwrap();
    active.load(&catalog, "pdf").unwrap();
    let loaded = active.load(&catalog, "mail").unwrap();
    assert!(loaded.newly_loaded, "the group gained tools");
    assert_eq!(
        loaded.to_string(),
        "Loaded 4 tools from group 'Mail':\n\
         - mail_send: Does mail_send\n\
         - mail_search: Does mail_search\n\
         - mail_read: Does mail_read\n\
         - mail_delete: Does mail_delete",
        "the success text lists the whole group"
    );
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "mail_read",
            "mail_send",
            "pdf_info",
            "pdf_extract_text",
            "mail_search",
            "mail_delete",
        ]
    );
    assert_eq!(active.selection("mail"), Some(GroupSelection::Whole));
    let loaded: Vec<&str> = active.loaded_groups().iter().map(GroupId::as_str).collect();
    assert_eq!(loaded, ["mail", "pdf"]);
    assert!(active.check_available(&catalog, "mail_delete").is_ok());
    // Loading it again changes nothing.
    let again = active.load(&catalog, "mail").unwrap();
    assert!(!again.newly_loaded);
    assert_eq!(active.definitions(&catalog).len(), 8);
}

#[test]
fn a_second_partial_load_adds_only_new_tools_after_everything_loaded() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_send"]))
        .unwrap();
    active.load(&catalog, "google_drive").unwrap();
    let same = partial(
        active
            .load_tools(&catalog, "mail", &tool_names(&["mail_send"]))
            .unwrap(),
    );
    assert!(!same.newly_loaded);
    let more = partial(
        active
            .load_tools(
                &catalog,
                "mail",
                &tool_names(&["mail_search", "mail_send", "mail_search"]),
            )
            .unwrap(),
    );
    assert!(more.newly_loaded);
    assert_eq!(
        more.to_string(),
        "Loaded 2 of 4 tools from group 'Mail' (load_tool_group 'mail' loads the other 2):\n\
         - mail_send: Does mail_send\n\
         - mail_search: Does mail_search"
    );
    assert_eq!(
        names(active.definitions(&catalog)),
        [
            "load_tool_group",
            "get_current_time",
            "mail_send",
            "drive_list",
            "mail_search"
        ]
    );
}

#[test]
fn a_selection_covering_the_group_is_a_whole_load() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_delete", "mail_read"]))
        .unwrap();
    let loaded = whole(
        active
            .load_tools(&catalog, "mail", &tool_names(&["mail_search", "mail_send"]))
            .unwrap(),
    );
    assert!(loaded.newly_loaded);
    assert_eq!(loaded.tools.len(), 4);
    assert_eq!(active.selection("mail"), Some(GroupSelection::Whole));
    // The rest arrive in catalog order, after what was there.
    assert_eq!(
        names(active.definitions(&catalog))[2..],
        ["mail_delete", "mail_read", "mail_send", "mail_search"]
    );

    let mut fresh = ActiveToolSet::new();
    whole(
        fresh
            .load_tools(
                &catalog,
                "pdf",
                &tool_names(&["pdf_info", "pdf_extract_text"]),
            )
            .unwrap(),
    );
    let mut loaded_whole = ActiveToolSet::new();
    loaded_whole.load(&catalog, "pdf").unwrap();
    assert_eq!(fresh, loaded_whole, "the same value as a whole load");
}

#[test]
fn names_outside_the_group_are_ignored_and_none_left_loads_the_group_whole() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    let loaded = partial(
        active
            .load_tools(&catalog, "mail", &["pdf_info", "mail_read", "ghost"])
            .unwrap(),
    );
    assert_eq!(loaded.tools.len(), 1);
    assert_eq!(
        names(active.definitions(&catalog))[2..],
        ["mail_read"],
        "another group's tool is not loaded through this one"
    );
    assert!(active.check_available(&catalog, "pdf_info").is_err());

    let mut other = ActiveToolSet::new();
    let loaded = whole(other.load_tools(&catalog, "mail", &["ghost"]).unwrap());
    assert_eq!(loaded.tools.len(), 4);
    let nothing: [&str; 0] = [];
    assert!(matches!(
        ActiveToolSet::new().load_tools(&catalog, "mail", &nothing),
        Ok(ToolsLoaded::Whole(_))
    ));
}

#[test]
fn a_partial_load_of_a_whole_group_keeps_it_whole() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active.load(&catalog, "mail").unwrap();
    let before = active.clone();
    let loaded = whole(
        active
            .load_tools(&catalog, "mail", &tool_names(&["mail_send"]))
            .unwrap(),
    );
    assert!(!loaded.newly_loaded);
    assert_eq!(active, before);
}

#[test]
fn a_partial_load_answers_like_a_load_for_a_missing_or_empty_group() {
    let mut catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    assert_eq!(
        active
            .load_tools(&catalog, "ghost", &["mail_send"])
            .unwrap_err()
            .kind(),
        "not_found"
    );
    catalog
        .set_tool_state("gmail_search", ToolState::Disabled)
        .unwrap();
    assert_eq!(
        active
            .load_tools(&catalog, "google_gmail", &["gmail_search"])
            .unwrap_err()
            .kind(),
        "empty_group"
    );
    assert_eq!(active, ActiveToolSet::new());
}

#[test]
fn unloading_a_partly_loaded_group_removes_its_tools_and_a_reload_appends_it() {
    let catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_send"]))
        .unwrap();
    active.load(&catalog, "pdf").unwrap();
    active.unload(&catalog, "mail").unwrap();
    assert_eq!(
        names(active.definitions(&catalog))[2..],
        ["pdf_info", "pdf_extract_text"]
    );
    assert!(active.check_available(&catalog, "mail_send").is_err());
    assert_eq!(active.selection("mail"), None);
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_search"]))
        .unwrap();
    assert_eq!(
        names(active.definitions(&catalog))[2..],
        ["pdf_info", "pdf_extract_text", "mail_search"]
    );
}

#[test]
fn a_disabled_tool_of_a_partial_selection_leaves_every_view() {
    let mut catalog = catalog_with_mail();
    let mut active = ActiveToolSet::new();
    active
        .load_tools(&catalog, "mail", &tool_names(&["mail_send", "mail_read"]))
        .unwrap();
    catalog
        .set_tool_state("mail_send", ToolState::Disabled)
        .unwrap();
    assert_eq!(names(active.definitions(&catalog))[2..], ["mail_read"]);
    assert_eq!(
        active
            .check_available(&catalog, "mail_send")
            .unwrap_err()
            .to_string(),
        "Tool 'mail_send' is not available for this agent."
    );
}
