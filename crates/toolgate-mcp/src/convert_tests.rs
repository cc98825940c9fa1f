use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn an_upstream_result_crosses_the_runtime_unchanged() {
    // What the gateway answers is always a complete result (resultType,
    // required from MCP 2026-07-28; rmcp drops it for older clients).
    let original: CallToolResult = serde_json::from_value(json!({
        "resultType": "complete",
        "content": [
            {"type": "text", "text": "plain"},
            {"type": "text", "text": "annotated", "annotations": {"priority": 0.5}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "r"}},
            {"type": "resource_link", "uri": "test://link", "name": "link"}
        ],
        "structuredContent": {"n": 1},
        "isError": false,
        "_meta": {"trace": "abc"}
    }))
    .unwrap();
    let output = output_from_result(original.clone());
    assert_eq!(output.content[0], Content::Text("plain".to_owned()));
    assert_eq!(
        output.model_text(),
        "plain\nannotated\n[image: image/png]\n[embedded resource]\n[resource: test://link]"
    );
    let back = result_from_output(output);
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&original).unwrap()
    );
}

#[test]
fn an_error_result_stays_an_error() {
    let original = CallToolResult::error(vec![ContentBlock::text("boom")]);
    let output = output_from_result(original.clone());
    assert!(output.is_error);
    assert_eq!(result_from_output(output), original);
}

#[test]
fn an_upstream_tool_keeps_its_listing() {
    let tool: Tool = serde_json::from_value(json!({
        "name": "get_me",
        "title": "Who am I",
        "description": "The signed-in user",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "object", "properties": {"login": {"type": "string"}}},
        "annotations": {"readOnlyHint": true}
    }))
    .unwrap();
    let source = source_tool(&tool);
    assert_eq!(source.name, "get_me");
    assert_eq!(source.description, "The signed-in user");
    assert_eq!(
        source.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert_eq!(
        source.listing["outputSchema"]["properties"]["login"]["type"],
        "string"
    );
    let definition = ToolDefinition::new(
        toolgate_core::ToolName::new("get_me").unwrap(),
        "x",
        json!({}),
    )
    .unwrap();
    assert_eq!(listed_tool(&source.listing, &definition), tool);
}

#[test]
fn listed_tools_follow_a_new_listing_and_fall_back_to_the_definition() {
    let definition = ToolDefinition::new(
        toolgate_core::ToolName::new("get_me").unwrap(),
        "x",
        json!({}),
    )
    .unwrap();
    let listing = |title: &str| {
        Arc::new(
            json!({"name": "get_me", "title": title, "inputSchema": {"type": "object"}})
                .as_object()
                .unwrap()
                .clone(),
        )
    };
    let cache = ListedTools::default();
    let first = listing("First");
    let title = |tools: Vec<Tool>| tools[0].title.clone();
    assert_eq!(
        title(cache.tools(&[&definition], vec![Some(Arc::clone(&first))])),
        Some("First".to_owned())
    );
    assert_eq!(
        title(cache.tools(&[&definition], vec![Some(first)])),
        Some("First".to_owned())
    );
    // Listed again: the new listing wins, not the one read before.
    assert_eq!(
        title(cache.tools(&[&definition], vec![Some(listing("Second"))])),
        Some("Second".to_owned())
    );
    assert_eq!(
        cache.tools(&[&definition], vec![None]),
        vec![tool_to_mcp(&definition)]
    );
}
