use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn name(text: &str) -> ToolName {
    ToolName::new(text).unwrap()
}

#[test]
fn a_schema_without_type_gets_object_type_first() {
    let tool = ToolDefinition::new(name("t"), "d", json!({"properties": {}})).unwrap();
    assert_eq!(
        Value::Object(tool.input_schema),
        json!({"type": "object", "properties": {}})
    );
    let keys: Vec<_> = ToolDefinition::new(name("t"), "d", json!({"properties": {}}))
        .unwrap()
        .input_schema
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["type", "properties"]);
}

#[test]
fn bad_schemas_are_rejected_with_the_reason() {
    let cases = [
        (
            json!([]),
            "input schema must be a JSON object, not an array",
        ),
        (
            json!({"type": "string"}),
            "input schema must have \"type\": \"object\", not \"string\"",
        ),
        (
            json!({"properties": []}),
            "input schema `properties` must be an object",
        ),
        (
            json!({"required": [1]}),
            "input schema `required` must be an array of strings",
        ),
    ];
    for (schema, message) in cases {
        let error = ToolDefinition::new(name("t"), "d", schema).unwrap_err();
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn openai_function_form_keeps_schema_key_order() {
    let tool = ToolDefinition::new(
        name("pdf_info"),
        "Info",
        json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
    )
    .unwrap();
    assert_eq!(
        tool.to_openai_function().to_string(),
        r#"{"type":"function","function":{"name":"pdf_info","description":"Info","parameters":{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}}}"#
    );
}

#[test]
fn one_line_description_collapses_newlines() {
    let tool = ToolDefinition::new(
        name("t"),
        "Get details.\nUse this tool  to\tlist.\n",
        json!({}),
    )
    .unwrap();
    assert_eq!(
        tool.one_line_description(),
        "Get details. Use this tool to list."
    );
}
