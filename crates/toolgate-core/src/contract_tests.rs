use super::ToolCount;
use crate::{GroupId, GroupLoaded, LoadedSchemas, ToolDefinition, ToolGroup, ToolName};

#[test]
fn a_group_of_one_tool_loads_one_tool_not_one_tools() {
    let group = ToolGroup::new(GroupId::new("pdf").unwrap(), "PDF Tools", "Read PDFs");
    let tool = ToolDefinition::new(
        ToolName::new("pdf").unwrap(),
        "Read PDF files",
        serde_json::json!({"type": "object"}),
    )
    .unwrap();
    let loaded = GroupLoaded {
        group: &group,
        tools: vec![&tool],
        newly_loaded: true,
    };
    assert_eq!(
        loaded.to_string(),
        "Loaded 1 tool from group 'PDF Tools':\n- pdf: Read PDF files"
    );
}

#[test]
fn a_load_in_the_conversation_carries_each_tools_whole_schema_one_per_line() {
    let group = ToolGroup::new(GroupId::new("pdf").unwrap(), "PDF Tools", "Read PDFs");
    let info = ToolDefinition::new(
        ToolName::new("pdf_info").unwrap(),
        "Page count and metadata.\nSay \"which\" file.",
        serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )
    .unwrap();
    let merge = ToolDefinition::new(
        ToolName::new("pdf_merge").unwrap(),
        "Merge PDF files",
        serde_json::json!({"type": "object"}),
    )
    .unwrap();
    let loaded = GroupLoaded {
        group: &group,
        tools: vec![&info, &merge],
        newly_loaded: true,
    };
    assert_eq!(
        loaded.answer(LoadedSchemas::Conversation).to_string(),
        "Loaded 2 tools from group 'PDF Tools'. They are not added to your tool list: call one \
         with call_tool, as {\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}. \
         Their schemas, one JSON object per tool:\n\
         {\"name\":\"pdf_info\",\"description\":\"Page count and metadata.\\nSay \\\"which\\\" file.\",\
         \"input_schema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}}\n\
         {\"name\":\"pdf_merge\",\"description\":\"Merge PDF files\",\"input_schema\":{\"type\":\"object\"}}"
    );
    // Each line after the first is the tool's JSON, read back whole.
    let text = loaded.answer(LoadedSchemas::Conversation).to_string();
    let first: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["description"], info.description.as_str());
    assert_eq!(
        first["input_schema"],
        serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    );
    // In the tool list, the answer is the load's own text.
    assert_eq!(
        loaded.answer(LoadedSchemas::ToolList).to_string(),
        "Loaded 2 tools from group 'PDF Tools':\n- pdf_info: Page count and metadata. Say \"which\" file.\n- pdf_merge: Merge PDF files"
    );
}

#[test]
fn a_groups_size_is_singular_for_one_tool() {
    assert_eq!(ToolCount(1).to_string(), "1 tool");
    assert_eq!(ToolCount(0).to_string(), "0 tools");
    assert_eq!(ToolCount(12).to_string(), "12 tools");
}

/// A call past its deadline (its source's, or the caller's when shorter)
/// and a call cancelled with its turn read as these texts, whole.
#[test]
fn a_timeout_and_a_cancel_read_as_their_texts() {
    let timed_out = crate::CallTimedOut {
        tool: "slow_wait".to_owned(),
        limit: std::time::Duration::from_millis(200),
    };
    assert_eq!(
        timed_out.to_string(),
        "Tool 'slow_wait' did not finish within 0.2s; the call was cancelled."
    );
    assert_eq!(crate::CALL_CANCELLED, "The tool call was cancelled.");
}

/// A call the agent loop lost, or whose task ended without a result, reads
/// as these texts, whole.
#[test]
fn a_call_failed_inside_the_agent_reads_as_its_text() {
    assert_eq!(
        crate::FailedInAgent("task 7 panicked").to_string(),
        "The tool call failed inside the agent: task 7 panicked"
    );
    assert_eq!(
        crate::CALL_FAILED_IN_AGENT,
        "The tool call failed inside the agent."
    );
}

#[test]
fn a_too_large_load_names_at_most_a_hundred_tools() {
    let tools: Vec<ToolName> = (0..103)
        .map(|i| ToolName::new(format!("t{i}")).unwrap())
        .collect();
    let refused = crate::LoadGroupError::TooLarge {
        group: GroupId::new("big").unwrap(),
        tokens: 9000,
        limit: 4096,
        tools,
    };
    let text = refused.to_string();
    assert!(
        text.starts_with(
            "Nothing was loaded: group 'big' would hold 9000 tokens of tool schemas, more than \
             one load may bring for this model (4096). Load only the tools you need, naming them \
             in 'tools'. Its 103 tools: t0, t1, "
        ),
        "{text}"
    );
    assert!(text.ends_with(", t98, t99 and 3 more."), "{text}");
    assert_eq!(refused.kind(), "too_large");
}

#[test]
fn a_not_available_hint_reads_back_from_its_text_with_the_load_it_asks_for() {
    let hint = crate::NotAvailable {
        tool: "pdf_info".to_owned(),
        group: Some(GroupId::new("Public 'Health'").unwrap()),
    };
    let read = crate::NotAvailable::read(&hint.to_string()).unwrap();
    assert_eq!(read, hint);
    assert_eq!(
        read.load_call(),
        Some((
            "load_tool_group",
            serde_json::json!({"group_name": "Public 'Health'", "tools": ["pdf_info"]})
        ))
    );
}

#[test]
fn only_the_whole_hint_with_a_group_reads_back() {
    let without_group = crate::NotAvailable {
        tool: "pdf_info".to_owned(),
        group: None,
    };
    assert_eq!(crate::NotAvailable::read(&without_group.to_string()), None);
    assert_eq!(without_group.load_call(), None);
    let hint = crate::NotAvailable {
        tool: "pdf_info".to_owned(),
        group: Some(GroupId::new("pdf").unwrap()),
    }
    .to_string();
    // A result quoting the hint, or cut short, is not the hint.
    assert_eq!(
        crate::NotAvailable::read(&format!("{hint} Then retry.")),
        None
    );
    assert_eq!(crate::NotAvailable::read(&hint[..hint.len() - 2]), None);
    assert_eq!(crate::NotAvailable::read(&format!("Error: {hint}")), None);
}
