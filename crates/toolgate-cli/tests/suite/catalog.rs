//! `toolgate catalog`, run as a user runs it: what `toolgate serve` would
//! send. The example catalog's figures are measured without the built-in
//! groups (`--no-builtins`), which are shown on their own.

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
        &[
            "catalog",
            "--manifests",
            dir.to_str().unwrap(),
            "--no-builtins",
            "--json",
        ],
        &dir,
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["encoding"], "o200k_base");
    assert_eq!(report["tools"], 103);
    assert_eq!(report["groups"].as_array().unwrap().len(), 14);
    // The gateway's meta-tools with the catalog's twelve core tools, and
    // its search: the catalog has more than twelve groups.
    let core: Vec<&str> = report["core_tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool.as_str().unwrap())
        .collect();
    assert_eq!(core.len(), 16, "{core:?}");
    assert_eq!(
        [core[0], core[1], core[2], core[15]],
        [
            "load_tool_group",
            "unload_tool_group",
            "call_tool",
            "find_tool_groups"
        ]
    );
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
        &[
            "catalog",
            "--manifests",
            dir.to_str().unwrap(),
            "--no-builtins",
        ],
        &dir,
    ));
    assert!(
        text.starts_with("103 tools in 14 groups, 16 core tools (token counts: o200k_base)\n"),
        "{text}"
    );
    assert!(text.contains("\nGROUP "), "{text}");
    assert!(text.contains("\nconfig "), "{text}");
    assert!(text.contains("\nCORE TOOLS (16, "), "{text}");
    assert!(text.contains("  every tool schema "), "{text}");
    assert!(text.contains("  core tools + listing "), "{text}");
    assert!(text.contains("  reduction "), "{text}");
    assert!(!text.contains("SKIPPED"), "{text}");
}

#[test]
fn prompt_prints_the_section_exactly() {
    let dir = examples_dir();
    let text = stdout(&toolgate(
        &["catalog", "--prompt", "--no-builtins"],
        dir.parent().unwrap(),
    ));
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
    let output = toolgate(
        &["catalog", "--manifests", ".", "--no-builtins"],
        dir.path(),
    );
    let text = stdout(&output);
    assert!(
        text.starts_with("1 tools in 1 groups, 3 core tools"),
        "{text}"
    );
    assert!(
        text.ends_with("\nSKIPPED (1)\n  ./bad.json: entry 0: missing `name`\n"),
        "{text}"
    );

    let json: Value = serde_json::from_str(&stdout(&toolgate(
        &["catalog", "--manifests", ".", "--no-builtins", "--json"],
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
        &[
            "catalog",
            "--jsonl",
            "tools.jsonl",
            "--no-builtins",
            "--prompt",
        ],
        dir.path(),
    ));
    assert!(text.ends_with("\n- alpha: Alpha things\n"), "{text}");
    let text = stdout(&toolgate(
        &[
            "catalog",
            "--jsonl",
            "tools.jsonl",
            "--no-builtins",
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
    let output = toolgate(&["catalog", "--no-builtins"], dir.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: no catalog to show: pass --config FILE (or run where ./toolgate.toml is), \
         --manifests DIR (or run where ./tools is), --jsonl FILE or --mcp-config FILE, or leave \
         out --no-builtins\n"
    );
}

#[test]
fn with_nothing_given_it_shows_what_serve_sends_from_the_config_in_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    // Read as serve reads it: the time group as one tool.
    fs::write(
        dir.path().join("toolgate.toml"),
        "[groups.time]\nexpose = \"polymorphic\"\n",
    )
    .unwrap();
    let report: Value = serde_json::from_str(&stdout(&toolgate(
        &["catalog", "--files-root", ".", "--json"],
        dir.path(),
    )))
    .unwrap();
    let groups: Vec<(&str, u64)> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            (
                group["name"].as_str().unwrap(),
                group["tools"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("time", 1),
            ("files", 3),
            ("web", 1),
            ("js_tool_management", 4),
            ("user_tools", 0)
        ]
    );
    assert_eq!(
        report["core_tools"],
        serde_json::json!(["load_tool_group", "unload_tool_group", "call_tool"])
    );
    // The test's working directory is its home: without --files-root the
    // files group is not served, as by serve, and the report says why.
    let text = stdout(&toolgate(&["catalog"], dir.path()));
    assert!(
        text.ends_with(&format!(
            "\nNOT SERVED\n  files: the working directory is {} (your home directory); give \
             --files-root DIR to serve a directory\n",
            dir.path().canonicalize().unwrap().display()
        )),
        "{text}"
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
