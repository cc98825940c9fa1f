use serde_json::json;

use super::*;

/// A catalog where `person_credits` needs a person id that only the other
/// group's `search_person` finds.
fn dataset() -> crate::Dataset {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("movies");
    std::fs::create_dir(&dir).unwrap();
    let tool = |name: &str, group: &str, required: &[&str]| {
        let properties: serde_json::Map<String, serde_json::Value> = required
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"name": name, "description": format!("{name} tool"), "group": group,
               "parameters": {"type": "object", "properties": properties, "required": required}})
        .to_string()
    };
    let tools = [
        tool("search_person", "search", &["query"]),
        tool("listMovies", "search", &[]),
        tool("person_credits", "person", &["person_id"]),
        tool("movie_details", "movie", &["movieId"]),
        tool("person_images", "person", &["id"]),
    ];
    std::fs::write(dir.join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("queries.jsonl"),
        json!({"id": 1, "query": "q", "tools": ["person_credits"], "groups": ["person"]})
            .to_string()
            + "\n",
    )
    .unwrap();
    crate::Dataset::load(&dir).unwrap()
}

#[test]
fn names_split_at_punctuation_and_case() {
    assert_eq!(words("GET_search-person"), ["get", "search", "person"]);
    assert_eq!(words("movieId"), ["movie", "id"]);
    assert_eq!(words("person_id"), ["person", "id"]);
}

#[test]
fn a_required_id_brings_the_tool_that_finds_it() {
    let dataset = dataset();
    let producers = Producers::new(&dataset.catalog);
    let group = |name: &str| GroupId::new(name).unwrap();
    assert_eq!(
        producers.0.get("person_credits"),
        Some(&(group("search"), "search_person".to_owned()))
    );
    // `movieId` names movies, which `listMovies` lists.
    assert_eq!(
        producers.0.get("movie_details"),
        Some(&(group("search"), "listMovies".to_owned()))
    );
    // A bare `id` names nothing.
    assert!(!producers.0.contains_key("person_images"));

    let counter = toolgate_core::TokenCounter::new(toolgate_core::Encoding::O200kBase).unwrap();
    let costs = Costs::new(&dataset.catalog, &counter);
    let seen = costs.partial_seen(&[(group("person"), vec!["person_credits"])]);
    let widened = producers.widen(&costs, &seen);
    assert!(widened.shows_group(&group("search")));
    assert!(widened.shows_tool("search_person"));
    assert!(!widened.shows_tool("listMovies"));
    assert_eq!(
        widened.tokens,
        seen.tokens + costs.tools.tool("search_person")
    );
}
