use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::meta_tool::MetaTool;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::policy::ToolPolicy;
use crate::prompt::{tool_groups_section, tool_groups_section_as};
use crate::tool::ToolDefinition;

/// `groups` groups of `tools` tools each, every schema about `schema_chars`
/// characters, every group described in about 60 characters.
fn catalog(groups: usize, tools: usize, schema_chars: usize) -> Catalog {
    let mut catalog = Catalog::new();
    for g in 0..groups {
        let id = format!("group_{g:03}");
        let group = ToolGroup::new(
            GroupId::new(&id).unwrap(),
            &id,
            "Reads, writes and searches the records of one small service",
        );
        let members = (0..tools)
            .map(|t| {
                let schema = json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "x".repeat(schema_chars)}},
                });
                let tool = ToolDefinition::new(
                    ToolName::new(format!("{id}_tool_{t}")).unwrap(),
                    "Does one thing",
                    schema,
                )
                .unwrap();
                (tool, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, members)
            .unwrap();
    }
    catalog
}

#[test]
fn groups_of_many_tools_keep_one_line_each() {
    // 200 groups of 10 tools: the lines are a few percent of the schemas.
    let many = catalog(200, 10, 200);
    let small = catalog(12, 10, 200);
    let catalog = many;
    let weight = ListingWeight::of(&catalog);
    assert!(weight.lines > MIN_SHRUNK_CHARS, "{weight:?}");
    assert!(
        (weight.lines as f64) < 0.05 * weight.schemas as f64,
        "{weight:?}"
    );
    assert_eq!(
        ListingForm::fitting(&catalog, GroupSearch::NotOffered),
        ListingForm::Lines
    );
    // Where the search is offered it ranks the tools themselves: lines
    // past some 1,000 tokens would only ride on every call.
    assert_eq!(
        ListingForm::fitting(&catalog, GroupSearch::Offered),
        ListingForm::Search
    );
    assert!(ListingWeight::of(&small).lines < MIN_SHRUNK_CHARS);
    assert_eq!(
        ListingForm::fitting(&small, GroupSearch::Offered),
        ListingForm::Lines
    );
}

#[test]
fn many_one_tool_groups_shrink_to_the_search_or_the_names() {
    // 200 one-tool groups with short schemas: the lines weigh about as much
    // as the schemas themselves.
    let catalog = catalog(200, 1, 40);
    let weight = ListingWeight::of(&catalog);
    assert!(
        (weight.lines as f64) > 0.5 * weight.schemas as f64,
        "{weight:?}"
    );
    assert_eq!(
        ListingForm::fitting(&catalog, GroupSearch::Offered),
        ListingForm::Search
    );
    assert_eq!(
        ListingForm::fitting(&catalog, GroupSearch::NotOffered),
        ListingForm::Names
    );
    assert_eq!(
        tool_groups_section(&catalog),
        tool_groups_section_as(&catalog, ListingForm::Names)
    );
}

#[test]
fn a_catalog_that_holds_the_search_lists_in_the_search_form() {
    let mut catalog = catalog(200, 1, 40);
    assert_eq!(GroupSearch::of(&catalog), GroupSearch::NotOffered);
    catalog
        .register_tool(
            MetaTool::FindToolGroups.definition(),
            None,
            Origin::MetaTool,
        )
        .unwrap();
    assert_eq!(GroupSearch::of(&catalog), GroupSearch::Offered);
    assert_eq!(ListingForm::of(&catalog), ListingForm::Search);
    assert_eq!(
        tool_groups_section(&catalog),
        tool_groups_section_as(&catalog, ListingForm::Search)
    );
    // A caller whose policy denies the search is listed the names.
    let policy = ToolPolicy {
        deny_tools: ["find_tool_groups".to_owned()].into(),
        ..ToolPolicy::default()
    };
    let view = catalog.restricted(&policy, |tool| Catalog::permitted(&policy, tool));
    assert_eq!(ListingForm::of(&view), ListingForm::Names);
}

#[test]
fn a_short_listing_never_shrinks_however_light_the_schemas() {
    // Five one-tool groups: the lines outweigh the schemas, but cost little.
    let catalog = catalog(5, 1, 0);
    let weight = ListingWeight::of(&catalog);
    assert!(weight.lines > weight.schemas / 2, "{weight:?}");
    assert!(weight.lines < MIN_SHRUNK_CHARS);
    assert_eq!(
        ListingForm::fitting(&catalog, GroupSearch::Offered),
        ListingForm::Lines
    );
}

#[test]
fn the_names_and_search_forms_have_the_exact_contract_format() {
    let mut catalog = catalog(2, 1, 0);
    let big = ToolGroup::new(GroupId::new("big").unwrap(), "Big", "Many tools");
    let tools = (0..3)
        .map(|t| {
            let tool =
                ToolDefinition::new(ToolName::new(format!("big_{t}")).unwrap(), "d", json!({}))
                    .unwrap();
            (tool, Origin::Builtin)
        })
        .collect();
    catalog
        .register_group_with_tools(big, Origin::Builtin, tools)
        .unwrap();
    assert_eq!(
        tool_groups_section_as(&catalog, ListingForm::Names).unwrap(),
        "## Available Tool Groups\n\n\
         Use `load_tool_group` to load tools from a group before using them: the tools you \
         name, or the whole group.\n\n\
         Groups: group_000, group_001, big"
    );
    assert_eq!(
        tool_groups_section_as(&catalog, ListingForm::Search).unwrap(),
        "## Available Tool Groups\n\n\
         3 groups hold 5 tools, too many to list here. Use `find_tool_groups` with what you \
         need to find the groups and tools for it, then `load_tool_group` to load the tools you \
         name (or a whole group) before using them.\n\n\
         The largest: big, group_000, group_001"
    );
}

#[test]
fn the_search_form_names_the_ten_largest_then_an_ellipsis() {
    let catalog = catalog(12, 1, 0);
    let section = tool_groups_section_as(&catalog, ListingForm::Search).unwrap();
    assert!(
        section.ends_with(
            "The largest: group_000, group_001, group_002, group_003, group_004, \
             group_005, group_006, group_007, group_008, group_009, …"
        ),
        "{section}"
    );
}

#[test]
fn forms_round_trip_through_their_setting_names() {
    for form in ListingForm::ALL {
        assert_eq!(ListingForm::from_setting(form.as_str()), Some(form));
    }
    assert_eq!(ListingForm::from_setting("lists"), None);
}
