//! Argument validation against a tool's input schema, before a call leaves
//! the gateway. The error names the failing field, so the model can fix it.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use jsonschema::Validator;
use serde_json::{Map, Value};
use toolgate_core::closest_name;

/// Compiled input schemas by tool name, compiled on first use: compiling
/// costs far more than validating.
#[derive(Debug, Default)]
pub(crate) struct Validators {
    /// `None`: the schema does not compile, so calls are not checked.
    compiled: RwLock<HashMap<String, Option<Arc<Validator>>>>,
}

impl Validators {
    /// Checks `arguments` against `tool`'s `schema`.
    pub(crate) fn check(
        &self,
        tool: &str,
        schema: &Map<String, Value>,
        arguments: &Value,
    ) -> Result<(), String> {
        let cached = self
            .compiled
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .cloned();
        let validator = match cached {
            Some(validator) => validator,
            None => {
                let validator = compile(schema);
                self.compiled
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(tool.to_owned(), validator.clone());
                validator
            }
        };
        match validator {
            Some(validator) => check_with(tool, schema, &validator, arguments),
            None => Ok(()),
        }
    }

    /// Checks `arguments` against `schema` compiled for this call alone: the
    /// schema of a caller's own tool, which another caller's tool of the
    /// same name does not share, and which its owner changes at will.
    pub(crate) fn check_once(
        tool: &str,
        schema: &Map<String, Value>,
        arguments: &Value,
    ) -> Result<(), String> {
        match compile(schema) {
            Some(validator) => check_with(tool, schema, &validator, arguments),
            None => Ok(()),
        }
    }

    /// Forgets every compiled schema (an upstream's tools changed).
    pub(crate) fn forget_all(&self) {
        self.compiled
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// A schema the validator cannot compile is not ours to judge: the call goes
/// through and the tool decides.
fn compile(schema: &Map<String, Value>) -> Option<Arc<Validator>> {
    jsonschema::validator_for(&Value::Object(schema.clone()))
        .ok()
        .map(Arc::new)
}

fn check_with(
    tool: &str,
    schema: &Map<String, Value>,
    validator: &Validator,
    arguments: &Value,
) -> Result<(), String> {
    let mut problems: Vec<String> = validator
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
        problems.extend(unknown_arguments(tool, schema, arguments));
        Err(format!(
            "Invalid arguments for tool '{tool}': {}.",
            problems.join("; ")
        ))
    }
}

/// The top-level arguments `schema` does not name, said with the ones it
/// does, and for a lone one close to one of those, the call to make instead:
/// a model that guessed a name (`file_path` for `path`) repeats its guess
/// when told only what is missing, and even when asked "did you mean".
fn unknown_arguments(tool: &str, schema: &Map<String, Value>, arguments: &Value) -> Option<String> {
    let known = schema.get("properties")?.as_object()?;
    let unknown: Vec<&str> = arguments
        .as_object()?
        .keys()
        .map(String::as_str)
        .filter(|key| !known.contains_key(*key))
        .collect();
    let names: Vec<&str> = known.keys().map(String::as_str).collect();
    let listed = names.join(", ");
    Some(match unknown.as_slice() {
        [] => return None,
        [one] => {
            let instead = closest_name(one, names.iter().copied())
                .map(|name| format!(". Call {tool} again with '{name}' instead of '{one}'"))
                .unwrap_or_default();
            format!("'{one}' is not one of its arguments ({listed}){instead}")
        }
        _ => {
            // The model's keys, so as many as it wrote: the first few say it.
            let named: Vec<String> = unknown
                .iter()
                .take(UNKNOWN_NAMED)
                .map(|key| format!("'{key}'"))
                .collect();
            let more = match unknown.len().saturating_sub(UNKNOWN_NAMED) {
                0 => String::new(),
                more => format!(" and {more} more"),
            };
            format!(
                "{}{more} are not among its arguments ({listed})",
                named.join(", ")
            )
        }
    })
}

/// The most unknown arguments an error names.
const UNKNOWN_NAMED: usize = 10;

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

    fn check_arguments(
        tool: &str,
        schema: &Map<String, Value>,
        arguments: &Value,
    ) -> Result<(), String> {
        Validators::default().check(tool, schema, arguments)
    }

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
    fn a_guessed_argument_name_is_named_with_the_ones_the_tool_takes() {
        assert_eq!(
            check_arguments("t", &schema(), &json!({"file_path": "a"})).unwrap_err(),
            "Invalid arguments for tool 't': \"path\" is a required property; \
             'file_path' is not one of its arguments (path, depth, user). \
             Call t again with 'path' instead of 'file_path'."
        );
        assert_eq!(
            check_arguments("t", &schema(), &json!({"query": "a"})).unwrap_err(),
            "Invalid arguments for tool 't': \"path\" is a required property; \
             'query' is not one of its arguments (path, depth, user)."
        );
        assert_eq!(
            check_arguments("t", &schema(), &json!({"file": "a", "deep": 1})).unwrap_err(),
            "Invalid arguments for tool 't': \"path\" is a required property; \
             'file', 'deep' are not among its arguments (path, depth, user)."
        );
        let many: serde_json::Map<String, Value> =
            (0..12).map(|i| (format!("k{i}"), json!(1))).collect();
        let error = check_arguments("t", &schema(), &Value::Object(many)).unwrap_err();
        assert!(
            error.ends_with(
                "'k8', 'k9' and 2 more are not among its arguments (path, depth, user)."
            ),
            "{error}"
        );
        // An extra argument the schema allows is not a problem on its own.
        assert_eq!(
            check_arguments("t", &schema(), &json!({"path": "a", "extra": 1})),
            Ok(())
        );
    }

    #[test]
    fn a_compiled_schema_is_reused_until_forgotten() {
        let validators = Validators::default();
        let strict = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let loose = json!({"type": "object"});
        let bad = json!({"n": "x"});
        assert!(
            validators
                .check("t", strict.as_object().unwrap(), &bad)
                .is_err()
        );
        // Same name, same cached schema: a stale schema stays until forgotten.
        assert!(
            validators
                .check("t", loose.as_object().unwrap(), &bad)
                .is_err()
        );
        validators.forget_all();
        assert_eq!(
            validators.check("t", loose.as_object().unwrap(), &bad),
            Ok(())
        );
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
