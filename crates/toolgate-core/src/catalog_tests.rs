use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

pub(super) fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} does things"),
        json!({}),
    )
    .unwrap()
}

pub(super) fn group(id: &str) -> ToolGroup {
    ToolGroup::new(
        GroupId::new(id).unwrap(),
        id.to_uppercase(),
        format!("{id} tools"),
    )
}

pub(super) fn id(text: &str) -> GroupId {
    GroupId::new(text).unwrap()
}

pub(super) fn manifest(path: &str) -> Origin {
    Origin::Manifest {
        path: path.into(),
        function: None,
    }
}

pub(super) fn names<'a>(tools: impl Iterator<Item = &'a ToolDefinition>) -> Vec<&'a str> {
    tools.map(|tool| tool.name.as_str()).collect()
}

/// core_tool + config(2) + pdf(1).
pub(super) fn seeded() -> Catalog {
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

fn upstream(server: &str) -> Origin {
    Origin::Upstream {
        server: server.into(),
    }
}

#[test]
fn a_deferred_group_is_offered_before_its_tools_are_listed() {
    let mut catalog = Catalog::new();
    catalog
        .register_deferred_group(group("git"), upstream("git"))
        .unwrap();
    let offered: Vec<_> = catalog.available_groups().map(|g| g.id.as_str()).collect();
    assert_eq!(offered, ["git"]);
    assert_eq!(catalog.group_listing("git"), Some(GroupListing::Deferred));
    assert_eq!(catalog.group_tools("git").count(), 0);

    let tools = vec![(tool("git_status"), upstream("git"))];
    catalog.replace_group_tools("git", tools).unwrap();
    assert_eq!(catalog.group_listing("git"), Some(GroupListing::Listed));
    assert_eq!(names(catalog.group_tools("git")), ["git_status"]);
}

#[test]
fn replacing_a_groups_tools_retires_the_old_ones_everywhere() {
    let mut catalog = Catalog::new();
    catalog
        .register_group_with_tools(
            group("git"),
            upstream("git"),
            vec![
                (tool("git_status"), upstream("git")),
                (tool("git_log"), upstream("git")),
            ],
        )
        .unwrap();
    let tools = vec![
        (tool("git_log"), upstream("git")),
        (tool("git_diff"), upstream("git")),
    ];
    catalog.replace_group_tools("git", tools).unwrap();

    assert_eq!(names(catalog.group_tools("git")), ["git_log", "git_diff"]);
    assert!(catalog.tool("git_status").is_none());
    assert_eq!(catalog.tool_state("git_status"), None);
    let all: Vec<_> = catalog
        .tools()
        .map(|t| t.definition.name.as_str())
        .collect();
    assert_eq!(all, ["load_tool_group", "git_log", "git_diff"]);
    // The retired name is free again.
    catalog
        .register_tool(tool("git_status"), None, Origin::Builtin)
        .unwrap();
}

#[test]
fn a_removed_group_leaves_no_trace_and_its_names_are_free_again() {
    let mut catalog = Catalog::new();
    for id in ["git", "web", "files"] {
        let tools = vec![(tool(&format!("{id}_status")), upstream(id))];
        catalog
            .register_group_with_tools(group(id), upstream(id), tools)
            .unwrap();
    }
    let before = catalog.revision();
    catalog.remove_group("web").unwrap();

    assert_ne!(catalog.revision(), before);
    assert!(catalog.group("web").is_none());
    assert!(catalog.tool("web_status").is_none());
    let groups: Vec<_> = catalog.groups().map(|g| g.id.as_str()).collect();
    assert_eq!(groups, ["git", "files"]);
    // The groups after it are still found by id.
    assert_eq!(names(catalog.group_tools("files")), ["files_status"]);
    assert_eq!(names(catalog.group_tools("web")), Vec::<&str>::new());
    assert!(matches!(
        catalog.remove_group("web"),
        Err(CatalogError::UnknownGroupId(_))
    ));
    // The id and the tool name can be registered again.
    catalog
        .register_group_with_tools(
            group("web"),
            upstream("web"),
            vec![(tool("web_status"), upstream("web"))],
        )
        .unwrap();
    assert_eq!(names(catalog.group_tools("web")), ["web_status"]);
    let all: Vec<_> = catalog
        .tools()
        .map(|t| t.definition.name.as_str())
        .collect();
    assert_eq!(
        all,
        [
            "load_tool_group",
            "git_status",
            "files_status",
            "web_status"
        ]
    );
}

#[test]
fn a_deferred_again_group_is_offered_without_tools() {
    let mut catalog = Catalog::new();
    catalog
        .register_group_with_tools(
            group("git"),
            upstream("git"),
            vec![(tool("git_status"), upstream("git"))],
        )
        .unwrap();
    catalog.defer_group("git").unwrap();
    assert_eq!(catalog.group_listing("git"), Some(GroupListing::Deferred));
    assert_eq!(names(catalog.group_tools("git")), Vec::<&str>::new());
    assert!(catalog.tool("git_status").is_none());
    let offered: Vec<_> = catalog.available_groups().map(|g| g.id.as_str()).collect();
    assert_eq!(offered, ["git"]);
}

#[test]
fn replacing_a_groups_tools_is_all_or_nothing() {
    let mut catalog = Catalog::new();
    catalog
        .register_tool(tool("echo"), None, Origin::Builtin)
        .unwrap();
    catalog
        .register_deferred_group(group("everything"), upstream("everything"))
        .unwrap();
    let tools = vec![
        (tool("add"), upstream("everything")),
        (tool("echo"), upstream("everything")),
    ];
    let error = catalog
        .replace_group_tools("everything", tools)
        .unwrap_err();
    assert!(
        matches!(error, CatalogError::DuplicateTool { .. }),
        "{error}"
    );
    assert_eq!(catalog.group_tools("everything").count(), 0);
    assert_eq!(
        catalog.group_listing("everything"),
        Some(GroupListing::Deferred)
    );
    assert!(catalog.tool("add").is_none());

    let error = catalog.replace_group_tools("nope", Vec::new()).unwrap_err();
    assert_eq!(error, CatalogError::UnknownGroupId("nope".into()));
}

#[test]
fn a_group_description_can_be_replaced() {
    let mut catalog = Catalog::new();
    catalog
        .register_deferred_group(group("git"), upstream("git"))
        .unwrap();
    catalog
        .set_group_description("git", "Inspect git repositories")
        .unwrap();
    assert_eq!(
        catalog.group("git").unwrap().description,
        "Inspect git repositories"
    );
}

#[test]
fn an_alias_resolves_to_its_tool_and_adds_action_and_fixed_arguments() {
    let mut catalog = seeded();
    let alias = Alias {
        tool: ToolName::new("pdf_info").unwrap(),
        action: Some("view".to_owned()),
        arguments: json!({"prompt_type": "system"})
            .as_object()
            .cloned()
            .unwrap(),
    };
    catalog
        .register_alias("old_pdf_info", alias.clone())
        .unwrap();
    assert_eq!(catalog.alias("old_pdf_info"), Some(&alias));
    assert_eq!(
        catalog
            .resolve("old_pdf_info")
            .unwrap()
            .definition
            .name
            .as_str(),
        "pdf_info"
    );
    assert_eq!(
        alias.arguments(json!({"prompt_type": "name", "x": 1})),
        json!({"action": "view", "prompt_type": "system", "x": 1})
    );
    assert_eq!(
        catalog.aliases().map(|(name, _)| name).collect::<Vec<_>>(),
        ["old_pdf_info"]
    );
}

#[test]
fn an_alias_cannot_take_a_tool_name_and_a_later_tool_wins_over_one() {
    let mut catalog = seeded();
    let alias = Alias::new(ToolName::new("pdf_info").unwrap());
    let error = catalog
        .register_alias("core_tool", alias.clone())
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("alias `core_tool` is the name of a tool"),
        "{error}"
    );
    catalog.register_alias("fresh", alias).unwrap();
    catalog
        .register_tool(tool("fresh"), None, Origin::Builtin)
        .unwrap();
    assert_eq!(catalog.alias("fresh"), None);
    assert_eq!(
        catalog.resolve("fresh").unwrap().definition.name.as_str(),
        "fresh"
    );
}

#[test]
fn a_core_tool_is_replaced_in_its_place_and_removed_for_good() {
    let mut catalog = Catalog::new();
    catalog
        .register_tool(tool("one"), None, manifest("one.json"))
        .unwrap();
    catalog
        .register_tool(tool("two"), None, manifest("two.json"))
        .unwrap();
    catalog
        .replace_core_tool("one", tool("uno"), manifest("one.json"))
        .unwrap();
    assert_eq!(
        names(catalog.core_tools()),
        ["load_tool_group", "uno", "two"]
    );
    assert!(catalog.tool("one").is_none());
    // A taken name changes nothing.
    assert!(matches!(
        catalog.replace_core_tool("uno", tool("two"), manifest("one.json")),
        Err(CatalogError::DuplicateTool { .. })
    ));
    assert_eq!(
        names(catalog.core_tools()),
        ["load_tool_group", "uno", "two"]
    );

    catalog.remove_tool("uno").unwrap();
    assert_eq!(names(catalog.core_tools()), ["load_tool_group", "two"]);
    // Its name is free again.
    catalog
        .register_tool(tool("uno"), None, manifest("one.json"))
        .unwrap();
    assert_eq!(
        names(catalog.core_tools()),
        ["load_tool_group", "two", "uno"]
    );
}

#[test]
fn a_group_takes_a_new_description_and_keeps_its_tools() {
    let mut catalog = seeded();
    let mut renamed = group("pdf");
    renamed.description = "Read and split PDF files".to_owned();
    catalog.update_group(renamed.clone()).unwrap();
    assert_eq!(catalog.group("pdf"), Some(&renamed));
    assert_eq!(catalog.group_tools("pdf").count(), 1);
    assert!(matches!(
        catalog.update_group(group("nope")),
        Err(CatalogError::UnknownGroupId(_))
    ));
}

#[test]
fn an_alias_may_not_set_the_action_in_its_fixed_arguments() {
    let mut catalog = seeded();
    let mut sneaky = Alias::new(ToolName::new("get_config").unwrap()).with_action("read");
    sneaky
        .arguments
        .insert(ACTION_PARAMETER.to_owned(), json!("write"));
    assert_eq!(
        catalog
            .register_alias("sneaky", sneaky)
            .unwrap_err()
            .to_string(),
        "alias `sneaky` sets `action` in its fixed arguments; name the action as the alias's own"
    );
    assert!(catalog.alias("sneaky").is_none());
}
