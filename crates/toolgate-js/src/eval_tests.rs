use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::eval_script;
use crate::{JsError, JsLimits};

fn eval(source: &str) -> Result<Value, JsError> {
    eval_script(source, "js_eval.js", &JsLimits::default())
}

#[test]
fn answers_the_value_of_the_last_expression() {
    assert_eq!(eval("1 + 2").unwrap(), json!(3));
    assert_eq!(
        eval("const o = { a: [1, 'two'] };\no.b = null;\no").unwrap(),
        json!({"a": [1, "two"], "b": null})
    );
    assert_eq!(eval("'text'").unwrap(), json!("text"));
    assert_eq!(eval("let x = 1;").unwrap(), Value::Null);
    assert_eq!(eval("(function () {})").unwrap(), Value::Null);
}

#[test]
fn settles_a_promise() {
    assert_eq!(
        eval("(async () => { await null; return 'done'; })()").unwrap(),
        json!("done")
    );
    assert_eq!(
        eval("Promise.reject(new TypeError('nope'))")
            .unwrap_err()
            .to_string(),
        "TypeError: nope (line 1)"
    );
}

#[test]
fn errors_have_their_line_and_limits_hold() {
    assert_eq!(
        eval("const a = 1;\nnotDefined + a")
            .unwrap_err()
            .to_string(),
        "ReferenceError: notDefined is not defined (line 2)"
    );
    let limits = JsLimits {
        time: Duration::from_millis(100),
        ..JsLimits::default()
    };
    let result = eval_script("while (true) {}", "js_eval.js", &limits);
    assert!(matches!(result, Err(JsError::Timeout { .. })), "{result:?}");
}
