use pretty_assertions::assert_eq;
use toolgate_core::{Message, ToolStatus};
use toolgate_llm::{ChatMessage, ToolCall};

use super::{INTERRUPTED_RESULT, chat_messages, chat_messages_with, unanswered_calls};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

fn result(id: &str, name: &str, content: &str, is_error: bool) -> ChatMessage {
    ChatMessage::ToolResult {
        call_id: id.to_owned(),
        name: name.to_owned(),
        content: content.to_owned(),
        is_error,
        next_call: None,
    }
}

#[test]
fn assistant_text_and_its_calls_form_one_message_followed_by_results_in_call_order() {
    let history = [
        Message::user("what time is it in Paris and Tokyo?"),
        Message::assistant("Let me check."),
        Message::tool_call(
            "a",
            "time_now",
            r#"{"timezone":"Europe/Paris"}"#,
            ToolStatus::Success,
        ),
        Message::tool_call(
            "b",
            "time_now",
            r#"{"timezone":"Asia/Tokyo"}"#,
            ToolStatus::Error,
        ),
        // Results are stored as they finish: b first.
        Message::tool_result("b", "time_now", "unknown zone", ToolStatus::Error),
        Message::tool_result("a", "time_now", "10:00", ToolStatus::Success),
        Message::assistant("Paris: 10:00."),
    ];
    assert_eq!(
        chat_messages(&history),
        vec![
            ChatMessage::User("what time is it in Paris and Tokyo?".to_owned()),
            ChatMessage::Assistant {
                text: "Let me check.".to_owned(),
                tool_calls: vec![
                    call("a", "time_now", r#"{"timezone":"Europe/Paris"}"#),
                    call("b", "time_now", r#"{"timezone":"Asia/Tokyo"}"#),
                ],
            },
            result("a", "time_now", "10:00", false),
            result("b", "time_now", "unknown zone", true),
            ChatMessage::Assistant {
                text: "Paris: 10:00.".to_owned(),
                tool_calls: vec![],
            },
        ]
    );
}

#[test]
fn calls_without_text_or_result_still_make_a_valid_transcript() {
    let history = [
        Message::user("load the files tools"),
        Message::tool_call("c1", "load_tool_group", "", ToolStatus::Pending),
        Message::system("host note, never sent"),
        Message::tool_result("orphan", "x", "no call", ToolStatus::Success),
    ];
    assert_eq!(
        chat_messages(&history),
        vec![
            ChatMessage::User("load the files tools".to_owned()),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call("c1", "load_tool_group", "{}")],
            },
            result("c1", "load_tool_group", INTERRUPTED_RESULT, true),
        ]
    );
    let unanswered: Vec<_> = unanswered_calls(&history)
        .into_iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    assert_eq!(unanswered, vec!["c1".to_owned()]);
}

#[test]
fn an_empty_assistant_message_is_not_sent() {
    let history = [Message::user("hi"), Message::assistant("")];
    assert_eq!(
        chat_messages(&history),
        vec![ChatMessage::User("hi".to_owned())]
    );
}

#[test]
fn a_routed_partial_load_is_read_by_the_model_and_other_host_events_are_not() {
    use toolgate_core::{GroupId, HostEvent, ToolName};
    let gmail = GroupId::new("gmail").unwrap();
    let partial_text = "Loaded 1 of 3 tools from group 'Gmail' (load_tool_group 'gmail' loads the other 2):\n- gmail_send: Send an email";
    let history = [
        Message::user("email Bob"),
        HostEvent::ToolsLoaded(gmail.clone(), vec![ToolName::new("gmail_send").unwrap()])
            .message(None, partial_text),
        HostEvent::Loaded(GroupId::new("pdf").unwrap())
            .message(None, "Routed: loaded group 'pdf'."),
        // A change a meta-tool call made: its result told the model.
        HostEvent::ToolsLoaded(gmail, vec![ToolName::new("gmail_read").unwrap()])
            .message(Some("c1"), ""),
        Message::system("Escalated to the whole catalog."),
        Message::assistant("Sent."),
    ];
    assert_eq!(
        chat_messages(&history),
        vec![
            ChatMessage::User("email Bob".to_owned()),
            ChatMessage::User(partial_text.to_owned()),
            ChatMessage::Assistant {
                text: "Sent.".to_owned(),
                tool_calls: vec![],
            },
        ]
    );
}

#[test]
fn with_schemas_in_the_conversation_every_load_of_the_host_is_read_after_the_request() {
    use toolgate_core::{GroupId, HostEvent, LoadedSchemas, ToolName};
    let pdf = GroupId::new("pdf").unwrap();
    let history = [
        Message::user("merge a.pdf and b.pdf"),
        HostEvent::Loaded(pdf.clone()).message(None, "Loaded 2 tools from group 'PDF Tools'. ..."),
        HostEvent::ToolsLoaded(
            GroupId::new("gmail").unwrap(),
            vec![ToolName::new("gmail_send").unwrap()],
        )
        .message(None, "Loaded 1 of 3 tools from group 'Gmail' ..."),
        HostEvent::Loaded(GroupId::new("gmail").unwrap()).message(Some("c2"), ""),
        HostEvent::Unloaded(pdf).message(None, "Unloaded group 'PDF Tools'."),
        Message::system("Escalated to the whole catalog."),
        Message::assistant("Merged."),
    ];
    let read = |schemas| chat_messages_with(&history, schemas);
    let answered = ChatMessage::Assistant {
        text: "Merged.".to_owned(),
        tool_calls: vec![],
    };
    assert_eq!(
        read(LoadedSchemas::Conversation),
        vec![
            ChatMessage::User("merge a.pdf and b.pdf".to_owned()),
            ChatMessage::User("Loaded 2 tools from group 'PDF Tools'. ...".to_owned()),
            ChatMessage::User("Loaded 1 of 3 tools from group 'Gmail' ...".to_owned()),
            answered.clone(),
        ]
    );
    assert_eq!(read(LoadedSchemas::ToolList), chat_messages(&history));
    assert_eq!(
        read(LoadedSchemas::ToolList),
        vec![
            ChatMessage::User("merge a.pdf and b.pdf".to_owned()),
            ChatMessage::User("Loaded 1 of 3 tools from group 'Gmail' ...".to_owned()),
            answered,
        ]
    );
}

#[test]
fn the_conversation_starts_at_the_last_compaction_summary() {
    let active = toolgate_core::ActiveToolSet::new();
    let history = [
        Message::user("first request"),
        Message::assistant("first answer"),
        Message::compaction("the user asked one thing", &active),
        Message::user("second request"),
        Message::assistant("second answer"),
        Message::compaction("the user asked two things", &active),
        Message::user("third request"),
    ];
    assert_eq!(
        chat_messages(&history),
        vec![
            ChatMessage::User(
                "Summary of the conversation so far:\nthe user asked two things".to_owned()
            ),
            ChatMessage::User("third request".to_owned()),
        ]
    );
}
