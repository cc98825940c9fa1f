//! The polymorphic tool contract: the generated schema, the
//! structured validation errors, consolidation and the `type` field.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn schema(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// A prompt manager like the built-in one: `view` and `update` over four prompt types.
fn prompt_manager(policy: &ActionPolicy) -> PolymorphicTool {
    let prompt_type = json!({"type": "string",
        "enum": ["system", "conversation_consolidation", "memory_management", "name"]});
    PolymorphicTool::new(
        ToolName::new("prompt_manager").unwrap(),
        "View or update your prompts and name.",
        vec![
            Action::new(
                "view",
                "Show a prompt",
                schema(json!({"properties": {"prompt_type": prompt_type},
                    "required": ["prompt_type"]})),
            ),
            Action::new(
                "update",
                "Replace a prompt",
                schema(json!({"properties": {"prompt_type": prompt_type,
                    "content": {"type": "string", "description": "New value"}},
                    "required": ["prompt_type", "content"]})),
            ),
        ],
        policy,
    )
    .unwrap()
}

const PROMPT_TYPES: [&str; 4] = [
    "system",
    "conversation_consolidation",
    "memory_management",
    "name",
];

#[test]
fn the_schema_has_the_action_enum_first_and_the_union_of_parameters() {
    let tool = prompt_manager(&ActionPolicy::default());
    let schema = Value::Object(tool.definition().input_schema.clone());
    let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["action", "prompt_type", "content"]);
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["view", "update"])
    );
    // Every action needs prompt_type; only update needs content.
    assert_eq!(schema["required"], json!(["action", "prompt_type"]));
    assert_eq!(
        schema["properties"]["content"]["description"],
        "For update. New value"
    );
    let description = &tool.definition().description;
    assert!(
        description.contains("- update (prompt_type, content): Replace a prompt"),
        "{description}"
    );
}

#[test]
fn adding_an_action_only_adds_an_enum_value() {
    let before = prompt_manager(&ActionPolicy::default());
    let mut actions = before.actions().to_vec();
    actions.push(Action::new(
        "reset",
        "Restore the default",
        schema(json!({"properties": {"prompt_type": {"type": "string",
            "enum": PROMPT_TYPES}}, "required": ["prompt_type"]})),
    ));
    let after = PolymorphicTool::new(
        before.name().clone(),
        before.description(),
        actions,
        &ActionPolicy::default(),
    )
    .unwrap();
    let mut expected = before.definition().input_schema.clone();
    expected["properties"]["action"]["enum"] = json!(["view", "update", "reset"]);
    assert_eq!(after.definition().input_schema, expected);
}

#[test]
fn invalid_action_returns_error_with_allowed_values() {
    let tool = prompt_manager(&ActionPolicy::default());
    let error = tool
        .resolve(&json!({"action": "delete", "prompt_type": "system"}))
        .unwrap_err();
    assert_eq!(
        error.to_json(),
        json!({
            "type": "error",
            "error": "Invalid action 'delete'",
            "allowed_actions": ["view", "update"],
            "allowed_prompt_types": PROMPT_TYPES,
        })
    );
}

#[test]
fn invalid_prompt_type_returns_error_with_allowed_values_and_a_close_match() {
    let tool = prompt_manager(&ActionPolicy::default());
    let error = tool
        .resolve(&json!({"action": "view", "prompt_type": "sytem"}))
        .unwrap_err()
        .to_json();
    assert_eq!(error["error"], "Invalid prompt_type 'sytem'");
    assert_eq!(error["did_you_mean"], "system");
    assert_eq!(error["parameter"], "prompt_type");
    assert_eq!(error["allowed_actions"], json!(["view", "update"]));
    assert_eq!(error["allowed_prompt_types"], json!(PROMPT_TYPES));
}

#[test]
fn a_far_away_value_gets_no_close_match() {
    let tool = prompt_manager(&ActionPolicy::default());
    let error = tool.resolve(&json!({"action": "zzz"})).unwrap_err();
    assert_eq!(error.did_you_mean, None);
    let close = tool.resolve(&json!({"action": "updat"})).unwrap_err();
    assert_eq!(close.did_you_mean.as_deref(), Some("update"));
}

#[test]
fn update_without_content_names_the_parameter_and_the_action() {
    let tool = prompt_manager(&ActionPolicy::default());
    for arguments in [
        json!({"action": "update", "prompt_type": "system"}),
        json!({"action": "update", "prompt_type": "system", "content": "  "}),
        json!({"action": "update", "prompt_type": "system", "content": null}),
    ] {
        let error = tool.resolve(&arguments).unwrap_err().to_json();
        assert_eq!(error["error"], "content is required for action 'update'");
        assert_eq!(error["action"], "update");
        assert_eq!(error["parameter"], "content");
    }
}

#[test]
fn a_missing_or_non_string_action_is_a_structured_error() {
    let tool = prompt_manager(&ActionPolicy::default());
    let missing = tool.resolve(&json!({"prompt_type": "name"})).unwrap_err();
    assert_eq!(missing.message, "Missing required parameter 'action'");
    let number = tool.resolve(&json!({"action": 3})).unwrap_err();
    assert_eq!(number.message, "Parameter 'action' must be a string, not 3");
    let not_object = tool.resolve(&json!("view")).unwrap_err();
    assert_eq!(not_object.allowed_actions, ["view", "update"]);
}

#[test]
fn a_valid_call_resolves_to_its_action_without_the_action_key() {
    let tool = prompt_manager(&ActionPolicy::default());
    let call = tool
        .resolve(&json!({"action": "update", "prompt_type": "name", "content": "Sage"}))
        .unwrap();
    assert_eq!(call.index, 1);
    assert_eq!(call.action.name, "update");
    assert_eq!(
        call.arguments,
        json!({"prompt_type": "name", "content": "Sage"})
    );
}

#[test]
fn a_policy_removes_denied_actions_from_the_schema_and_refuses_them() {
    let policy = ActionPolicy {
        allow: None,
        deny: vec!["update".to_owned()],
    };
    let tool = prompt_manager(&policy);
    assert_eq!(
        tool.definition().input_schema["properties"]["action"]["enum"],
        json!(["view"])
    );
    assert!(
        !tool.definition().input_schema["properties"]
            .as_object()
            .unwrap()
            .contains_key("content")
    );
    let error = tool
        .resolve(&json!({"action": "update", "prompt_type": "name", "content": "x"}))
        .unwrap_err();
    assert_eq!(error.message, "Action 'update' is not allowed here");
    assert_eq!(error.allowed_actions, ["view"]);

    let only_update = ActionPolicy {
        allow: Some(vec!["update".to_owned()]),
        deny: Vec::new(),
    };
    assert_eq!(prompt_manager(&only_update).action_names(), ["update"]);
    assert_eq!(
        only_update.unknown_actions(&["view", "update"]),
        Vec::<&str>::new()
    );
    let typo = ActionPolicy {
        allow: None,
        deny: vec!["updte".to_owned()],
    };
    assert_eq!(typo.unknown_actions(&["view", "update"]), ["updte"]);
}

#[test]
fn a_policy_denying_everything_is_an_error() {
    let policy = ActionPolicy {
        allow: Some(Vec::new()),
        deny: Vec::new(),
    };
    let error = PolymorphicTool::new(
        ToolName::new("t").unwrap(),
        "d",
        prompt_manager(&ActionPolicy::default()).actions().to_vec(),
        &policy,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "polymorphic tool `t` has no allowed action"
    );
}

#[test]
fn duplicate_actions_and_an_own_action_parameter_are_refused() {
    let action = |name: &str, schema_value: Value| Action::new(name, "d", schema(schema_value));
    let name = ToolName::new("t").unwrap();
    let duplicate = PolymorphicTool::new(
        name.clone(),
        "d",
        vec![action("a", json!({})), action("a", json!({}))],
        &ActionPolicy::default(),
    );
    assert!(matches!(
        duplicate,
        Err(PolymorphicError::DuplicateAction { .. })
    ));
    let own = PolymorphicTool::new(
        name,
        "d",
        vec![action(
            "a",
            json!({"properties": {"action": {"type": "string"}}}),
        )],
        &ActionPolicy::default(),
    );
    assert!(matches!(own, Err(PolymorphicError::ActionParameter { .. })));
}

fn member(name: &str, schema_value: Value) -> ToolDefinition {
    ToolDefinition::new(
        ToolName::new(name).unwrap(),
        format!("{name} it"),
        schema_value,
    )
    .unwrap()
}

#[test]
fn consolidation_names_actions_without_the_shared_prefix() {
    let search = member(
        "gmail_search",
        json!({"properties": {"q": {"type": "string"}}}),
    );
    let read = member(
        "gmail_read",
        json!({"properties": {"id": {"type": "string"}}}),
    );
    let (tool, targets) = PolymorphicTool::consolidate(
        ToolName::new("gmail").unwrap(),
        "Gmail",
        &[&search, &read],
        "gmail",
        &ActionPolicy::default(),
    )
    .unwrap();
    assert_eq!(tool.action_names(), ["search", "read"]);
    assert_eq!(targets, [&search, &read]);
}

#[test]
fn consolidation_keeps_full_names_when_stripping_would_clash_or_not_apply() {
    let a = member("github__get_me", json!({}));
    let b = member("list_issues", json!({}));
    let (tool, _) = PolymorphicTool::consolidate(
        ToolName::new("github").unwrap(),
        "GitHub",
        &[&a, &b],
        "github",
        &ActionPolicy::default(),
    )
    .unwrap();
    assert_eq!(tool.action_names(), ["github__get_me", "list_issues"]);
    let c = member("gh_x", json!({}));
    let d = member("gh__x", json!({}));
    let (tool, _) = PolymorphicTool::consolidate(
        ToolName::new("gh").unwrap(),
        "d",
        &[&c, &d],
        "gh",
        &ActionPolicy::default(),
    )
    .unwrap();
    assert_eq!(tool.action_names(), ["gh_x", "gh__x"]);
}

#[test]
fn consolidation_with_a_policy_maps_each_remaining_action_to_its_member() {
    let a = member("files_read", json!({}));
    let b = member("files_write", json!({}));
    let c = member("files_list", json!({}));
    let policy = ActionPolicy {
        allow: None,
        deny: vec!["write".to_owned()],
    };
    let (tool, targets) = PolymorphicTool::consolidate(
        ToolName::new("files").unwrap(),
        "Files",
        &[&a, &b, &c],
        "files",
        &policy,
    )
    .unwrap();
    assert_eq!(tool.action_names(), ["read", "list"]);
    assert_eq!(targets, [&a, &c]);
}

#[test]
fn enums_that_differ_between_actions_are_not_reported() {
    let a = member(
        "t_a",
        json!({"properties": {"mode": {"type": "string", "enum": ["x"]}}}),
    );
    let b = member(
        "t_b",
        json!({"properties": {"mode": {"type": "string", "enum": ["y"]}}}),
    );
    let (tool, _) = PolymorphicTool::consolidate(
        ToolName::new("t").unwrap(),
        "d",
        &[&a, &b],
        "t",
        &ActionPolicy::default(),
    )
    .unwrap();
    let error = tool.resolve(&json!({"action": "c"})).unwrap_err();
    assert!(error.allowed_values.is_empty());
    // And a value checked by neither is left to the action's own schema.
    assert!(tool.resolve(&json!({"action": "a", "mode": "y"})).is_ok());
}

#[test]
fn typed_results_keep_a_type_and_wrap_the_rest() {
    assert_eq!(
        typed_result("search", r#"{"type":"search_results","results":[]}"#, false),
        json!({"type": "search_results", "results": []})
    );
    assert_eq!(
        typed_result("list", "plain text", false),
        json!({"type": "result", "action": "list", "result": "plain text"})
    );
    assert_eq!(
        typed_result("list", "[1,2]", false),
        json!({"type": "result", "action": "list", "result": [1, 2]})
    );
    // A `type` that is not a string is data, not the result type.
    assert_eq!(
        typed_result("list", r#"{"type":1}"#, true),
        json!({"type": "error", "action": "list", "error": "{\"type\":1}"})
    );
}
