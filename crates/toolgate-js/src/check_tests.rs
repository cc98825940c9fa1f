use std::time::Duration;

use pretty_assertions::assert_eq;

use super::check_function;
use crate::{JsError, JsLimits};

fn check(source: &str, function: &str) -> Result<(), JsError> {
    check_function(source, "user_tools/t.js", function, &JsLimits::default())
}

#[test]
fn a_script_defining_the_function_passes() {
    for source in [
        "function run(args) { return args.n; }",
        "async function run() {}",
        "const run = (args) => args;",
        "let helper = 2;\nvar run = function () { return helper; };",
    ] {
        assert_eq!(
            check(source, "run").map_err(|e| e.to_string()),
            Ok(()),
            "{source}"
        );
    }
}

#[test]
fn a_syntax_error_is_thrown_with_its_line() {
    let error = check("function run() {\n  return 1 +;\n}", "run").unwrap_err();
    assert!(
        matches!(&error, JsError::Thrown { message, line: Some(2) } if message.starts_with("SyntaxError: ")),
        "{error:?}"
    );
}

#[test]
fn a_missing_function_is_named() {
    for (source, function) in [
        ("function run() {}", "walk"),
        ("const run = 3;", "run"),
        ("function run() {}", "run; x"),
    ] {
        assert_eq!(
            check(source, function).unwrap_err().to_string(),
            format!("`{function}` is not a function defined by the script")
        );
    }
}

#[test]
fn top_level_code_runs_under_the_limits() {
    let error = check("throw new Error('at load');\nfunction run() {}", "run").unwrap_err();
    assert_eq!(error.to_string(), "Error: at load (line 1)");

    let limits = JsLimits {
        time: Duration::from_millis(100),
        ..JsLimits::default()
    };
    let result = check_function("for (;;) {}\nfunction run() {}", "t.js", "run", &limits);
    assert!(matches!(result, Err(JsError::Timeout { .. })), "{result:?}");
}
