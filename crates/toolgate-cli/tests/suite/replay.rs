//! `toolgate eval --replay`: multi-turn conversations replayed through the
//! agent loop, with and without a load budget, on a dataset the test
//! writes.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{text, toolgate};

/// Three groups of two tools; `a` uses files, mail, then files again;
/// `b` uses math twice.
pub(super) fn write_multi_turn(dir: &Path) {
    let tool = |name: &str, group: &str| {
        json!({"name": name, "group": group, "description": format!("The {name} tool."),
               "parameters": {"type": "object",
                              "properties": {"x": {"type": "string", "description": "An input."}},
                              "required": ["x"]}})
    };
    let tools = [
        tool("files_read", "files"),
        tool("files_list", "files"),
        tool("mail_send", "mail"),
        tool("mail_search", "mail"),
        tool("math_add", "math"),
        tool("math_mean", "math"),
    ];
    let lines: Vec<String> = tools.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("tools.jsonl"), lines.join("\n") + "\n").unwrap();
    let turn = |conversation: &str, turn: usize, calls: &[&str]| {
        json!({"id": format!("{conversation}/{turn}"), "query": format!("Turn {turn}."),
               "conversation_id": conversation, "turn": turn, "ground_truth_calls": calls})
    };
    let queries = [
        turn("a", 0, &["files_list(x='reports')", "files_read(x='q1')"]),
        turn("a", 1, &["mail_send('bo')"]),
        turn("a", 2, &["files_read(x='q2')"]),
        turn("b", 0, &["math_add(x='1')"]),
        turn("b", 1, &["math_mean(x='2')"]),
    ];
    let lines: Vec<String> = queries.iter().map(ToString::to_string).collect();
    std::fs::write(dir.join("queries.jsonl"), lines.join("\n") + "\n").unwrap();
}

#[test]
fn eval_replays_conversations_without_a_budget_under_budgets_and_with_all_tools() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("multi");
    std::fs::create_dir(&data).unwrap();
    write_multi_turn(&data);

    // A budget of one token: each group is over it and loaded alone.
    let output = toolgate(dir.path())
        .args([
            "eval",
            "--replay",
            "multi",
            "--budget",
            "1",
            "--json",
            "replay.json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("## Replay: multi\n\n2 conversations, 5 user turns, "),
        "{stdout}"
    );
    let modes: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|line| line.split(" | ").next())
        .filter(|label| !label.starts_with("mode") && !label.starts_with("conversation"))
        .take(3)
        .collect();
    assert_eq!(modes, ["no budget", "budget 1", "all tools"]);
    assert!(stdout.contains("### Per conversation"), "{stdout}");

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("replay.json")).unwrap())
            .unwrap();
    let runs = json[0]["runs"].as_array().unwrap();
    let modes: Vec<&Value> = runs.iter().map(|run| &run["mode"]).collect();
    assert_eq!(
        modes,
        [
            &json!("no_budget"),
            &json!({"budget": 1}),
            &json!("all_tools")
        ]
    );
    // (loads, budget unloads, calls refused for an unloaded tool, other failures)
    let figures: Vec<(u64, u64, u64, u64)> = runs
        .iter()
        .map(|run| {
            let total = &run["total"];
            let count = |key: &str| total[key].as_u64().unwrap();
            (
                count("loads"),
                count("budget_unloads"),
                count("unavailable_calls"),
                count("other_failed_calls"),
            )
        })
        .collect();
    // `a` goes back to files after mail: unloaded, then loaded again.
    assert_eq!(figures, [(3, 0, 0, 0), (4, 2, 0, 0), (0, 0, 0, 0)]);
    let peaks: Vec<u64> = runs
        .iter()
        .map(|run| run["peak_tool_tokens_sum"].as_u64().unwrap())
        .collect();
    assert!(peaks[1] < peaks[0] && peaks[0] < peaks[2], "{peaks:?}");

    // Without --budget: one, two and three median groups.
    let output = toolgate(dir.path())
        .args(["eval", "--replay", "multi"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let budgets = stdout
        .lines()
        .filter(|line| line.starts_with("| budget "))
        .count();
    assert_eq!(budgets, 3, "{stdout}");

    let refused = toolgate(dir.path())
        .args(["eval", "--dataset", "multi", "--budget", "1"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("'--dataset <DIR>' cannot be used with '--budget <TOKENS>'"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn eval_replays_with_the_loaded_schemas_in_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("multi");
    std::fs::create_dir(&data).unwrap();
    write_multi_turn(&data);
    let output = toolgate(dir.path())
        .args([
            "eval",
            "--replay",
            "multi",
            "--budget",
            "1",
            "--loaded-schemas",
            "conversation",
            "--json",
            "replay.json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("A load puts the schemas in its answer, in the conversation"),
        "{}",
        text(&output.stdout)
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("replay.json")).unwrap())
            .unwrap();
    assert_eq!(json[0]["loaded_schemas"], "conversation");
    let runs = json[0]["runs"].as_array().unwrap();
    let figures: Vec<(u64, u64, u64)> = runs
        .iter()
        .map(|run| {
            let total = &run["total"];
            let count = |key: &str| total[key].as_u64().unwrap();
            (
                count("loads"),
                count("budget_unloads"),
                count("unavailable_calls"),
            )
        })
        .collect();
    assert_eq!(figures, [(3, 0, 0), (4, 2, 0), (0, 0, 0)]);

    let wrong = toolgate(dir.path())
        .args(["eval", "--replay", "multi", "--loaded-schemas", "nowhere"])
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr)
            .contains("--loaded-schemas is tool_list or conversation, not \"nowhere\""),
        "{}",
        text(&wrong.stderr)
    );
}
