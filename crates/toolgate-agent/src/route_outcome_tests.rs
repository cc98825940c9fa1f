use serde_json::json;
use toolgate_core::routing::{Decision, IdFinder, Tier, Visible};
use toolgate_core::{Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};

use super::RouteOutcome;

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (group, tools) in [
        ("mail", ["mail_send", "mail_search"]),
        ("calendar", ["calendar_add", "calendar_list"]),
    ] {
        let tools = tools
            .into_iter()
            .map(|name| {
                let definition = ToolDefinition::new(
                    ToolName::new(name).unwrap(),
                    name,
                    json!({"type": "object"}),
                )
                .unwrap();
                (definition, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(
                ToolGroup::new(GroupId::new(group).unwrap(), group, group),
                Origin::Builtin,
                tools,
            )
            .unwrap();
    }
    catalog
}

/// A decision that routed `mail` and showed the `learned` groups beside
/// it, fitted at 0.9 (stated 0.7).
fn routed_to_mail_learning(learned: &[&str]) -> RouteOutcome {
    routed_to_mail_beside(learned, &[])
}

/// The same, with the `finders` (group, tool) shown for `mail_send`.
fn routed_to_mail_beside(learned: &[&str], finders: &[(&str, &str)]) -> RouteOutcome {
    let mail = GroupId::new("mail").unwrap();
    let learned: Vec<GroupId> = learned.iter().map(|g| GroupId::new(*g).unwrap()).collect();
    let finders: Vec<IdFinder> = finders
        .iter()
        .map(|(group, tool)| IdFinder {
            group: GroupId::new(*group).unwrap(),
            tool: ToolName::new(*tool).unwrap(),
            needed_by: ToolName::new("mail_send").unwrap(),
        })
        .collect();
    let mut visible = vec![mail.clone()];
    visible.extend(learned.iter().cloned());
    visible.extend(finders.iter().map(|f| f.group.clone()));
    RouteOutcome::new(&Decision {
        intent: None,
        confidence: 0.7,
        fitted_confidence: 0.9,
        tier: Tier::Medium,
        routed: vec![mail],
        learned,
        visible: Visible::Groups(visible),
        ranked: Vec::new(),
        partial: Vec::new(),
        passed_over: Vec::new(),
        finders,
    })
}

/// A decision that routed `mail` alone.
fn routed_to_mail() -> RouteOutcome {
    routed_to_mail_learning(&[])
}

#[test]
fn a_learned_group_that_was_used_held_and_is_still_a_miss_of_the_ranking() {
    let catalog = catalog();
    let mut outcome = routed_to_mail_learning(&["calendar"]);
    outcome.observe(&catalog, "mail_send", "{}");
    outcome.observe(&catalog, "calendar_list", "{}");
    let label = outcome.label().unwrap();
    assert!(label.held, "the groups relied on held it");
    assert_eq!(label.missed, [GroupId::new("calendar").unwrap()]);
}

#[test]
fn an_id_finder_that_was_used_held_and_is_still_a_miss_of_the_ranking() {
    let catalog = catalog();
    let mut outcome = routed_to_mail_beside(&[], &[("calendar", "calendar_list")]);
    outcome.observe(&catalog, "calendar_list", "{}");
    outcome.observe(&catalog, "mail_send", "{}");
    let label = outcome.label().unwrap();
    assert!(label.held, "the finder's group was relied on");
    assert_eq!(label.missed, [GroupId::new("calendar").unwrap()]);
}

#[test]
fn calls_inside_the_routed_groups_held_and_are_labelled_at_the_fitted_confidence() {
    let catalog = catalog();
    let mut outcome = routed_to_mail();
    outcome.observe(&catalog, "mail_search", r#"{"q": "Anna"}"#);
    outcome.observe(&catalog, "mail_send", "{}");
    let label = outcome.label().unwrap();
    assert_eq!((label.fitted_confidence, label.held), (0.9, true));
    assert_eq!(label.missed, []);
}

#[test]
fn a_tool_or_a_load_outside_the_routed_groups_is_a_miss() {
    let catalog = catalog();
    let mut used = routed_to_mail();
    used.observe(&catalog, "mail_search", "{}");
    used.observe(&catalog, "calendar_list", "{}");
    used.observe(&catalog, "calendar_add", "{}");
    let calendar = GroupId::new("calendar").unwrap();
    let missed = |outcome: &RouteOutcome| {
        let label = outcome.label().unwrap();
        assert_eq!((label.fitted_confidence, label.held), (0.9, false));
        label.missed
    };
    assert_eq!(
        missed(&used),
        std::slice::from_ref(&calendar),
        "each group once"
    );
    let mut loaded = routed_to_mail();
    loaded.observe(&catalog, "load_tool_group", r#"{"group_name": "calendar"}"#);
    assert_eq!(missed(&loaded), std::slice::from_ref(&calendar));
    let mut called = routed_to_mail();
    called.observe(&catalog, "call_tool", r#"{"name": "calendar_add"}"#);
    assert_eq!(missed(&called), [calendar]);
}

#[test]
fn a_turn_that_used_no_grouped_tool_says_nothing() {
    let catalog = catalog();
    let mut outcome = routed_to_mail();
    assert_eq!(outcome.label(), None);
    // Unknown tools and groups, core tools and bad arguments are no evidence.
    outcome.observe(&catalog, "no_such_tool", "{}");
    outcome.observe(&catalog, "load_tool_group", r#"{"group_name": "nowhere"}"#);
    outcome.observe(&catalog, "load_tool_group", "not json");
    outcome.observe(&catalog, "find_tool_groups", r#"{"query": "calendar"}"#);
    assert_eq!(outcome.label(), None);
}
