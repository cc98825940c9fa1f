use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn image() -> Content {
    Content::Block(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}))
}

#[test]
fn a_model_reads_text_blocks_and_a_placeholder_for_the_rest() {
    let output = ToolOutput {
        content: vec![
            Content::Text("first".to_owned()),
            image(),
            Content::Block(
                json!({"type": "text", "text": "annotated", "annotations": {"priority": 1}}),
            ),
            Content::Block(json!({"type": "resource_link", "uri": "file:///a", "name": "a"})),
            Content::Block(
                json!({"type": "resource", "resource": {"uri": "file:///b", "text": "b"}}),
            ),
        ],
        ..ToolOutput::default()
    };
    assert_eq!(
        output.model_text(),
        "first\n[image: image/png]\nannotated\n[resource: file:///a]\n[embedded resource]"
    );
}

#[test]
fn a_result_with_only_structured_content_reads_as_its_json() {
    let output = ToolOutput {
        structured: Some(json!({"n": 1})),
        ..ToolOutput::default()
    };
    assert_eq!(output.model_text(), r#"{"n":1}"#);
}

#[test]
fn typed_wraps_the_text_and_keeps_other_blocks() {
    let output = ToolOutput {
        content: vec![Content::Text(r#"{"login":"octo"}"#.to_owned()), image()],
        meta: Some(Box::new(json!({"k": "v"}))),
        ..ToolOutput::default()
    };
    let typed = output.typed("get_me");
    let expected = json!({"type": "result", "action": "get_me", "result": {"login": "octo"}});
    assert_eq!(typed.structured, Some(expected.clone()));
    assert_eq!(
        typed.content,
        vec![Content::Text(expected.to_string()), image()]
    );
    assert_eq!(typed.meta, Some(Box::new(json!({"k": "v"}))));
}

#[test]
fn typed_uses_structured_content_when_there_is_no_text() {
    let output = ToolOutput {
        structured: Some(json!({"ok": true})),
        is_error: true,
        ..ToolOutput::default()
    };
    let typed = output.typed("x");
    assert_eq!(
        typed.structured,
        Some(json!({"type": "error", "action": "x", "error": r#"{"ok":true}"#}))
    );
    assert!(typed.is_error);
}

#[test]
fn an_error_is_text_marked_as_an_error() {
    let error = ToolOutput::error("nope");
    assert!(error.is_error);
    assert_eq!(error.model_text(), "nope");
    assert_eq!(crate::ToolCallError::respond("nope").to_string(), "nope");
}
