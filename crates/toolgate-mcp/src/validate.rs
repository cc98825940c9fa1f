//! Argument validation against a tool's input schema, before a call leaves
//! the gateway. The error names the failing field, so the model can fix it.

use serde_json::{Map, Value};

/// Checks `arguments` against `schema`. A schema the validator cannot compile
/// is not ours to judge: the call goes through and the tool decides.
pub(crate) fn check_arguments(
    tool: &str,
    schema: &Map<String, Value>,
    arguments: &Value,
) -> Result<(), String> {
    let schema = Value::Object(schema.clone());
    let Ok(validator) = jsonschema::validator_for(&schema) else {
        return Ok(());
    };
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(3)
        .map(|error| {
            let path = error.instance_path.to_string();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("'{}': {error}", field_name(&path))
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Invalid arguments for tool '{tool}': {}.",
            problems.join("; ")
        ))
    }
}

/// `/user/tags/0` as the model wrote it: `user.tags[0]`.
fn field_name(pointer: &str) -> String {
    let mut name = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.chars().all(|c| c.is_ascii_digit()) && !name.is_empty() {
            name.push_str(&format!("[{segment}]"));
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(&segment);
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn schema() -> Map<String, Value> {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "depth": {"type": "integer", "minimum": 1},
                "user": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
            },
            "required": ["path"]
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn valid_arguments_pass() {
        assert_eq!(
            check_arguments("t", &schema(), &json!({"path": "a", "depth": 2})),
            Ok(())
        );
    }

    #[test]
    fn errors_name_the_failing_field() {
        assert_eq!(
            check_arguments("t", &schema(), &json!({"path": "a", "depth": "deep"})).unwrap_err(),
            "Invalid arguments for tool 't': 'depth': \"deep\" is not of type \"integer\"."
        );
        assert_eq!(
            check_arguments("t", &schema(), &json!({"depth": 1})).unwrap_err(),
            "Invalid arguments for tool 't': \"path\" is a required property."
        );
        let nested = check_arguments(
            "t",
            &schema(),
            &json!({"path": "a", "user": {"tags": ["x", 3]}}),
        )
        .unwrap_err();
        assert!(nested.contains("'user.tags[1]'"), "{nested}");
    }

    #[test]
    fn an_uncompilable_schema_lets_the_call_through() {
        let broken = json!({"type": "object", "properties": {"a": {"type": 12}}});
        assert_eq!(
            check_arguments("t", broken.as_object().unwrap(), &json!({"a": 1})),
            Ok(())
        );
    }
}
