use pretty_assertions::assert_eq;

use crate::catalog::tests::{id, names, seeded, tool};
use crate::{Alias, Catalog, Origin, OwnTools, ToolName, ToolPolicy};

#[test]
fn a_restricted_view_has_only_what_the_policy_allows() {
    let mut catalog = seeded();
    catalog
        .register_alias("old_set", Alias::new(ToolName::new("set_config").unwrap()))
        .unwrap();
    let policy = ToolPolicy {
        deny_groups: ["pdf".to_owned()].into(),
        deny_tools: ["set_config".to_owned()].into(),
        ..ToolPolicy::default()
    };
    let view = catalog.restricted(&policy, |tool| Catalog::permitted(&policy, tool));
    assert_eq!(names(view.core_tools()), ["load_tool_group", "core_tool"]);
    assert_eq!(names(view.group_tools("config")), ["get_config"]);
    // A denied group is absent, not empty; a denied tool and its alias too.
    assert!(view.group("pdf").is_none());
    assert!(view.tool("pdf_info").is_none());
    assert!(view.resolve("set_config").is_none());
    assert!(view.resolve("old_set").is_none());
    let groups: Vec<&str> = view.available_groups().map(|g| g.id.as_str()).collect();
    assert_eq!(groups, ["config"]);
    assert_eq!(view.revision(), catalog.revision());
    assert_ne!(view.scope(), catalog.scope());
    // A group left with no tool is gone as well.
    let none = ToolPolicy {
        deny_tools: ["get_config".to_owned(), "set_config".to_owned()].into(),
        ..ToolPolicy::default()
    };
    let view = catalog.restricted(&none, |tool| Catalog::permitted(&none, tool));
    assert!(view.group("config").is_none());
    assert!(view.group("pdf").is_some());
}

#[test]
fn a_callers_own_tools_take_the_place_of_those_listed_in_their_group() {
    let catalog = seeded();
    let everything = ToolPolicy::default();
    let own = |tools: &[&str], scope: u64| OwnTools {
        group: id("pdf"),
        tools: tools
            .iter()
            .map(|name| (tool(name), Origin::Builtin))
            .collect(),
        scope,
    };
    let view = catalog.restricted_with(
        &everything,
        |tool| Catalog::permitted(&everything, tool),
        Some(own(&["pdf_merge", "get_config"], 1)),
    );
    // The listed pdf_info is another owner's; get_config is config's.
    assert_eq!(names(view.group_tools("pdf")), ["pdf_merge"]);
    assert!(view.tool("pdf_info").is_none());
    assert_eq!(view.group_of("get_config").unwrap().as_str(), "config");
    // With no tool of its own, the group stays: where they are written.
    let empty = catalog.restricted_with(
        &everything,
        |tool| Catalog::permitted(&everything, tool),
        Some(own(&[], 2)),
    );
    assert!(empty.group("pdf").is_some());
    assert_eq!(names(empty.group_tools("pdf")), Vec::<&str>::new());
    // Another caller's tools (or another revision of them) are another view.
    assert_ne!(view.scope(), empty.scope());
    assert_eq!(view.revision(), catalog.revision());
    // A policy that denies the group denies its own tools too.
    let no_pdf = ToolPolicy {
        deny_groups: ["pdf".to_owned()].into(),
        ..ToolPolicy::default()
    };
    let denied = catalog.restricted_with(
        &no_pdf,
        |tool| Catalog::permitted(&no_pdf, tool),
        Some(own(&["pdf_merge"], 1)),
    );
    assert!(denied.group("pdf").is_none() && denied.tool("pdf_merge").is_none());
}

#[test]
fn a_retired_tools_name_resolves_in_a_view_as_in_the_catalog() {
    // The group's tools become one tool; their names are aliases of it now.
    let mut catalog = seeded();
    catalog
        .replace_group_tools("pdf", vec![(tool("pdf"), Origin::Builtin)])
        .unwrap();
    catalog
        .register_alias("pdf_info", Alias::new(ToolName::new("pdf").unwrap()))
        .unwrap();
    assert_eq!(
        catalog
            .resolve("pdf_info")
            .map(|t| t.definition.name.as_str()),
        Some("pdf")
    );
    let policy = ToolPolicy {
        deny_tools: ["core_tool".to_owned()].into(),
        ..ToolPolicy::default()
    };
    let view = catalog.restricted(&policy, |tool| Catalog::permitted(&policy, tool));
    assert_eq!(
        view.resolve("pdf_info").map(|t| t.definition.name.as_str()),
        Some("pdf")
    );
    assert_eq!(names(view.group_tools("pdf")), ["pdf"]);
}
