use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} does things"),
        json!({}),
    )
    .unwrap()
}

fn group(id: &str) -> ToolGroup {
    ToolGroup::new(
        GroupId::new(id).unwrap(),
        id.to_uppercase(),
        format!("{id} tools"),
    )
}

fn id(text: &str) -> GroupId {
    GroupId::new(text).unwrap()
}

fn manifest(path: &str) -> Origin {
    Origin::Manifest {
        path: path.into(),
        function: None,
    }
}

fn names<'a>(tools: impl Iterator<Item = &'a ToolDefinition>) -> Vec<&'a str> {
    tools.map(|tool| tool.name.as_str()).collect()
}

/// core_tool + config(2) + pdf(1), as in RFC-040's registry tests.
fn seeded() -> Catalog {
    let mut catalog = Catalog::new();
    catalog
        .register_tool(tool("core_tool"), None, Origin::Builtin)
        .unwrap();
    catalog
        .register_group(group("config"), Origin::Builtin)
        .unwrap();
    catalog
        .register_tool(tool("get_config"), Some(&id("config")), Origin::Builtin)
        .unwrap();
    catalog
        .register_tool(tool("set_config"), Some(&id("config")), Origin::Builtin)
        .unwrap();
    catalog
        .register_group_with_tools(
            group("pdf"),
            manifest("pdf.json"),
            vec![(tool("pdf_info"), manifest("pdf.json"))],
        )
        .unwrap();
    catalog
}

#[test]
fn core_tools_exclude_grouped_tools_and_start_with_the_meta_tool() {
    let catalog = seeded();
    assert_eq!(
        names(catalog.core_tools()),
        ["load_tool_group", "core_tool"]
    );
}

#[test]
fn group_tools_return_the_group_members_in_order() {
    let catalog = seeded();
    assert_eq!(
        names(catalog.group_tools("config")),
        ["get_config", "set_config"]
    );
    assert_eq!(names(catalog.group_tools("pdf")), ["pdf_info"]);
    assert_eq!(catalog.group_tools("nonexistent").count(), 0);
}

#[test]
fn groups_are_listed_in_registration_order() {
    let catalog = seeded();
    let ids: Vec<&str> = catalog.groups().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, ["config", "pdf"]);
    assert_eq!(catalog.group("pdf").unwrap().display_name, "PDF");
}

#[test]
fn tool_group_map_counts_every_grouped_tool_whatever_its_origin() {
    let catalog = seeded();
    let map: Vec<(&str, Vec<&str>)> = catalog
        .tool_groups()
        .into_iter()
        .map(|(group, tools)| {
            (
                group.as_str(),
                tools.into_iter().map(ToolName::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        map,
        [
            ("config", vec!["get_config", "set_config"]),
            ("pdf", vec!["pdf_info"])
        ]
    );
    assert_eq!(
        catalog.group_of("pdf_info").map(GroupId::as_str),
        Some("pdf")
    );
    assert_eq!(catalog.group_of("core_tool"), None);
}

#[test]
fn a_taken_tool_name_is_an_error_naming_both_origins() {
    let mut catalog = seeded();
    let error = catalog
        .register_tool(tool("pdf_info"), None, manifest("tools/other.json"))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `pdf_info` from manifest tools/other.json is already registered by manifest pdf.json"
    );
    let error = catalog
        .register_tool(tool("load_tool_group"), None, Origin::Builtin)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `load_tool_group` from the built-in tools is already registered by toolgate's meta-tools"
    );
}

#[test]
fn a_group_name_registered_twice_is_an_error_not_a_merge() {
    let mut catalog = seeded();
    let error = catalog
        .register_group_with_tools(
            group("config"),
            manifest("config.json"),
            vec![(tool("x"), manifest("config.json"))],
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool group `config` from manifest config.json is already registered by the built-in tools"
    );
    // Nothing of the rejected batch landed.
    assert!(catalog.tool("x").is_none());
    assert_eq!(
        names(catalog.group_tools("config")),
        ["get_config", "set_config"]
    );
}

#[test]
fn a_batch_with_a_taken_or_repeated_name_registers_nothing() {
    let mut catalog = seeded();
    let origin = manifest("g.json");
    let error = catalog
        .register_group_with_tools(
            group("g"),
            origin.clone(),
            vec![(tool("fresh"), origin.clone()), (tool("fresh"), origin)],
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `fresh` appears twice in manifest g.json"
    );
    assert!(catalog.group("g").is_none());
    assert!(catalog.tool("fresh").is_none());
}

#[test]
fn a_tool_naming_an_unknown_group_is_rejected() {
    let mut catalog = Catalog::new();
    let error = catalog
        .register_tool(tool("t"), Some(&id("ghost")), Origin::Builtin)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `t` names the unknown tool group `ghost`"
    );
}

#[test]
fn a_disabled_tool_vanishes_from_every_query_until_enabled() {
    let mut catalog = seeded();
    catalog
        .set_tool_state("get_config", ToolState::Disabled)
        .unwrap();
    catalog
        .set_tool_state("core_tool", ToolState::Disabled)
        .unwrap();
    assert_eq!(names(catalog.core_tools()), ["load_tool_group"]);
    assert_eq!(names(catalog.group_tools("config")), ["set_config"]);
    assert!(catalog.tool("get_config").is_none());
    assert_eq!(catalog.tools().count(), 3);
    assert_eq!(catalog.tool_groups()[0].1.len(), 1);
    assert_eq!(catalog.tool_state("get_config"), Some(ToolState::Disabled));

    catalog
        .set_tool_state("get_config", ToolState::Enabled)
        .unwrap();
    assert_eq!(
        names(catalog.group_tools("config")),
        ["get_config", "set_config"]
    );
}

#[test]
fn a_group_with_every_tool_disabled_is_not_available() {
    let mut catalog = seeded();
    catalog
        .set_tool_state("pdf_info", ToolState::Disabled)
        .unwrap();
    let available: Vec<&str> = catalog.available_groups().map(|g| g.id.as_str()).collect();
    assert_eq!(available, ["config"]);
    assert_eq!(
        catalog.groups().count(),
        2,
        "the group itself is still registered"
    );
}

#[test]
fn unknown_tools_cannot_change_state() {
    let mut catalog = Catalog::new();
    assert_eq!(
        catalog
            .set_tool_state("nope", ToolState::Disabled)
            .unwrap_err(),
        CatalogError::UnknownTool("nope".into())
    );
}
