use serde_json::json;
use toolgate_core::Encoding;
use toolgate_core::routing::RoutingConfig;

use super::*;
use crate::dataset::Dataset;

const WORDS: [&str; 7] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
];

/// Seven groups of two tools each (`alpha_find`, `alpha_list`, ...), whose
/// schemas cost what real ones do (a one-line answer is a small share of
/// them), and one query per group count: the first needs every group, each
/// later one a group fewer. A query names its groups and shares no word
/// with the others.
fn seven_groups(dir: &std::path::Path) -> Dataset {
    let properties: serde_json::Map<String, serde_json::Value> = (0..12)
        .map(|i| {
            let description = format!(
                "Option {i} of the request: a filter, a sort order or a page, as the service \
                 documents it, passed through unchanged when given"
            );
            (
                format!("option_{i}"),
                json!({"type": "string", "description": description}),
            )
        })
        .collect();
    let tools: Vec<String> = WORDS
        .iter()
        .flat_map(|word| {
            ["find", "list"].map(|verb| {
                json!({"name": format!("{word}_{verb}"), "group": word,
                       "description": format!("{verb} {word} records"),
                       "parameters": {"type": "object", "properties": properties}})
                .to_string()
            })
        })
        .collect();
    std::fs::write(dir.join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    let queries: Vec<String> = (0..3)
        .map(|fewer| {
            let needed = &WORDS[..WORDS.len() - fewer];
            json!({"id": fewer, "query": needed.join(" and "),
                   "groups": needed, "split": "test"})
            .to_string()
        })
        .collect();
    std::fs::write(dir.join("queries.jsonl"), queries.join("\n") + "\n").unwrap();
    Dataset::load(dir).unwrap()
}

#[test]
fn the_search_lists_as_many_groups_as_the_turns_need_among_those_offered() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = seven_groups(dir.path());
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    let prepared = Prepared::new(&dataset, &RoutingConfig::default(), None, &counter).unwrap();
    let set = ChoiceSet::new(&prepared, &[], false, &counter);
    let queries = set.queries();
    let listed = |groups: usize| {
        find_listing(&prepared, &prepared.taxonomy, groups, &counter, &queries)
            .iter()
            .map(|seen| seen.groups.len())
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(5), [5, 5, 5]);
    assert_eq!(listed(8), [7, 6, 5], "no group the turn does not match");

    // Five groups hold 5/7, 5/6 and 5/5 of the turns' groups; eight hold
    // them all, and twelve no more for the same tokens: the fewer wins.
    let (chosen, measured) = choose_search_groups(&[set], &counter).unwrap();
    assert_eq!(chosen, 8);
    assert_eq!(measured.worst_recall, 1.0);
}
