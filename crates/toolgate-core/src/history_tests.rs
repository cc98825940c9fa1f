use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::group::ToolGroup;
use crate::name::ToolName;
use crate::origin::Origin;
use crate::tool::ToolDefinition;

fn catalog() -> Catalog {
    let mut catalog = Catalog::new();
    for (id, tools) in [
        ("google_gmail", &["gmail_search", "gmail_read"][..]),
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

/// RFC-044's unit test: successful loads are restored, failed ones are not.
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

/// Seed 003's edge-case table.
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
        Message::group_loaded_by_host(&pdf, "Router loaded pdf"),
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
        Message::group_unloaded_by_host(&GroupId::new("google_drive").unwrap(), "no-op"),
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
    Unload(&'static str),
    LoadMalformed,
    Compact,
}

fn operation() -> impl Strategy<Value = Operation> {
    let group = prop::sample::select(vec!["google_gmail", "google_drive", "pdf", "ghost", "  "]);
    prop_oneof![
        4 => group.clone().prop_map(Operation::Load),
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
