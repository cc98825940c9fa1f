use pretty_assertions::assert_eq;

use super::{Step, read};

fn tools() -> Vec<String> {
    vec!["time_now".to_owned(), "load_tool_group".to_owned()]
}

fn call(name: &str, arguments: &str) -> Step {
    Step {
        text: String::new(),
        calls: vec![(name.to_owned(), arguments.to_owned())],
    }
}

fn text(text: &str) -> Step {
    Step {
        text: text.to_owned(),
        calls: Vec::new(),
    }
}

#[test]
fn a_json_step_is_a_call_or_the_answer() {
    assert_eq!(
        read(
            r#"{"tool": "time_now", "arguments": {"timezone": "Asia/Tokyo"}}"#,
            &tools()
        ),
        call("time_now", r#"{"timezone":"Asia/Tokyo"}"#)
    );
    assert_eq!(
        read(r#" {"answer": "It is 10:00."} "#, &tools()),
        text("It is 10:00.")
    );
    // Other spellings of the same call.
    for reply in [
        r#"{"name": "time_now", "arguments": {"timezone": "Asia/Tokyo"}}"#,
        r#"{"name": "time_now", "parameters": {"timezone": "Asia/Tokyo"}}"#,
        r#"{"function": {"name": "time_now", "arguments": "{\"timezone\":\"Asia/Tokyo\"}"}}"#,
        r#"{{"name": "time_now", "arguments": {"timezone": "Asia/Tokyo"}}}"#,
        "```json\n{\"name\": \"time_now\", \"arguments\": {\"timezone\": \"Asia/Tokyo\"}}\n```",
    ] {
        assert_eq!(
            read(reply, &tools()),
            call("time_now", r#"{"timezone":"Asia/Tokyo"}"#),
            "{reply}"
        );
    }
    assert_eq!(
        read(r#"{"tool": "time_now"}"#, &tools()),
        call("time_now", "{}")
    );
}

#[test]
fn tagged_blocks_are_calls_and_the_text_around_them_is_kept() {
    let reply = "Let me check.\n<tool_call>\n{\"name\": \"time_now\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";
    assert_eq!(
        read(reply, &tools()),
        Step {
            text: "Let me check.".to_owned(),
            calls: vec![("time_now".to_owned(), r#"{"timezone":"UTC"}"#.to_owned())],
        }
    );
    // Qwen2.5 through a chat template that does not parse its calls.
    let reply = "<tools>\n{\"name\": \"load_tool_group\", \"arguments\": {\"group_name\": \"pdf\"}}\n</tools>";
    assert_eq!(
        read(reply, &tools()),
        call("load_tool_group", r#"{"group_name":"pdf"}"#)
    );
    // Two calls, the second cut before its closing tag.
    let reply = "<tool_call>{\"name\": \"time_now\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"load_tool_group\", \"arguments\": {\"group_name\": \"files\"}}";
    assert_eq!(
        read(reply, &tools()).calls,
        vec![
            ("time_now".to_owned(), "{}".to_owned()),
            (
                "load_tool_group".to_owned(),
                r#"{"group_name":"files"}"#.to_owned()
            ),
        ]
    );
}

#[test]
fn a_fenced_call_is_read_but_other_code_stays_text() {
    let reply =
        "I'll load it:\n```json\n{\"name\": \"pdf\", \"arguments\": {}}\n```\nthen call it.";
    assert_eq!(
        read(reply, &tools()),
        Step {
            text: "I'll load it:\n\nthen call it.".to_owned(),
            calls: vec![("pdf".to_owned(), "{}".to_owned())],
        }
    );
    let reply = "Here is the config:\n```json\n{\"port\": 8080}\n```";
    assert_eq!(read(reply, &tools()), text(reply));
}

#[test]
fn a_call_in_prose_counts_only_for_an_offered_tool() {
    let reply =
        r#"Sure: {"name": "time_now", "arguments": {"timezone": "Europe/Paris"}} is what I need."#;
    assert_eq!(
        read(reply, &tools()),
        Step {
            text: "Sure: is what I need.".to_owned(),
            calls: vec![(
                "time_now".to_owned(),
                r#"{"timezone":"Europe/Paris"}"#.to_owned()
            )],
        }
    );
    let reply = r#"A call looks like {"name": "anything", "arguments": {}}."#;
    assert_eq!(read(reply, &tools()), text(reply));
    assert_eq!(read("It is 10:00.", &tools()), text("It is 10:00."));
    assert_eq!(
        read(r#"{"port": 8080}"#, &tools()),
        text(r#"{"port": 8080}"#)
    );
}

#[test]
fn a_reply_that_makes_up_a_result_is_a_call_of_that_tool() {
    // The result of a tool never called, in the transcript's own form.
    assert_eq!(
        read(
            "Result of pdf_info: The document's title is \"Q3 Report\".",
            &tools()
        ),
        call("pdf_info", "{}")
    );
    assert_eq!(
        read(r#"{"answer": "Result of time_now: 10:00"}"#, &tools()),
        call("time_now", "{}")
    );
    assert_eq!(
        read("Result of getWeather:\nsunny", &tools()),
        call("getWeather", "{}")
    );
    // Answers that merely start alike stay answers.
    for reply in [
        "Result of testing: all green.",
        "Result of the search: nothing found.",
        "The Result of time_now: 10:00",
    ] {
        assert_eq!(read(reply, &tools()), text(reply), "{reply}");
    }
}
