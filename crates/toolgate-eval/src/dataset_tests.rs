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
