use pretty_assertions::assert_eq;
use serde_json::json;

use super::{BudgetPlan, GroupUse, Incoming, LoadBudget, Oversized, Unload, UnloadedForBudget};
use crate::active_set::ActiveToolSet;
use crate::catalog::Catalog;
use crate::group::ToolGroup;
use crate::history::{Message, ToolStatus};
use crate::host_event::HostEvent;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::tool::ToolDefinition;

/// Groups `a` to `d` of `tools` tools each; every tool costs 10 tokens.
fn catalog(groups: &[(&str, usize)]) -> Catalog {
    let mut catalog = Catalog::new();
    for (name, tools) in groups {
        let group = ToolGroup::new(GroupId::new(*name).unwrap(), *name, "test");
        let tools = (1..=*tools)
            .map(|n| {
                let tool = ToolName::new(format!("{name}_{n}")).unwrap();
                (
                    ToolDefinition::new(tool, "t", json!({})).unwrap(),
                    Origin::Builtin,
                )
            })
            .collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
}

fn tool(name: &str) -> ToolName {
    ToolName::new(name).unwrap()
}

fn ten(_: &ToolDefinition) -> usize {
    10
}

fn ids(names: &[&str]) -> Vec<GroupId> {
    names.iter().map(|n| GroupId::new(*n).unwrap()).collect()
}

/// Whole groups to unload.
fn groups(names: &[&str]) -> Vec<Unload> {
    ids(names).into_iter().map(Unload::Group).collect()
}

fn loaded(catalog: &Catalog, names: &[&str]) -> ActiveToolSet {
    let mut active = ActiveToolSet::new();
    for name in names {
        active.load(catalog, name).unwrap();
    }
    active
}

#[test]
fn without_a_bound_or_within_it_nothing_is_unloaded() {
    let catalog = catalog(&[("a", 2), ("b", 2), ("c", 2)]);
    let active = loaded(&catalog, &["a", "b"]);
    let usage = GroupUse::new();
    let plan = LoadBudget::Unlimited.plan(&active, (&catalog, &catalog), "c", &usage, &ten);
    assert!(plan.is_empty());
    let plan = LoadBudget::Tokens(60).plan(&active, (&catalog, &catalog), "c", &usage, &ten);
    assert!(plan.is_empty(), "{plan:?}");
    // Already loaded whole, or unknown: nothing changes.
    let plan = LoadBudget::Tokens(10).plan(&active, (&catalog, &catalog), "a", &usage, &ten);
    assert!(plan.is_empty());
    let plan = LoadBudget::Tokens(10).plan(&active, (&catalog, &catalog), "zzz", &usage, &ten);
    assert!(plan.is_empty());
}

#[test]
fn the_least_recently_called_go_first_never_called_before_called_ties_by_load_order() {
    let catalog = catalog(&[("a", 2), ("b", 2), ("c", 2), ("d", 2), ("e", 2)]);
    let active = loaded(&catalog, &["a", "b", "c", "d"]);
    let mut usage = GroupUse::new();
    // a called last, c before it; b and d never (b loaded before d).
    usage.record(&catalog, "c_1", None);
    usage.record(&catalog, "a_2", None);
    // Loaded again does not count as use: only calls do.
    let budget = LoadBudget::Tokens(60);
    let plan = budget.plan(&active, (&catalog, &catalog), "e", &usage, &ten);
    assert_eq!(plan.unload, groups(&["b", "d"]));
    let plan = LoadBudget::Tokens(40).plan(&active, (&catalog, &catalog), "e", &usage, &ten);
    assert_eq!(plan.unload, groups(&["b", "d", "c"]));
    // call_tool counts as the tool it names; a core or unknown tool as nothing.
    usage.record(&catalog, "call_tool", Some(&json!({"name": "b_1"})));
    usage.record(
        &catalog,
        "load_tool_group",
        Some(&json!({"group_name": "d"})),
    );
    let plan = budget.plan(&active, (&catalog, &catalog), "e", &usage, &ten);
    assert_eq!(plan.unload, groups(&["d", "c"]));
}

#[test]
fn usage_is_rebuilt_from_the_model_calls_in_history() {
    let catalog = catalog(&[("a", 1), ("b", 1), ("c", 1)]);
    let history = [
        Message::tool_call(
            "1",
            "load_tool_group",
            r#"{"group_name":"a"}"#,
            ToolStatus::Success,
        ),
        Message::tool_call(
            "2",
            "load_tool_group",
            r#"{"group_name":"b"}"#,
            ToolStatus::Success,
        ),
        Message::tool_call("3", "b_1", "{}", ToolStatus::Success),
        Message::tool_call("4", "a_1", "{}", ToolStatus::Error),
        Message::tool_call("5", "call_tool", r#"{"name":"b_1"}"#, ToolStatus::Success),
    ];
    let rebuilt = GroupUse::from_history(&history, &catalog);
    let mut live = GroupUse::new();
    live.record(&catalog, "b_1", None);
    live.record(&catalog, "a_1", None);
    live.record(&catalog, "call_tool", Some(&json!({"name": "b_1"})));
    assert_eq!(rebuilt, live);
    let active = loaded(&catalog, &["a", "b"]);
    let plan = LoadBudget::Tokens(20).plan(&active, (&catalog, &catalog), "c", &rebuilt, &ten);
    assert_eq!(plan.unload, groups(&["a"]));
}

#[test]
fn a_group_over_the_budget_alone_is_loaded_alone_and_the_answer_says_so() {
    let catalog = catalog(&[("a", 1), ("b", 2), ("big", 5)]);
    let active = loaded(&catalog, &["a", "b"]);
    let plan =
        LoadBudget::Tokens(40).plan(&active, (&catalog, &catalog), "big", &GroupUse::new(), &ten);
    assert_eq!(
        plan,
        BudgetPlan {
            budget: 40,
            unload: groups(&["a", "b"]),
            oversized: Some(Oversized {
                group: GroupId::new("big").unwrap(),
                tokens: 50,
                budget: 40,
            }),
        }
    );
    assert_eq!(
        UnloadedForBudget(&plan).to_string(),
        "Unloaded 'a', 'b' (least recently used first) to keep the loaded tools within their \
         budget of 40 tokens; load_tool_group loads a group again. Group 'big' alone has 50 \
         tokens of tools, over the budget of 40: it is the only group loaded."
    );
    let alone = ActiveToolSet::new();
    let plan =
        LoadBudget::Tokens(40).plan(&alone, (&catalog, &catalog), "big", &GroupUse::new(), &ten);
    assert_eq!(
        UnloadedForBudget(&plan).to_string(),
        "Group 'big' alone has 50 tokens of tools, over the budget of 40: it is the only group \
         loaded."
    );
}

#[test]
fn a_partly_loaded_group_counts_its_loaded_tools_and_loads_whole() {
    let catalog = catalog(&[("a", 4), ("b", 4)]);
    let mut active = ActiveToolSet::new();
    active.load_tools(&catalog, "a", &["a_1"]).unwrap();
    active.load_tools(&catalog, "b", &["b_1"]).unwrap();
    // b whole (40) with a's one tool (10) fits 50; not 49.
    let usage = GroupUse::new();
    assert!(
        LoadBudget::Tokens(50)
            .plan(&active, (&catalog, &catalog), "b", &usage, &ten)
            .is_empty()
    );
    let plan = LoadBudget::Tokens(49).plan(&active, (&catalog, &catalog), "b", &usage, &ten);
    // a is loaded in part: its tool goes, not a whole group.
    assert_eq!(
        plan.unload,
        [Unload::Tool(
            GroupId::new("a").unwrap(),
            ToolName::new("a_1").unwrap()
        )]
    );
    assert_eq!(
        UnloadedForBudget(&plan).to_string(),
        "Unloaded 'a_1' of 'a' (least recently used first) to keep the loaded tools within their \
         budget of 49 tokens; load_tool_group loads a group again."
    );
}

#[test]
fn a_group_the_callers_view_hides_still_counts_toward_the_budget() {
    let catalog = catalog(&[("a", 2), ("b", 2), ("c", 2)]);
    let active = loaded(&catalog, &["a", "b"]);
    // The caller's policy hides `a` now; a later policy may show it again.
    let policy = crate::policy::ToolPolicy {
        deny_groups: ["a".to_owned()].into(),
        ..crate::policy::ToolPolicy::default()
    };
    let view = catalog.restricted(&policy, |tool| Catalog::permitted(&policy, tool));
    assert!(view.group("a").is_none());
    let usage = GroupUse::new();
    let plan = LoadBudget::Tokens(40).plan(&active, (&view, &catalog), "c", &usage, &ten);
    assert_eq!(
        plan.unload,
        groups(&["a"]),
        "a's 20 tokens count although hidden"
    );
    // A group the caller cannot see is not loaded for it.
    let plan = LoadBudget::Tokens(10).plan(&active, (&view, &catalog), "a", &usage, &ten);
    assert!(plan.is_empty());
}

#[test]
fn a_use_is_recorded_only_when_it_changes_which_tool_was_used_last() {
    let catalog = catalog(&[("a", 2), ("b", 2), ("c", 2)]);
    let mut live = GroupUse::new();
    let a = GroupId::new("a").unwrap();
    let b = GroupId::new("b").unwrap();
    assert_eq!(
        live.record(&catalog, "a_1", None),
        Some(HostEvent::Used(a.clone(), tool("a_1")))
    );
    assert_eq!(
        live.record(&catalog, "a_1", None),
        None,
        "a_1 is the latest"
    );
    assert_eq!(
        live.record(&catalog, "b_1", None),
        Some(HostEvent::Used(b.clone(), tool("b_1")))
    );
    assert_eq!(
        live.record(&catalog, "a_2", None),
        Some(HostEvent::Used(a.clone(), tool("a_2")))
    );
    assert_eq!(live.record(&catalog, "nowhere", None), None);
    // A host that stores only the recorded uses rebuilds the same order.
    let history: Vec<Message> = [(a.clone(), "a_1"), (b, "b_1"), (a, "a_2")]
        .into_iter()
        .map(|(group, name)| HostEvent::Used(group, tool(name)).message(None, ""))
        .collect();
    let rebuilt = GroupUse::from_history(&history, &catalog);
    let active = loaded(&catalog, &["a", "b"]);
    let plan = |usage: &GroupUse| {
        LoadBudget::Tokens(40)
            .plan(&active, (&catalog, &catalog), "c", usage, &ten)
            .unload
    };
    assert_eq!(plan(&rebuilt), plan(&live));
    assert_eq!(plan(&live), groups(&["b"]));
}

#[test]
fn a_load_of_named_tools_counts_only_what_it_adds() {
    let catalog = catalog(&[("a", 2), ("b", 2), ("c", 3)]);
    let active = loaded(&catalog, &["a", "b"]);
    let usage = GroupUse::new();
    let one = ["c_1".to_owned()];
    let named = Incoming {
        group: "c",
        tools: Some(&one),
    };
    // 40 loaded and one tool of 10: within 50.
    let plan = LoadBudget::Tokens(50).plan(&active, (&catalog, &catalog), named, &usage, &ten);
    assert!(plan.is_empty(), "{plan:?}");
    // The whole group's 30 are not.
    let plan = LoadBudget::Tokens(50).plan(&active, (&catalog, &catalog), "c", &usage, &ten);
    assert_eq!(plan.unload, groups(&["a"]));
}

#[test]
fn a_group_loaded_in_part_gives_up_its_tools_one_by_one_least_recently_called_first() {
    let catalog = catalog(&[("a", 3), ("b", 2), ("c", 1)]);
    let mut active = ActiveToolSet::new();
    active.load_tools(&catalog, "a", &["a_1", "a_2"]).unwrap();
    active.load(&catalog, "b").unwrap();
    let mut usage = GroupUse::new();
    let _ = usage.record(&catalog, "b_1", None);
    let _ = usage.record(&catalog, "a_2", None);
    // 20 of a's, 20 of b's and c's 10 in 45: one tool of 10 goes, the one
    // never called, not the whole of b.
    let plan = LoadBudget::Tokens(45).plan(&active, (&catalog, &catalog), "c", &usage, &ten);
    assert_eq!(
        plan.unload,
        [Unload::Tool(ids(&["a"])[0].clone(), tool("a_1"))]
    );
    // In 25, b (called before a_2) goes too.
    let plan = LoadBudget::Tokens(25).plan(&active, (&catalog, &catalog), "c", &usage, &ten);
    assert_eq!(
        plan.unload,
        [
            Unload::Tool(ids(&["a"])[0].clone(), tool("a_1")),
            Unload::Group(ids(&["b"])[0].clone()),
        ]
    );
    // The unloads as the runtime applies them: a keeps a_2.
    active.apply(&HostEvent::ToolsUnloaded(
        ids(&["a"])[0].clone(),
        vec![tool("a_1")],
    ));
    assert_eq!(
        active.selection("a"),
        Some(crate::active_set::GroupSelection::Tools(vec![&tool("a_2")]))
    );
    active.apply(&HostEvent::ToolsUnloaded(
        ids(&["a"])[0].clone(),
        vec![tool("a_2")],
    ));
    assert!(!active.is_loaded("a"), "no tool left: the group goes");
}

/// After a search loaded the tools it listed, the budget unloads the least
/// recently used of everything else, tool by tool where a group is loaded
/// in part, and never the search's own tools, even past the budget.
#[test]
fn after_a_search_the_least_recently_used_go_and_its_own_tools_stay() {
    let catalog = catalog(&[("a", 2), ("b", 3), ("c", 2)]);
    // a whole (20), b_1 (10), then the search's b_2 and c_1 (20): 50.
    let mut active = loaded(&catalog, &["a"]);
    active.load_tools(&catalog, "b", &["b_1"]).unwrap();
    active.load_tools(&catalog, "b", &["b_2"]).unwrap();
    active.load_tools(&catalog, "c", &["c_1"]).unwrap();
    let kept = vec![
        (GroupId::new("b").unwrap(), vec![tool("b_2")]),
        (GroupId::new("c").unwrap(), vec![tool("c_1")]),
    ];
    let mut usage = GroupUse::new();
    usage.record(&catalog, "a_1", None);
    let trim = |budget, usage: &GroupUse| {
        LoadBudget::Tokens(budget).trim(&active, (&catalog, &catalog), &kept, usage, &ten)
    };
    assert!(trim(50, &usage).is_empty());
    assert!(
        LoadBudget::Unlimited
            .trim(&active, (&catalog, &catalog), &kept, &usage, &ten)
            .is_empty()
    );
    // b_1 was never called, a was: b_1 goes first.
    assert_eq!(
        trim(40, &usage).unload,
        [Unload::Tool(GroupId::new("b").unwrap(), tool("b_1"))]
    );
    assert_eq!(
        trim(30, &usage).unload,
        [
            Unload::Tool(GroupId::new("b").unwrap(), tool("b_1")),
            Unload::Group(GroupId::new("a").unwrap())
        ]
    );
    // The search's tools alone pass the budget: everything else goes, they
    // stay.
    let plan = trim(10, &usage);
    assert_eq!(plan.unload.len(), 2, "{plan:?}");
    assert_eq!(plan.oversized, None);
}
