use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{line_in, run_function};
use crate::{JsError, JsLimits};

fn run(source: &str, function: &str, arguments: Value) -> Result<Value, JsError> {
    run_function(
        source,
        "tool.js",
        function,
        &arguments,
        &JsLimits::default(),
    )
}

/// The error as the model would read it, so whole values can be compared.
fn error_text(result: Result<Value, JsError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn calls_the_function_with_the_arguments_object() {
    let source = "function add(args) { return args.a + args.b; }";
    assert_eq!(
        run(source, "add", json!({"a": 2, "b": 3})).unwrap(),
        json!(5)
    );
}

#[test]
fn returns_strings_objects_and_undefined_as_json() {
    let source = r#"
        function text() { return "hello"; }
        function object(args) { return { echo: args, list: [1, "two", null] }; }
        function nothing() {}
    "#;
    assert_eq!(run(source, "text", json!({})).unwrap(), json!("hello"));
    assert_eq!(
        run(source, "object", json!({"z": 1, "a": 2})).unwrap(),
        json!({"echo": {"z": 1, "a": 2}, "list": [1, "two", null]})
    );
    assert_eq!(run(source, "nothing", json!({})).unwrap(), Value::Null);
}

#[test]
fn awaits_a_returned_promise() {
    let source = r#"
        async function later(args) {
            const value = await Promise.resolve(args.n);
            await null;
            return value * 2;
        }
    "#;
    assert_eq!(run(source, "later", json!({"n": 21})).unwrap(), json!(42));
}

#[test]
fn finds_functions_bound_with_const_and_let() {
    let source = "const double = (args) => args.n * 2;\nlet triple = async ({ n }) => n * 3;";
    assert_eq!(run(source, "double", json!({"n": 4})).unwrap(), json!(8));
    assert_eq!(run(source, "triple", json!({"n": 4})).unwrap(), json!(12));
}

#[test]
fn a_missing_function_is_named() {
    let source = "function add() {}\nconst notAFunction = 3;";
    for name in ["missing", "notAFunction", "add; globalThis.x = 1"] {
        assert_eq!(
            error_text(run(source, name, json!({}))),
            format!("`{name}` is not a function defined by the script")
        );
    }
}

#[test]
fn a_thrown_error_has_its_message_and_line() {
    let source = "function search(args) {\n  if (!args.query) {\n    throw new TypeError('query is required');\n  }\n}";
    let error = run(source, "search", json!({})).unwrap_err();
    assert!(
        matches!(&error, JsError::Thrown { message, line: Some(3) } if message == "TypeError: query is required"),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "TypeError: query is required (line 3)");
}

#[test]
fn a_rejected_promise_is_a_thrown_error() {
    let source = "async function fail() {\n  await null;\n  throw new Error('no luck');\n}";
    assert_eq!(
        error_text(run(source, "fail", json!({}))),
        "Error: no luck (line 3)"
    );
}

#[test]
fn a_thrown_value_that_is_not_an_error_is_its_text() {
    let source = "function text() { throw 'plain text'; }\nfunction nothing() { throw undefined; }";
    assert_eq!(error_text(run(source, "text", json!({}))), "plain text");
    assert_eq!(error_text(run(source, "nothing", json!({}))), "undefined");
}

#[test]
fn a_syntax_error_has_its_line() {
    let source = "function ok() {}\n\nconst broken = ;\n";
    let error = run(source, "ok", json!({})).unwrap_err();
    assert!(
        matches!(&error, JsError::Thrown { message, line: Some(3) } if message.starts_with("SyntaxError: ")),
        "{error:?}"
    );
}

#[test]
fn an_infinite_loop_times_out() {
    let limits = JsLimits {
        time: Duration::from_millis(200),
        ..JsLimits::default()
    };
    // A loop that catches what it can and tries again in `finally`.
    let sources = [
        "function spin() { for (;;) {} }",
        "function spin() { for (;;) { try { for (;;) {} } catch (e) {} finally { for (;;) {} } } }",
        "async function spin() { await null; while (true) {} }",
        "for (;;) {}\nfunction spin() {}",
    ];
    for source in sources {
        let result = run_function(source, "tool.js", "spin", &json!({}), &limits);
        assert!(
            matches!(result, Err(JsError::Timeout { limit }) if limit == limits.time),
            "{source}: {result:?}"
        );
    }
    assert_eq!(
        JsError::Timeout { limit: limits.time }.to_string(),
        "timed out after 200 ms"
    );
}

#[test]
fn a_limit_too_large_for_a_deadline_is_no_limit() {
    let limits = JsLimits {
        time: Duration::MAX,
        ..JsLimits::default()
    };
    let result = run_function(
        "function one() { return 1; }",
        "tool.js",
        "one",
        &json!({}),
        &limits,
    );
    assert_eq!(result.unwrap(), json!(1));
}

#[test]
fn an_allocation_bomb_runs_out_of_memory() {
    let limits = JsLimits {
        memory_bytes: 16 << 20,
        ..JsLimits::default()
    };
    let sources = [
        "function bomb() { const all = []; for (;;) all.push(new Array(100000).fill(1)); }",
        "function bomb() { const all = []; for (;;) all.push({ a: [1, 2, 3], b: 'x' + all.length }); }",
    ];
    for source in sources {
        let result = run_function(source, "tool.js", "bomb", &json!({}), &limits);
        assert!(
            matches!(result, Err(JsError::OutOfMemory { limit_bytes }) if limit_bytes == 16 << 20),
            "{source}: {result:?}"
        );
    }
}

#[test]
fn a_huge_string_is_an_error() {
    let source = "function grow() { let s = 'x'; for (;;) s += s; }";
    let result = run(source, "grow", json!({}));
    assert!(
        matches!(
            &result,
            Err(JsError::OutOfMemory { .. } | JsError::Thrown { .. })
        ),
        "{result:?}"
    );
}

#[test]
fn deep_recursion_is_a_stack_overflow() {
    let source =
        "function down(n) {\n  return down(n + 1) + 1;\n}\nfunction deep() { return down(0); }";
    let result = run(source, "deep", json!({}));
    assert!(
        matches!(result, Err(JsError::StackOverflow { line: Some(2) })),
        "{result:?}"
    );
}

#[test]
fn nothing_of_the_host_is_defined() {
    let source = r#"
        function probe() {
            return ["require", "process", "Deno", "Bun", "XMLHttpRequest", "os", "std", "scriptArgs", "__host"]
                .filter((name) => typeof globalThis[name] !== "undefined");
        }
        function useRequire() { return require("fs"); }
        function useProcess() { return process.env; }
        function useDeno() { return Deno.readTextFileSync("/etc/passwd"); }
    "#;
    assert_eq!(run(source, "probe", json!({})).unwrap(), json!([]));
    for (function, message) in [
        (
            "useRequire",
            "ReferenceError: require is not defined (line 6)",
        ),
        (
            "useProcess",
            "ReferenceError: process is not defined (line 7)",
        ),
        ("useDeno", "ReferenceError: Deno is not defined (line 8)"),
    ] {
        assert_eq!(error_text(run(source, function, json!({}))), message);
    }
}

#[test]
fn dynamic_import_fails() {
    let source = "async function load() {\n  return await import('fs');\n}";
    let error = run(source, "load", json!({})).unwrap_err();
    assert!(
        matches!(&error, JsError::Thrown { message, .. } if message.contains("could not load module 'fs'")),
        "{error:?}"
    );
}

#[test]
fn no_state_survives_a_call() {
    let source =
        "function count() { globalThis.calls = (globalThis.calls || 0) + 1; return calls; }";
    assert_eq!(run(source, "count", json!({})).unwrap(), json!(1));
    assert_eq!(run(source, "count", json!({})).unwrap(), json!(1));
}

#[test]
fn reads_the_line_of_the_innermost_frame_in_the_file() {
    let stack = "    at <anonymous> (other.js:9:1)\n    at down (tool.js:2:10)\n    at deep (tool.js:4:27)\n";
    assert_eq!(line_in(stack, "tool.js"), Some(2));
    assert_eq!(line_in("    at tool.js:7:3\n", "tool.js"), Some(7));
    assert_eq!(line_in("    at native\n", "tool.js"), None);
}

#[test]
fn a_promise_that_never_settles_is_named() {
    let source = "function wait() { return new Promise(() => {}); }";
    assert_eq!(
        error_text(run(source, "wait", json!({}))),
        "the returned Promise never settled"
    );
}
