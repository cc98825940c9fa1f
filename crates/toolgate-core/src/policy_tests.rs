use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn grouped<'a>(group: &'a str, tool: &'a str) -> PolicyTarget<'a> {
    PolicyTarget::tool(ToolKind::Grouped(group), tool)
}

#[test]
fn a_grouped_tool_passes_every_list_given() {
    let policy = ToolPolicy {
        allow_groups: Some(set(&["time", "files"])),
        deny_tools: set(&["files_write"]),
        ..ToolPolicy::default()
    };
    assert!(policy.permits(&grouped("time", "time_now")));
    assert!(policy.permits(&grouped("files", "files_read")));
    assert!(!policy.permits(&grouped("files", "files_write")));
    assert!(!policy.permits(&grouped("web", "web")));
    assert!(!policy.is_unrestricted());
    assert!(ToolPolicy::default().is_unrestricted());

    let only = ToolPolicy {
        allow_tools: Some(set(&["time_now"])),
        deny_groups: set(&["files"]),
        ..ToolPolicy::default()
    };
    assert!(only.permits(&grouped("time", "time_now")));
    assert!(!only.permits(&grouped("time", "time_convert")));
    assert!(!only.allows_group("files"));
}

#[test]
fn core_tools_obey_the_tool_lists_and_allow_groups_alone_leaves_them_out() {
    let js_eval = PolicyTarget::tool(ToolKind::Core, "js_eval");
    assert!(ToolPolicy::default().permits(&js_eval));
    let denied = ToolPolicy {
        deny_tools: set(&["js_eval"]),
        ..ToolPolicy::default()
    };
    assert!(!denied.permits(&js_eval));
    let only_time_now = ToolPolicy {
        allow_tools: Some(set(&["time_now"])),
        ..ToolPolicy::default()
    };
    assert!(!only_time_now.permits(&js_eval));
    let groups_only = ToolPolicy {
        allow_groups: Some(set(&["time"])),
        ..ToolPolicy::default()
    };
    assert!(!groups_only.permits(&js_eval));
    let named = ToolPolicy {
        allow_groups: Some(set(&["time"])),
        allow_tools: Some(set(&["js_eval", "time_now"])),
        ..ToolPolicy::default()
    };
    assert!(named.permits(&js_eval));
    // Group lists say nothing of a tool in no group.
    let no_files = ToolPolicy {
        deny_groups: set(&["files"]),
        ..ToolPolicy::default()
    };
    assert!(no_files.permits(&js_eval));
}

#[test]
fn meta_tools_pass_unless_named_in_deny_tools() {
    let load = PolicyTarget::tool(ToolKind::Meta, "load_tool_group");
    let strict = ToolPolicy {
        allow_groups: Some(set(&["time"])),
        allow_tools: Some(set(&["time_now"])),
        ..ToolPolicy::default()
    };
    assert!(strict.permits(&load));
    let no_call_tool = ToolPolicy {
        deny_tools: set(&["call_tool"]),
        ..ToolPolicy::default()
    };
    assert!(!no_call_tool.permits(&PolicyTarget::tool(ToolKind::Meta, "call_tool")));
    assert!(no_call_tool.permits(&load));
}

#[test]
fn an_action_is_judged_by_its_lists_and_by_the_name_of_the_tool_it_runs() {
    let fetch = grouped("web", "web").with_action("fetch", Some("web_fetch"));
    let search = grouped("web", "web").with_action("search", Some("web_search"));
    let no_fetch = ToolPolicy {
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::deny(["fetch"]))]),
        ..ToolPolicy::default()
    };
    assert!(no_fetch.permits(&search));
    assert!(!no_fetch.permits(&fetch));
    assert!(no_fetch.allows_action("github", "fetch"));
    let by_member = ToolPolicy {
        deny_tools: set(&["web_fetch"]),
        ..ToolPolicy::default()
    };
    assert!(!by_member.permits(&fetch));
    assert!(by_member.permits(&search));
    let only_search = ToolPolicy {
        allow_tools: Some(set(&["web_search"])),
        ..ToolPolicy::default()
    };
    assert!(only_search.permits(&search));
    assert!(!only_search.permits(&fetch));
    let whole_tool = ToolPolicy {
        allow_tools: Some(set(&["web"])),
        ..ToolPolicy::default()
    };
    assert!(whole_tool.permits(&fetch));
}

#[test]
fn the_names_a_policy_mentions_come_with_their_rule() {
    let policy = ToolPolicy {
        allow_groups: Some(set(&["time"])),
        deny_groups: set(&["files"]),
        allow_tools: Some(set(&["time_now"])),
        deny_tools: set(&["js_eval"]),
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::default())]),
    };
    assert_eq!(
        policy.group_names().collect::<Vec<_>>(),
        [("allow_groups", "time"), ("deny_groups", "files")]
    );
    assert_eq!(
        policy.tool_names().collect::<Vec<_>>(),
        [
            ("allow_tools", "time_now"),
            ("deny_tools", "js_eval"),
            ("allow_actions/deny_actions", "web")
        ]
    );
}
