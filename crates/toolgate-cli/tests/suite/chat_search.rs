//! `toolgate chat` above twelve groups: it offers the gateway's search,
//! whose loads a later run of the conversation restores.

use serde_json::json;
use toolgate_llm::scripted::{ScriptedServer, ScriptedTurn, Wire};

use super::chat::{chat, tool_names};
use super::support::{run, text};

/// Above twelve groups `chat` offers the gateway's search, as `serve` does:
/// the listing gives way to it, the tools it lists are loaded at once (a
/// miss costs the next best tools, not a whole group), and a later run of
/// the conversation restores them.
#[tokio::test]
async fn above_twelve_groups_the_search_loads_what_it_lists_and_a_later_run_restores_it() {
    let wire = Wire::OpenAi;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    let mut groups: Vec<(String, String, String)> = (0..13)
        .map(|i| {
            (
                format!("ledger{i}"),
                format!("ledger{i}_balance"),
                format!("Balance of ledger number {i}"),
            )
        })
        .collect();
    groups.push((
        "weather".into(),
        "weather_forecast".into(),
        "Forecast the weather of a city".into(),
    ));
    for (group, tool, description) in &groups {
        let manifest = json!([
            {"_meta": true, "description": format!("{description} and more")},
            {"name": tool, "description": description,
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": format!("{tool}_history"), "description": format!("History: {description}"),
             "input_schema": {"type": "object", "properties": {}}}
        ]);
        std::fs::write(
            dir.path().join(format!("tools/{group}.json")),
            manifest.to_string(),
        )
        .unwrap();
    }
    let server = ScriptedServer::start().await.unwrap();
    server.push(
        ScriptedTurn::tool_call(
            "c1",
            "find_tool_groups",
            json!({"query": "weather forecast for a city"}),
        )
        .reply(wire, false),
    );
    server.push(ScriptedTurn::text("Found it.").reply(wire, false));
    server.push(ScriptedTurn::text("Still there.").reply(wire, false));
    let args = ["--conversation", "s1", "-m", "forecast for Oslo"];
    let output = run(chat(&server, wire, dir.path(), &args), "").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let requests = server.requests();
    assert!(
        tool_names(&requests[0]).contains(&"find_tool_groups".to_owned()),
        "{:?}",
        tool_names(&requests[0])
    );
    let answer = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(answer.contains("weather_forecast"), "{answer}");
    let found = tool_names(&requests[1]);
    assert!(
        found.contains(&"weather_forecast".to_owned()),
        "the tools the search listed are loaded: {found:?}"
    );
    let loaded = found.len() - tool_names(&requests[0]).len();
    assert_eq!(
        loaded, 10,
        "a search loads its best ten tools, not whole groups: {found:?}"
    );

    let args = ["--conversation", "s1", "-m", "and tomorrow?"];
    let output = run(chat(&server, wire, dir.path(), &args), "").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        tool_names(&server.requests()[2]),
        found,
        "a later run restores what the search loaded"
    );
}
