use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::active_set::GroupSelection;
use crate::group::ToolGroup;
use crate::meta_tool::group_name_argument;
use crate::name::ToolName;
use crate::origin::Origin;
use crate::tool::ToolDefinition;

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (id, tools) in [
        (
            "google_gmail",
            &["gmail_search", "gmail_read", "gmail_send"][..],
        ),
        ("google_drive", &["drive_list"][..]),
        ("pdf", &["pdf_info"][..]),
    ] {
        let group = ToolGroup::new(GroupId::new(id).unwrap(), id, "d");
        let tools = tools
            .iter()
            .map(|name| {
                let tool =
                    ToolDefinition::new(ToolName::new(*name).unwrap(), "d", json!({})).unwrap();
                (tool, Origin::Builtin)
            })
            .collect();
        catalog
            .register_group_with_tools(group, Origin::Builtin, tools)
            .unwrap();
    }
    catalog
}

fn load(id: &str, group: &str, status: ToolStatus) -> Message {
    Message::tool_call(
        id,
        "load_tool_group",
        json!({"group_name": group}).to_string(),
        status,
    )
}

fn loaded(restored: &Restored) -> Vec<&str> {
    restored
        .active
        .loaded_groups()
        .iter()
        .map(GroupId::as_str)
        .collect()
}

/// Successful loads are restored, failed ones are not.
#[test]
fn restores_groups_from_successful_load_calls_only() {
    let history = vec![
        Message::user("check email"),
        load("c1", "google_gmail", ToolStatus::Success),
        Message::tool_result(
            "c1",
            "load_tool_group",
            "Loaded 2 tools ...",
            ToolStatus::Success,
        ),
        Message::tool_call("c2", "gmail_search", "{}", ToolStatus::Success),
        load("c3", "google_drive", ToolStatus::Error),
    ];
    let restored = restore_active_set(&history, &catalog());
    assert_eq!(loaded(&restored), ["google_gmail"]);
    assert_eq!(restored.skipped, []);
}

/// The edge cases of a restore, one test each from here: first, a new conversation.
#[test]
fn a_new_conversation_restores_nothing() {
    let restored = restore_active_set(&[], &catalog());
    assert_eq!(restored, Restored::default());
}

#[test]
fn the_same_group_twice_loads_once() {
    let history = [
        load("a", "pdf", ToolStatus::Success),
        load("b", "pdf", ToolStatus::Success),
        load("c", "google_gmail", ToolStatus::Success),
        load("d", "pdf", ToolStatus::Success),
    ];
    let restored = restore_active_set(&history, &catalog());
    assert_eq!(loaded(&restored), ["pdf", "google_gmail"]);
}

#[test]
fn a_group_no_longer_in_the_catalog_is_skipped_and_reported() {
    let history = [
        load("a", "retired", ToolStatus::Success),
        load("b", "pdf", ToolStatus::Success),
    ];
    let restored = restore_active_set(&history, &catalog());
    assert_eq!(loaded(&restored), ["pdf"]);
    assert_eq!(
        restored.skipped,
        [SkippedEvent {
            index: 0,
            tool_call_id: Some("a".into()),
            reason: SkipReason::UnknownGroup("retired".into())
        }]
    );
}

#[test]
fn malformed_tool_input_is_skipped_never_fatal() {
    let bad_inputs = [
        "not json",
        "{\"group_name\": ",
        "[]",
        "{}",
        "{\"group_name\": 7}",
        "{\"group_name\": \"  \"}",
        "{\"group\": \"pdf\"}",
    ];
    let mut history: Vec<Message> = bad_inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            Message::tool_call(
                format!("m{i}"),
                "load_tool_group",
                *input,
                ToolStatus::Success,
            )
        })
        .collect();
    history.push(Message {
        tool_input: None,
        ..load("none", "pdf", ToolStatus::Success)
    });
    history.push(load("ok", "google_drive", ToolStatus::Success));
    let restored = restore_active_set(&history, &catalog());
    assert_eq!(loaded(&restored), ["google_drive"]);
    assert_eq!(restored.skipped.len(), bad_inputs.len() + 1);
    assert!(
        restored
            .skipped
            .iter()
            .all(|skip| skip.reason == SkipReason::MalformedInput)
    );
}

#[test]
fn pending_and_error_calls_are_not_events() {
    let history = [
        load("a", "pdf", ToolStatus::Pending),
        load("b", "google_drive", ToolStatus::Error),
    ];
    let restored = restore_active_set(&history, &catalog());
    assert!(restored.active.loaded_groups().is_empty());
    assert_eq!(restored.skipped, []);
}

#[test]
fn unloads_and_host_events_replay_in_order() {
    let catalog = catalog();
    let pdf = GroupId::new("pdf").unwrap();
    let history = [
        HostEvent::Loaded(pdf).message(None, "Router loaded pdf"),
        load("a", "google_gmail", ToolStatus::Success),
        Message::tool_call(
            "b",
            "unload_tool_group",
            r#"{"group_name":"pdf"}"#,
            ToolStatus::Success,
        ),
        Message::tool_call(
            "c",
            "unload_tool_group",
            r#"{"group_name":"google_gmail"}"#,
            ToolStatus::Error,
        ),
        load("d", "pdf", ToolStatus::Success),
        HostEvent::Unloaded(GroupId::new("google_drive").unwrap()).message(None, "no-op"),
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(loaded(&restored), ["google_gmail", "pdf"]);
}

#[test]
fn a_compaction_snapshot_replaces_the_state_so_compaction_loses_nothing() {
    let catalog = catalog();
    let mut live = ActiveToolSet::new();
    live.load(&catalog, "google_drive").unwrap();
    live.load(&catalog, "pdf").unwrap();
    // After compaction the old messages are gone: only the summary and what followed remain.
    let history = [
        Message::compaction("Summary of the first 40 messages", &live),
        load("x", "google_gmail", ToolStatus::Success),
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(loaded(&restored), ["google_drive", "pdf", "google_gmail"]);
}

#[test]
fn a_compaction_without_snapshot_keeps_state_and_a_broken_one_is_reported() {
    let catalog = catalog();
    let history = [
        load("a", "pdf", ToolStatus::Success),
        Message {
            kind: MessageKind::Compaction,
            ..Message::plain(MessageKind::Compaction, "old")
        },
        Message {
            tool_input: Some("{oops".into()),
            ..Message::plain(MessageKind::Compaction, "bad")
        },
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(loaded(&restored), ["pdf"]);
    assert_eq!(restored.skipped.len(), 1);
    assert_eq!(restored.skipped[0].index, 2);
}

#[test]
fn messages_round_trip_through_json() {
    let message = load("c1", "pdf", ToolStatus::Success);
    let text = serde_json::to_string(&message).unwrap();
    assert_eq!(
        text,
        r#"{"kind":"tool_call","content":"","tool_call_id":"c1","tool_name":"load_tool_group","tool_input":"{\"group_name\":\"pdf\"}","tool_status":"success"}"#
    );
    assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), message);
}

/// What the model (or a host) might do to a conversation's groups.
#[derive(Clone, Debug)]
enum Operation {
    Load(&'static str),
    /// A host's partial load.
    LoadTools(&'static str, Vec<&'static str>),
    Unload(&'static str),
    LoadMalformed,
    Compact,
}

fn operation() -> impl Strategy<Value = Operation> {
    let group = prop::sample::select(vec!["google_gmail", "google_drive", "pdf", "ghost", "  "]);
    let tools = prop::collection::vec(
        prop::sample::select(vec![
            "gmail_search",
            "gmail_read",
            "gmail_send",
            "pdf_info",
            "ghost",
        ]),
        0..4,
    );
    prop_oneof![
        4 => group.clone().prop_map(Operation::Load),
        3 => (group.clone(), tools).prop_map(|(group, tools)| Operation::LoadTools(group, tools)),
        2 => group.prop_map(Operation::Unload),
        1 => Just(Operation::LoadMalformed),
        1 => Just(Operation::Compact),
    ]
}

proptest! {
    /// Restoring from the stored history equals the live state after any
    /// sequence of loads, unloads, failed loads and compactions, in order.
    #[test]
    fn restoring_equals_the_live_state(operations in prop::collection::vec(operation(), 0..40)) {
        let catalog = catalog();
        let mut live = ActiveToolSet::new();
        let mut history = Vec::new();
        for (step, operation) in operations.into_iter().enumerate() {
            let id = format!("call-{step}");
            match operation {
                Operation::Load(group) => {
                    let arguments = json!({"group_name": group});
                    let status = match group_name_argument(&arguments).map(|name| live.load(&catalog, name)) {
                        Ok(Ok(_)) => ToolStatus::Success,
                        Ok(Err(_)) | Err(_) => ToolStatus::Error,
                    };
                    history.push(Message::tool_call(id, "load_tool_group", arguments.to_string(), status));
                }
                Operation::LoadTools(group, tools) => {
                    // The host records the change a load made, when it made one.
                    if let Some(event) = live.load_tools(&catalog, group, &tools).ok().and_then(|loaded| loaded.event()) {
                        history.push(event.message(Some(&id), "partial"));
                    }
                }
                Operation::Unload(group) => {
                    let status = match live.unload(&catalog, group) {
                        Ok(_) => ToolStatus::Success,
                        Err(_) => ToolStatus::Error,
                    };
                    let input = json!({"group_name": group}).to_string();
                    history.push(Message::tool_call(id, "unload_tool_group", input, status));
                }
                Operation::LoadMalformed => {
                    history.push(Message::tool_call(id, "load_tool_group", "{\"group_name\"", ToolStatus::Error));
                }
                Operation::Compact => history.push(Message::compaction("summary", &live)),
            }
            let restored = restore_active_set(&history, &catalog);
            prop_assert_eq!(&restored.active, &live);
            prop_assert_eq!(restored.active.definitions(&catalog), live.definitions(&catalog));
        }
    }
}

#[test]
fn stored_spellings_round_trip() {
    use MessageKind::*;
    for kind in [User, Assistant, ToolCall, ToolResult, System, Compaction] {
        assert_eq!(MessageKind::from_stored(kind.as_str()), Some(kind));
    }
    for status in [ToolStatus::Pending, ToolStatus::Success, ToolStatus::Error] {
        assert_eq!(ToolStatus::from_stored(status.as_str()), Some(status));
    }
    assert_eq!(MessageKind::from_stored("telepathy"), None);
    assert_eq!(ToolStatus::from_stored("SUCCESS"), None);
}

#[test]
fn a_load_of_a_renamed_group_restores_the_group_its_alias_leads_to() {
    let mut catalog = catalog();
    catalog
        .register_alias(
            "old_mail",
            crate::catalog::Alias::new(ToolName::new("gmail_search").unwrap()),
        )
        .unwrap();
    let history = [
        load("c1", "old_mail", ToolStatus::Success),
        load("c2", "nowhere", ToolStatus::Success),
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(loaded(&restored), ["google_gmail"]);
    assert_eq!(
        restored.skipped[0].reason,
        SkipReason::UnknownGroup("nowhere".to_owned())
    );
}

fn tools(names: &[&str]) -> Vec<ToolName> {
    names
        .iter()
        .map(|name| ToolName::new(*name).unwrap())
        .collect()
}

fn gmail() -> GroupId {
    GroupId::new("google_gmail").unwrap()
}

fn definition_names<'c>(active: &ActiveToolSet, catalog: &'c Catalog) -> Vec<&'c str> {
    active
        .definitions(catalog)
        .into_iter()
        .map(|tool| tool.name.as_str())
        .collect()
}

#[test]
fn a_partial_load_by_the_host_round_trips_through_its_stored_form() {
    let catalog = catalog();
    let selected = tools(&["gmail_send", "gmail_read"]);
    let mut live = ActiveToolSet::new();
    let text = live
        .load_tools(&catalog, "google_gmail", &selected)
        .unwrap()
        .to_string();
    let message = HostEvent::ToolsLoaded(gmail(), selected.clone()).message(None, text);
    let stored = serde_json::to_string(&message).unwrap();
    assert_eq!(
        stored,
        r#"{"kind":"system","content":"Loaded 2 of 3 tools from group 'google_gmail' (load_tool_group 'google_gmail' loads the other 1):\n- gmail_send: d\n- gmail_read: d","tool_name":"load_tool_group","tool_input":"{\"group_name\":\"google_gmail\",\"tools\":[\"gmail_send\",\"gmail_read\"]}","tool_status":"success"}"#
    );
    let read: Message = serde_json::from_str(&stored).unwrap();
    assert_eq!(read, message);
    let restored = restore_active_set(&[Message::user("mail"), read], &catalog);
    assert_eq!(restored.skipped, []);
    assert_eq!(restored.active, live);
    assert_eq!(
        definition_names(&restored.active, &catalog),
        ["load_tool_group", "gmail_send", "gmail_read"]
    );
}

#[test]
fn only_a_hosts_partial_load_with_text_is_read_by_the_model() {
    let partial =
        HostEvent::ToolsLoaded(gmail(), tools(&["gmail_send"])).message(None, "Loaded 1 of 3");
    assert!(HostEvent::is_read_by_model(&partial));
    assert!(!HostEvent::is_read_by_model(
        &HostEvent::Loaded(gmail()).message(None, "routed")
    ));
    let silent = HostEvent::ToolsLoaded(gmail(), tools(&["gmail_send"])).message(None, "");
    assert!(
        !HostEvent::is_read_by_model(&silent),
        "an event with no text"
    );
    let failed = Message {
        tool_status: Some(ToolStatus::Error),
        ..partial.clone()
    };
    assert!(!HostEvent::is_read_by_model(&failed));
    let by_the_model = Message {
        kind: MessageKind::ToolCall,
        ..partial
    };
    assert!(!HostEvent::is_read_by_model(&by_the_model));
    assert!(!HostEvent::is_read_by_model(&Message::system("Escalated")));
}

#[test]
fn a_whole_load_after_a_partial_one_restores_the_order_the_model_saw() {
    let catalog = catalog();
    let history = [
        HostEvent::ToolsLoaded(gmail(), tools(&["gmail_read"])).message(None, "partial"),
        load("a", "pdf", ToolStatus::Success),
        load("b", "google_gmail", ToolStatus::Success),
    ];
    let mut live = ActiveToolSet::new();
    live.load_tools(&catalog, "google_gmail", &tools(&["gmail_read"]))
        .unwrap();
    live.load(&catalog, "pdf").unwrap();
    live.load(&catalog, "google_gmail").unwrap();

    let restored = restore_active_set(&history, &catalog);
    assert_eq!(restored.active, live);
    assert_eq!(
        definition_names(&restored.active, &catalog),
        [
            "load_tool_group",
            "gmail_read",
            "pdf_info",
            "gmail_search",
            "gmail_send"
        ]
    );
    assert_eq!(loaded(&restored), ["google_gmail", "pdf"]);
}

#[test]
fn loads_stored_without_tools_restore_whole_groups() {
    let catalog = catalog();
    // A host's load as stored before partial loads existed.
    let old_host_event = Message {
        tool_name: Some("load_tool_group".into()),
        tool_input: Some(r#"{"group_name":"google_gmail"}"#.into()),
        tool_status: Some(ToolStatus::Success),
        ..Message::system("Routed (high tier, confidence 0.97): loaded group 'google_gmail'.")
    };
    let restored = restore_active_set(&[old_host_event], &catalog);
    assert_eq!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Whole)
    );

    let null_tools = Message {
        tool_input: Some(r#"{"group_name":"google_gmail","tools":null}"#.into()),
        ..HostEvent::Loaded(gmail()).message(None, "")
    };
    let restored = restore_active_set(&[null_tools], &catalog);
    assert_eq!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Whole)
    );

    // A model's load of named tools is read from the host's event naming
    // the call, never widened to the group; without one it restores nothing.
    let model_call = Message::tool_call(
        "c1",
        "load_tool_group",
        r#"{"group_name":"google_gmail","tools":["gmail_read"]}"#,
        ToolStatus::Success,
    );
    let restored = restore_active_set(std::slice::from_ref(&model_call), &catalog);
    assert_eq!(restored.active.selection("google_gmail"), None);
    let event = HostEvent::ToolsLoaded(gmail(), tools(&["gmail_read"])).message(Some("c1"), "");
    let restored = restore_active_set(&[model_call, event], &catalog);
    assert_eq!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Tools(
            tools(&["gmail_read"]).iter().collect()
        ))
    );
}

#[test]
fn a_host_load_whose_tools_are_not_a_list_of_names_is_skipped() {
    let catalog = catalog();
    let history: Vec<Message> = [
        r#"{"group_name":"google_gmail","tools":"gmail_read"}"#,
        r#"{"group_name":"google_gmail","tools":[3]}"#,
        r#"{"group_name":"google_gmail","tools":{"gmail_read":true}}"#,
    ]
    .into_iter()
    .map(|input| Message {
        tool_input: Some(input.into()),
        ..HostEvent::Loaded(gmail()).message(None, "")
    })
    .collect();
    let restored = restore_active_set(&history, &catalog);
    assert!(restored.active.loaded_groups().is_empty());
    assert_eq!(
        restored
            .skipped
            .iter()
            .map(|skip| (skip.index, skip.reason.clone()))
            .collect::<Vec<_>>(),
        [
            (0, SkipReason::MalformedInput),
            (1, SkipReason::MalformedInput),
            (2, SkipReason::MalformedInput)
        ]
    );
}

#[test]
fn a_compaction_snapshot_carries_partial_loads_in_order() {
    let catalog = catalog();
    let mut live = ActiveToolSet::new();
    live.load_tools(&catalog, "google_gmail", &tools(&["gmail_send"]))
        .unwrap();
    live.load(&catalog, "google_drive").unwrap();
    live.load(&catalog, "google_gmail").unwrap();
    live.load_tools(&catalog, "pdf", &tools(&["pdf_info"]))
        .unwrap();
    let compaction = Message::compaction("summary", &live);
    assert_eq!(
        compaction.tool_input.as_deref(),
        Some(
            r#"{"loaded_groups":[{"group_name":"google_gmail","tools":["gmail_send"]},"google_drive","google_gmail","pdf"]}"#
        ),
        "a selection covering its group is stored as the whole group"
    );

    let mut partly = ActiveToolSet::new();
    partly
        .load_tools(
            &catalog,
            "google_gmail",
            &tools(&["gmail_read", "gmail_send"]),
        )
        .unwrap();
    partly.load(&catalog, "pdf").unwrap();
    for live in [live, partly] {
        let history = [
            Message::compaction("summary", &live),
            load("x", "google_drive", ToolStatus::Success),
        ];
        let restored = restore_active_set(&history, &catalog);
        let mut expected = live.clone();
        expected.load(&catalog, "google_drive").unwrap();
        assert_eq!(restored.active, expected);
        assert_eq!(
            definition_names(&restored.active, &catalog),
            definition_names(&expected, &catalog)
        );
    }
}

#[test]
fn a_snapshot_stored_before_partial_loads_restores_whole_groups() {
    let catalog = catalog();
    let old = Message {
        tool_input: Some(r#"{"loaded_groups":["pdf","google_gmail","retired"]}"#.into()),
        ..Message::plain(MessageKind::Compaction, "summary")
    };
    let restored = restore_active_set(&[old], &catalog);
    assert_eq!(loaded(&restored), ["pdf", "google_gmail"]);
    assert_eq!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Whole)
    );
    assert_eq!(
        restored.skipped[0].reason,
        SkipReason::UnknownGroup("retired".into())
    );

    let unknown_partial = Message {
        tool_input: Some(r#"{"loaded_groups":[{"group_name":"retired","tools":["x"]}]}"#.into()),
        ..Message::plain(MessageKind::Compaction, "summary")
    };
    let restored = restore_active_set(&[unknown_partial], &catalog);
    assert!(restored.active.loaded_groups().is_empty());
    assert_eq!(
        restored.skipped[0].reason,
        SkipReason::UnknownGroup("retired".into())
    );
}

#[test]
fn a_partial_load_restores_exactly_its_tools_whatever_the_catalog_holds_now() {
    // A lazy source's group, not listed yet in the restarted process: no
    // tool of the load is known, and still the load stays partial.
    let mut lazy = Catalog::new();
    let group = ToolGroup::new(gmail(), "Mail", "d");
    lazy.register_deferred_group(group, Origin::Builtin)
        .unwrap();
    let event = HostEvent::ToolsLoaded(gmail(), tools(&["gmail_send", "gmail_read"]));
    let history = [event.message(None, "")];
    let restored = restore_active_set(&history, &lazy);
    assert_eq!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Tools(
            tools(&["gmail_send", "gmail_read"]).iter().collect()
        ))
    );
    // Listed later, the group shows the two tools loaded, not its third.
    assert_eq!(
        definition_names(&restored.active, &catalog()),
        ["load_tool_group", "gmail_send", "gmail_read"]
    );
    // Naming every tool of the group keeps it a partial load too: only a
    // load recorded whole restores whole.
    let all = HostEvent::ToolsLoaded(
        gmail(),
        tools(&["gmail_search", "gmail_read", "gmail_send"]),
    );
    let restored = restore_active_set(&[all.message(None, "")], &catalog());
    assert_ne!(
        restored.active.selection("google_gmail"),
        Some(GroupSelection::Whole)
    );
}

#[test]
fn a_models_call_whose_changes_the_host_recorded_replays_through_them() {
    let catalog = catalog();
    // One response: a search that loaded one tool of gmail, then a load of
    // the whole group. Both calls are stored before either runs; the host
    // records each change as it makes it, naming the call.
    let mut live = ActiveToolSet::new();
    let search = live
        .load_tools(&catalog, "google_gmail", &["gmail_send"])
        .unwrap()
        .event()
        .unwrap();
    let load_event = live
        .load(&catalog, "google_gmail")
        .unwrap()
        .event()
        .unwrap();
    let history = [
        Message::tool_call(
            "s",
            "find_tool_groups",
            r#"{"query":"mail"}"#,
            ToolStatus::Success,
        ),
        load("l", "google_gmail", ToolStatus::Success),
        search.message(Some("s"), ""),
        load_event.message(Some("l"), ""),
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(restored.active, live);
    assert_eq!(
        definition_names(&restored.active, &catalog),
        [
            "load_tool_group",
            "gmail_send",
            "gmail_search",
            "gmail_read"
        ],
        "the order the model saw, not the call's place"
    );
}

#[test]
fn a_gateways_loads_stored_as_calls_with_made_up_ids_still_restore() {
    // How gateways recorded a client's loads and the budget's unloads before
    // they recorded host events.
    let history = [
        Message::system("MCP session started"),
        load("mcp-1764380000000000001", "pdf", ToolStatus::Success),
        load(
            "mcp-1764380000000000002",
            "google_gmail",
            ToolStatus::Success,
        ),
        Message::tool_call(
            "mcp-1764380000000000003",
            "unload_tool_group",
            r#"{"group_name":"pdf"}"#,
            ToolStatus::Success,
        ),
    ];
    let restored = restore_active_set(&history, &catalog());
    assert_eq!(loaded(&restored), ["google_gmail"]);
    assert_eq!(restored.skipped, []);
}

#[test]
fn tools_the_budget_unloaded_restore_unloaded() {
    let catalog = catalog();
    let history = [
        HostEvent::ToolsLoaded(gmail(), tools(&["gmail_send", "gmail_read"])).message(None, ""),
        HostEvent::ToolsUnloaded(gmail(), tools(&["gmail_send"])).message(Some("c9"), ""),
    ];
    let restored = restore_active_set(&history, &catalog);
    assert_eq!(
        definition_names(&restored.active, &catalog),
        ["load_tool_group", "gmail_read"]
    );
    assert_eq!(
        HostEvent::read(&history[1]),
        Some(Ok(HostEvent::ToolsUnloaded(
            gmail(),
            tools(&["gmail_send"])
        )))
    );
}
