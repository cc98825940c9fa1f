use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::fixtures::write_dataset;

/// Twenty conversations of three turns, written last turn first.
fn conversations() -> Vec<serde_json::Value> {
    let mut queries = Vec::new();
    for conversation in 0..20 {
        for turn in (1..=3).rev() {
            queries.push(json!({
                "id": format!("c{conversation}-t{turn}"),
                "query": format!("turn {turn} of c{conversation}"),
                "groups": ["mail"],
                "conversation_id": format!("c{conversation}"),
                "turn": turn,
            }));
        }
    }
    queries
}

#[test]
fn the_split_keeps_a_conversations_turns_together_and_is_stable() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &conversations());
    let dataset = Dataset::load(dir.path()).unwrap();
    assert_eq!(
        dataset.split_rule,
        "tuned on 30% of the conversations (stable hash of the id), reported on the other 70%"
    );
    let tuned = |dataset: &Dataset| -> Vec<String> {
        let mut ids: Vec<String> = dataset
            .queries
            .iter()
            .filter(|q| q.tune)
            .map(|q| q.id.split('-').next().unwrap().to_owned())
            .collect();
        ids.dedup();
        ids
    };
    for conversation in dataset.queries.chunks(3) {
        assert!(
            conversation.iter().all(|q| q.tune == conversation[0].tune),
            "{conversation:?}"
        );
    }
    // The hash is FNV-1a of the conversation id: the same conversations on
    // every run and every platform.
    assert_eq!(
        tuned(&dataset),
        ["c4", "c5", "c12", "c13", "c15", "c18", "c19"]
    );
    assert_eq!(tuned(&Dataset::load(dir.path()).unwrap()), tuned(&dataset));
}

#[test]
fn the_stable_hash_is_fnv_1a() {
    assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(stable_hash("foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn a_turn_has_the_earlier_turns_of_its_conversation_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &conversations());
    let dataset = Dataset::load(dir.path()).unwrap();
    let contexts: Vec<(&str, Vec<String>)> = dataset.queries[..3]
        .iter()
        .map(|q| (q.id.as_str(), q.context.clone()))
        .collect();
    assert_eq!(
        contexts,
        [
            (
                "c0-t3",
                vec!["turn 1 of c0".to_owned(), "turn 2 of c0".to_owned()]
            ),
            ("c0-t2", vec!["turn 1 of c0".to_owned()]),
            ("c0-t1", vec![]),
        ]
    );
}

#[test]
fn a_dev_split_is_the_tuning_part_and_unknown_gold_groups_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(
        dir.path(),
        &[
            json!({"id": 7, "query": "send mail", "tools": ["mail_send"], "groups": ["mail", "fax"], "split": "dev"}),
            json!({"id": "q2", "query": "forecast", "groups": ["weather"], "split": "test"}),
        ],
    );
    let dataset = Dataset::load(dir.path()).unwrap();
    assert_eq!(
        dataset.split_rule,
        "tuned on the `dev` split, reported on the others"
    );
    let queries: Vec<(&str, bool, Vec<&str>, usize)> = dataset
        .queries
        .iter()
        .map(|q| {
            let groups = q.gold_groups.iter().map(GroupId::as_str).collect();
            (q.id.as_str(), q.tune, groups, q.index)
        })
        .collect();
    assert_eq!(
        queries,
        [
            ("7", true, vec!["mail"], 0),
            ("q2", false, vec!["weather"], 1)
        ]
    );
    assert_eq!(
        dataset.name,
        dir.path().file_name().unwrap().to_string_lossy()
    );
}

#[test]
fn a_bad_query_line_is_reported_with_its_path_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[json!({"id": 1, "query": "send mail"})]);
    let path = dir.path().join("queries.jsonl");
    std::fs::write(
        &path,
        "{\"id\": 1, \"query\": \"send mail\"}\n\n{\"id\": 2}\n",
    )
    .unwrap();
    let error = Dataset::load(dir.path()).unwrap_err();
    assert!(
        matches!(error, EvalError::Query { line: 3, .. }),
        "{error:?}"
    );
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert_eq!(
        format!("{error}: {cause}"),
        format!(
            "{}: line 3: missing field `query` at line 1 column 9",
            path.display()
        )
    );
}

#[test]
fn a_missing_queries_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), &[]);
    let path = dir.path().join("queries.jsonl");
    std::fs::remove_file(&path).unwrap();
    let error = Dataset::load(dir.path()).unwrap_err();
    assert!(matches!(error, EvalError::ReadQueries { .. }), "{error:?}");
    assert_eq!(error.to_string(), path.display().to_string());
}

#[test]
fn a_query_keeps_gold_tools_and_groups_whose_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(70);
    let tool = |name: &str, group: &str| {
        json!({"name": name, "description": "d", "parameters": {"type": "object"}, "group": group})
            .to_string()
    };
    let tools = [
        tool(&long, "docs"),
        tool("PDF&URLTool", "docs"),
        tool("a b", "docs"),
        tool("a_b", "docs"),
        tool("tab_tool", "Public\tHealth"),
    ];
    std::fs::write(dir.path().join("tools.jsonl"), tools.join("\n")).unwrap();
    let query = json!({
        "id": 1,
        "query": "all of them",
        "tools": [&long, "PDF&URLTool", "a b", "a_b", "tab_tool", "no such tool"],
        "groups": ["docs", "Public\tHealth", "no such group"],
    });
    std::fs::write(dir.path().join("queries.jsonl"), query.to_string()).unwrap();
    let dataset = Dataset::load(dir.path()).unwrap();
    assert_eq!(dataset.skipped, Vec::<String>::new());
    let names: Vec<String> = dataset
        .catalog
        .tools()
        .filter(|tool| matches!(tool.origin, toolgate_core::Origin::Import { .. }))
        .map(|tool| tool.definition.name.to_string())
        .collect();
    let long_loaded = names[0].clone();
    let a_b_loaded = names[2].clone();
    assert_eq!(
        names,
        [
            long_loaded.as_str(),
            "PDF_URLTool",
            a_b_loaded.as_str(),
            "a_b",
            "tab_tool"
        ]
    );
    assert!(long_loaded.starts_with(&"x".repeat(55)), "{long_loaded}");
    assert!(a_b_loaded.starts_with("a_b_"), "{a_b_loaded}");
    let query = &dataset.queries[0];
    // Every gold tool names a loaded tool, but the one the catalog never had.
    assert_eq!(
        query.gold_tools,
        [
            long_loaded.as_str(),
            "PDF_URLTool",
            a_b_loaded.as_str(),
            "a_b",
            "tab_tool",
            "no such tool"
        ]
    );
    let groups: Vec<&str> = query.gold_groups.iter().map(GroupId::as_str).collect();
    assert_eq!(groups, ["docs", "Public Health"]);
    assert_eq!(dataset.renamed.len(), 4, "{:?}", dataset.renamed);
    assert!(
        dataset.renamed[1].ends_with(
            ": loaded as `PDF_URLTool`: tool name `PDF&URLTool` has the character '&', outside MCP's A-Za-z0-9_./-"
        ),
        "{}",
        dataset.renamed[1]
    );
}
