//! Manifest tools with a `.js` file beside their manifest run in JavaScript:
//! values, thrown errors, time limits and Promises come back as tool
//! results, and the toolbox keeps answering whatever a script does.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_tools::{
    Authority, CallContext, JavaScriptConfig, ToolOutput, Toolbox, ToolboxOptions,
};

use super::calls::call;

const MATHX_JSON: &str = r#"[
  {"_meta": true, "display_name": "Math", "description": "Arithmetic in JavaScript"},
  {"name": "mathx_add", "function": "add", "description": "Adds a and b",
   "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
  {"name": "mathx_fail", "function": "fail", "description": "Throws"},
  {"name": "mathx_spin", "function": "spin", "description": "Never ends"},
  {"name": "mathx_later", "function": "later", "description": "Answers through a Promise"},
  {"name": "mathx_stats", "function": "stats", "description": "Returns an object"},
  {"name": "greet", "description": "A tool whose function is its name",
   "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}}
]"#;

const MATHX_JS: &str = r#"function add(args) {
  return args.a + args.b;
}
function fail() {
  throw new Error("no math today");
}
function spin() {
  for (;;) {}
}
async function later(args) {
  return await Promise.resolve("later, " + JSON.stringify(args));
}
function stats() {
  return {count: 2, items: [1, 2]};
}
const greet = (args) => `hello ${args.who ?? "world"}`;
"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

async fn toolbox(dir: &Path, timeout: Duration) -> (Arc<Toolbox>, toolgate_tools::StartReport) {
    Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.to_path_buf()],
        javascript: JavaScriptConfig {
            timeout,
            ..JavaScriptConfig::default()
        },
        ..ToolboxOptions::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_with_a_script_beside_it_runs_its_functions() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    write(dir.path(), "mathx.js", MATHX_JS);
    let (toolbox, report) = toolbox(dir.path(), Duration::from_secs(10)).await;
    assert!(report.manifest_errors.is_empty(), "{report:?}");

    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 2, "b": 3.5})).await,
        ToolOutput::text("5.5")
    );
    assert_eq!(
        call(&toolbox, "mathx_later", json!({"x": 1})).await,
        ToolOutput::text(r#"later, {"x":1}"#)
    );
    assert_eq!(
        call(&toolbox, "mathx_stats", json!({})).await,
        ToolOutput::json(json!({"count": 2, "items": [1, 2]}))
    );
    assert_eq!(
        call(&toolbox, "greet", json!({"who": "Ada"})).await,
        ToolOutput::text("hello Ada")
    );
    assert_eq!(
        call(&toolbox, "mathx_fail", json!({})).await,
        ToolOutput::error("Tool 'mathx_fail' failed: Error: no math today (mathx.js, line 5)")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_script_times_out_and_the_toolbox_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    write(dir.path(), "mathx.js", MATHX_JS);
    let (toolbox, _) = toolbox(dir.path(), Duration::from_millis(300)).await;

    let started = Instant::now();
    let spinning = {
        let toolbox = Arc::clone(&toolbox);
        tokio::spawn(async move { call(&toolbox, "mathx_spin", json!({})).await })
    };
    // Other calls go on while the script spins.
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 1})).await,
        ToolOutput::text("2")
    );
    assert_eq!(
        spinning.await.unwrap(),
        ToolOutput::error("Tool 'mathx_spin' (mathx.js) timed out after 0.3 s.")
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await,
        ToolOutput::text("3")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_beyond_the_concurrency_limit_wait_their_turn() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    write(dir.path(), "mathx.js", MATHX_JS);
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.path().to_path_buf()],
        javascript: JavaScriptConfig {
            timeout: Duration::from_millis(300),
            max_concurrent_calls: 1,
            ..JavaScriptConfig::default()
        },
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    let spinning = {
        let toolbox = Arc::clone(&toolbox);
        tokio::spawn(async move { call(&toolbox, "mathx_spin", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The one slot is the spinning script's: the sum waits for its time
    // limit (300 ms from its start, at least 250 ms from now).
    let asked = Instant::now();
    assert_eq!(
        call(&toolbox, "mathx_add", json!({"a": 1, "b": 1})).await,
        ToolOutput::text("2")
    );
    assert!(
        asked.elapsed() >= Duration::from_millis(200),
        "{:?}",
        asked.elapsed()
    );
    assert!(spinning.await.unwrap().is_error);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_without_a_script_keeps_answering_that_nothing_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    let (toolbox, report) = toolbox(dir.path(), Duration::from_secs(10)).await;
    assert!(report.manifest_errors.is_empty(), "{report:?}");
    let refused = toolbox
        .call(
            "mathx_add",
            json!({"a": 1, "b": 2}),
            &CallContext::new(Authority::everything()),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Tool 'mathx_add' is defined by a manifest or catalog file but has no implementation in this gateway."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_that_cannot_be_read_is_reported_and_its_tools_say_so() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    // A directory where the script should be: it exists, but is no file.
    std::fs::create_dir(dir.path().join("mathx.js")).unwrap();
    let (toolbox, report) = toolbox(dir.path(), Duration::from_secs(10)).await;
    assert_eq!(report.manifest_errors.len(), 1, "{report:?}");
    let error = &report.manifest_errors[0];
    assert_eq!(error.path, dir.path().join("mathx.js"));
    assert!(
        error.reason.to_string().starts_with("cannot read: "),
        "{error}"
    );

    let output = call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await;
    assert!(output.is_error);
    assert!(
        output.model_text().starts_with(
            "Tool 'mathx_add' cannot run: its JavaScript file mathx.js could not be read ("
        ),
        "{}",
        output.model_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_function_and_a_runaway_allocation_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bomb.json",
        r#"[{"name": "bomb_grow", "function": "grow"}, {"name": "bomb_gone", "function": "gone"}]"#,
    );
    write(
        dir.path(),
        "bomb.js",
        "function grow() { const all = []; for (;;) { all.push(new Array(1000).fill(all.length)); } }\n",
    );
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        manifest_dirs: vec![dir.path().to_path_buf()],
        javascript: JavaScriptConfig {
            memory_mib: 8,
            ..JavaScriptConfig::default()
        },
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(
        call(&toolbox, "bomb_grow", json!({})).await,
        ToolOutput::error("Tool 'bomb_grow' (bomb.js) ran out of memory (limit 8 MiB).")
    );
    assert_eq!(
        call(&toolbox, "bomb_gone", json!({})).await,
        ToolOutput::error("Tool 'bomb_gone' cannot run: bomb.js defines no function `gone`.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_that_does_not_load_is_reported_at_start_and_its_tools_say_so() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mathx.json", MATHX_JSON);
    write(
        dir.path(),
        "mathx.js",
        "function add(args) {\n  return args.a +;\n}\n",
    );
    write(
        dir.path(),
        "boot.json",
        r#"[{"name": "boot_run", "function": "run"}]"#,
    );
    write(
        dir.path(),
        "boot.js",
        "throw new Error('no configuration');\nfunction run() { return 1; }\n",
    );
    let (toolbox, report) = toolbox(dir.path(), Duration::from_secs(10)).await;
    let mut reported: Vec<(String, String)> = report
        .manifest_errors
        .iter()
        .map(|error| {
            (
                error
                    .path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                error.reason.to_string(),
            )
        })
        .collect();
    reported.sort();
    assert_eq!(
        reported,
        [
            (
                "boot.js".to_owned(),
                "does not load: Error: no configuration (line 1)".to_owned()
            ),
            (
                "mathx.js".to_owned(),
                reported[1].1.clone() // the SyntaxError's wording is QuickJS's
            ),
        ]
    );
    assert!(
        reported[1].1.starts_with("does not load: SyntaxError")
            && reported[1].1.ends_with("(line 2)"),
        "{reported:?}"
    );
    assert_eq!(
        call(&toolbox, "boot_run", json!({})).await,
        ToolOutput::error(
            "Tool 'boot_run' cannot run: its JavaScript file boot.js does not load: Error: no configuration (line 1)."
        )
    );
    let output = call(&toolbox, "mathx_add", json!({"a": 1, "b": 2})).await;
    assert!(
        output.is_error
            && output
                .model_text()
                .starts_with("Tool 'mathx_add' cannot run: its JavaScript file mathx.js does not load: SyntaxError"),
        "{output:?}"
    );
}
