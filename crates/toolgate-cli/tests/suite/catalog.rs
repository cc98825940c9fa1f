//! `toolgate catalog`, run as a user runs it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use pretty_assertions::assert_eq;
use serde_json::Value;

fn toolgate(args: &[&str], cwd: &Path) -> Output {
    super::support::toolgate(cwd).args(args).output().unwrap()
}

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/tools")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn json_report_on_the_example_catalog_is_consistent() {
    let dir = examples_dir();
    let output = toolgate(
        &["catalog", "--manifests", dir.to_str().unwrap(), "--json"],
        &dir,
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["encoding"], "o200k_base");
    assert_eq!(report["tools"], 103);
    assert_eq!(report["groups"].as_array().unwrap().len(), 14);
    assert_eq!(report["core_tools"].as_array().unwrap().len(), 13);
    assert_eq!(report["core_tools"][0], "load_tool_group");
    let turn1 = report["turn1_tokens"].as_u64().unwrap();
    let all = report["all_tools_tokens"].as_u64().unwrap();
    assert_eq!(
        turn1,
        report["core_tools_tokens"].as_u64().unwrap() + report["listing_tokens"].as_u64().unwrap()
    );
    let group_tokens: u64 = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["tokens"].as_u64().unwrap())
        .sum();
    assert!(
        group_tokens < all,
        "core tools count in all_tools_tokens too"
    );
    let reduction = report["reduction"].as_f64().unwrap();
    assert!((reduction - (1.0 - turn1 as f64 / all as f64)).abs() < 1e-9);
    assert!(reduction > 0.0 && reduction < 1.0);
    assert_eq!(report["errors"], Value::Array(vec![]));
}

#[test]
fn text_report_lists_groups_core_tools_and_turn_one() {
    let dir = examples_dir();
    let text = stdout(&toolgate(
        &["catalog", "--manifests", dir.to_str().unwrap()],
        &dir,
    ));
    assert!(
        text.starts_with("103 tools in 14 groups, 13 core tools (token counts: o200k_base)\n"),
        "{text}"
    );
    assert!(text.contains("\nGROUP "), "{text}");
    assert!(text.contains("\nconfig "), "{text}");
    assert!(text.contains("\nCORE TOOLS (13, "), "{text}");
    assert!(text.contains("  every tool schema "), "{text}");
    assert!(text.contains("  core tools + listing "), "{text}");
    assert!(text.contains("  reduction "), "{text}");
    assert!(!text.contains("SKIPPED"), "{text}");
}

#[test]
fn prompt_prints_the_section_exactly() {
    let dir = examples_dir();
    let text = stdout(&toolgate(&["catalog", "--prompt"], dir.parent().unwrap()));
    assert!(text.starts_with(
        "## Available Tool Groups\n\nUse `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\n- "
    ));
    assert_eq!(text.lines().count(), 4 + 14);
}

#[test]
fn bad_manifests_are_listed_with_their_path_and_the_rest_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("good.json"),
        r#"[{"name": "ok_tool", "description": "Fine"}]"#,
    )
    .unwrap();
    fs::write(
        dir.path().join("bad.json"),
        r#"[{"description": "no name"}]"#,
    )
    .unwrap();
    let output = toolgate(&["catalog", "--manifests", "."], dir.path());
    let text = stdout(&output);
    assert!(
        text.starts_with("1 tools in 1 groups, 1 core tools"),
        "{text}"
    );
    assert!(
        text.ends_with("\nSKIPPED (1)\n  ./bad.json: entry 0: missing `name`\n"),
        "{text}"
    );

    let json: Value = serde_json::from_str(&stdout(&toolgate(
        &["catalog", "--manifests", ".", "--json"],
        dir.path(),
    )))
    .unwrap();
    assert_eq!(
        json["errors"],
        serde_json::json!([{"path": "./bad.json", "reason": "entry 0: missing `name`"}])
    );
}

#[test]
fn a_jsonl_catalog_imports_with_groups_and_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("tools.jsonl"),
        concat!(
            r#"{"name": "a_tool", "description": "A", "parameters": {"type": "object"}, "group": "alpha"}"#,
            "\n",
            r#"{"name": "bad_schema", "parameters": {"type": "array"}, "group": "alpha"}"#,
            "\n",
        ),
    )
    .unwrap();
    fs::write(
        dir.path().join("groups.jsonl"),
        r#"{"group": "alpha", "description": "Alpha things"}"#,
    )
    .unwrap();
    let text = stdout(&toolgate(
        &["catalog", "--jsonl", "tools.jsonl", "--prompt"],
        dir.path(),
    ));
    assert!(text.ends_with("\n- alpha: Alpha things\n"), "{text}");
    let text = stdout(&toolgate(
        &[
            "catalog",
            "--jsonl",
            "tools.jsonl",
            "--encoding",
            "cl100k_base",
        ],
        dir.path(),
    ));
    assert!(text.contains("(token counts: cl100k_base)"), "{text}");
    assert!(
        text.contains("tools.jsonl: line 2: tool `bad_schema`: input schema"),
        "{text}"
    );
}

#[test]
fn without_a_source_it_says_what_to_pass() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolgate(&["catalog"], dir.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: no catalog to show: pass --manifests DIR or --jsonl FILE (or run where ./tools exists)\n"
    );
}

#[test]
fn a_missing_jsonl_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolgate(&["catalog", "--jsonl", "nope.jsonl"], dir.path());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: cannot import the catalog: nope.jsonl: No such file"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_encoding_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolgate(&["catalog", "--encoding", "p50k"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown encoding `p50k`"));
}
