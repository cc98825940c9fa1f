//! `toolgate eval` on the small labelled dataset of the routing tests.

use serde_json::Value;

use super::routing::{GROUPS, QUERIES, toolgate, write_dataset};
use super::support::text;

#[test]
fn eval_blends_in_the_local_embedding_model_when_given_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("small");
    std::fs::create_dir(&data).unwrap();
    write_dataset(&data);
    let model = super::support::peers().embed_model;
    let output = toolgate(
        &[
            "eval",
            "--dataset",
            "small",
            "--embed-model",
            model.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    // The tool-first router, each fusion method alone and fused, and tool
    // search by each, compared at the same tokens.
    for row in [
        "| tool_router |",
        "| tool_router[embedding, ",
        "| tool_router[rrf(k=60), ",
    ] {
        assert!(stdout.contains(row), "{row} in {stdout}");
    }
    assert!(
        stdout.contains(
            "| bm25 | embedding | rrf(k=60) | blend(0.5) | blend(0.5, median) | margin over the best |"
        ),
        "{stdout}"
    );
    assert!(
        text(&output.stderr)
            .contains("small: 9 tools and 12 queries embedded with all-MiniLM-L6-v2"),
        "{}",
        text(&output.stderr)
    );

    let missing = toolgate(
        &[
            "eval",
            "--dataset",
            "small",
            "--embed-model",
            "no-such-model",
        ],
        dir.path(),
    );
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("loading the embedding model in no-such-model"),
        "{}",
        text(&missing.stderr)
    );
}

#[test]
fn eval_leaves_each_dataset_out_of_the_fit_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["one", "two"] {
        let data = dir.path().join(name);
        std::fs::create_dir(&data).unwrap();
        write_dataset(&data);
    }
    let model = super::support::peers().embed_model;
    let output = toolgate(
        &[
            "eval",
            "--leave-one-out",
            "--dataset",
            "one",
            "--dataset",
            "two",
            "--embed-model",
            model.to_str().unwrap(),
        ],
        dir.path(),
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(stdout.starts_with("## one\n"), "{stdout}");
    assert!(
        stdout.contains("Left out: router settings fitted on two only: confidence per-group"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Left out: router settings fitted on one only"),
        "{stdout}"
    );
    // Both datasets against the goals, after their tables and before the settings.
    let summary = stdout
        .split("## Against the goals\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary in {stdout}"));
    assert!(
        summary.contains("\n| one | ") && summary.contains("\n| two | "),
        "{summary}"
    );
    assert!(summary.contains("Recall goal met on "), "{summary}");
    assert!(summary.contains("## Fitted on every dataset"), "{summary}");

    let alone = toolgate(&["eval", "--leave-one-out", "--dataset", "one"], dir.path());
    assert!(!alone.status.success());
    assert!(
        text(&alone.stderr).contains("leaving one dataset out needs at least two datasets, got 1"),
        "{}",
        text(&alone.stderr)
    );
}

#[test]
fn eval_reports_every_policy_as_markdown_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("small");
    std::fs::create_dir(&data).unwrap();
    write_dataset(&data);
    let output = toolgate(
        &[
            "eval",
            "--dataset",
            "small",
            "--json",
            "eval.json",
            "--svg",
            "eval.svg",
            "--plot",
            "cost.svg",
        ],
        dir.path(),
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.starts_with("## small\n\n9 tools in 3 groups, "),
        "{stdout}"
    );
    assert!(
        stdout.contains("6 queries reported, 6 for tuning: tuned on the `dev` split"),
        "{stdout}"
    );
    for policy in [
        "all_tools",
        "core_listing",
        "tiered_router",
        "bm25_tools@",
        "bm25_groups@1",
    ] {
        assert!(
            stdout.contains(&format!("| {policy}")),
            "{policy} missing: {stdout}"
        );
    }

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("eval.json")).unwrap())
            .unwrap();
    let policies = json[0]["policies"].as_array().unwrap();
    let by_name = |name: &str| policies.iter().find(|p| p["policy"] == name).unwrap();
    for field in [
        "policy",
        "group_recall",
        "tool_recall",
        "mean_visible_tokens",
        "token_fraction",
        "p50_decision_us",
    ] {
        assert!(policies.iter().all(|p| p.get(field).is_some()), "{field}");
    }
    assert_eq!(by_name("all_tools")["group_recall"], 1.0);
    assert_eq!(by_name("all_tools")["token_fraction"], 1.0);
    assert_eq!(by_name("core_listing")["group_recall"], 0.0);
    let router = by_name("tiered_router");
    assert_eq!(
        router["group_recall"], 1.0,
        "every test query names its group: {router}"
    );
    assert!(router["token_fraction"].as_f64().unwrap() < 1.0, "{router}");
    // The same decisions, groups sent as polymorphic tools: same recall,
    // other tokens.
    let polymorphic = by_name("tiered_router(polymorphic)");
    assert_eq!(polymorphic["group_recall"], router["group_recall"]);
    assert_ne!(
        polymorphic["mean_visible_tokens"],
        router["mean_visible_tokens"]
    );
    // What a task costs: every policy against all-tools, the summary and
    // the assumptions printed, the plot written.
    let costs = json[0]["task_costs"].as_array().unwrap();
    assert_eq!(costs[0]["policy"], "all_tools");
    assert_eq!(costs[0]["uncached_share"], 1.0);
    // Within the default window of 200,000 tokens, every row fits.
    assert_eq!(json[0]["context_window"], 200_000);
    assert!(costs.iter().all(|c| c["fits"] == true), "{costs:?}");
    // Each job's default: an `auto` row per agent marked, the choice
    // recorded, and what it must hold printed.
    let defaults: Vec<(&Value, &Value)> = costs
        .iter()
        .filter(|c| c["default"] == true)
        .map(|c| (&c["job"], &c["agent"]))
        .collect();
    assert_eq!(defaults.len(), 4, "{defaults:?}");
    let chosen = json[0]["defaults"].as_array().unwrap();
    let jobs: Vec<&Value> = chosen.iter().map(|d| &d["job"]).collect();
    assert_eq!(jobs, ["chat", "serve"]);
    assert!(
        chosen.iter().all(|d| d["sends_all_tools"] == true),
        "{chosen:?}"
    );
    assert!(
        stdout.contains("## What each default must hold"),
        "{stdout}"
    );
    // Two agents, each with the schemas in the tool list and in the
    // conversation (and a router's showing there too).
    for (policy, rows) in [
        ("listing", 4),
        ("find_tool_groups", 4),
        ("tiered_router", 6),
        ("tool_search@3", 4),
    ] {
        // As the hosts run it; other listing forms and the keyword query
        // are compared in rows marked with their variant.
        let rows_of: Vec<&Value> = costs
            .iter()
            .filter(|c| c["policy"] == policy && c["variant"].is_null())
            .collect();
        assert_eq!(rows_of.len(), rows, "{policy}");
        let rows = rows_of;
        assert!(
            rows.iter()
                .all(|r| r["uncached_share"].as_f64().unwrap() > 0.0),
            "{policy}"
        );
    }
    // The floor: exactly the gold tools on the first call, no round trip.
    let ideal: Vec<&Value> = costs
        .iter()
        .filter(|c| c["policy"] == "gold_tools(ideal router)")
        .collect();
    assert_eq!(ideal.len(), 2, "in the tool list, and in the conversation");
    for row in ideal {
        assert_eq!(row["extra_round_trips"], 0.0, "{row}");
        assert_eq!(row["done"], 1.0, "{row}");
        assert!(row["uncached_share"].as_f64().unwrap() < 1.0, "{row}");
    }
    assert!(
        stdout.contains("## What a task costs with each job's default, per catalog"),
        "{stdout}"
    );
    assert!(stdout.contains("| cache | input $/M |"), "{stdout}");
    let plot = std::fs::read_to_string(dir.path().join("cost.svg")).unwrap();
    assert!(plot.contains("extra round trips per task"), "{plot}");
    let svg = std::fs::read_to_string(dir.path().join("eval.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("tiered_router"),
        "{svg}"
    );
}

#[test]
fn eval_prints_the_settings_it_tuned_a_dataset_to_and_they_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("small");
    std::fs::create_dir(&data).unwrap();
    write_dataset(&data);
    let output = toolgate(&["eval", "--dataset", "small"], dir.path());
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let heading = "## Fitted on small\n\n[routing] settings for each fusion method, fitted on small's tuning part:\n\n```toml\n";
    let start = stdout.find(heading).unwrap_or_else(|| panic!("{stdout}")) + heading.len();
    // The first method's settings: up to the blank line before the next.
    let block = &stdout[start..];
    // The first method's settings end at a blank line or at the fence,
    // whichever comes first (more sections follow the block).
    let end = [block.find("\n\n"), block.find("```")]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
    let first = &block[..end];
    assert!(first.starts_with("# bm25: group recall "), "{first}");
    assert!(
        !first.contains("hardest"),
        "one dataset has no hardest: {first}"
    );
    for key in [
        "[routing]",
        "route_above = ",
        "per_group = ",
        "calibration = ",
    ] {
        assert!(first.contains(key), "{key} missing: {first}");
    }

    std::fs::write(dir.path().join("fitted.toml"), first).unwrap();
    let routed = toolgate(
        &[
            "route",
            "what is the weather forecast in Paris",
            "--jsonl",
            "small/tools.jsonl",
            "--no-builtins",
            "--json",
            "--config",
            "fitted.toml",
        ],
        dir.path(),
    );
    assert!(routed.status.success(), "{}", text(&routed.stderr));
    let decision: Value = serde_json::from_slice(&routed.stdout).unwrap();
    assert_eq!(decision["routed"][0], "weather", "{decision}");
}

/// With `[routing.embeddings]`, eval embeds the tools and the queries through
/// the endpoint (batched) and reports the semantic and fused policies beside
/// the lexical ones.
#[tokio::test]
async fn eval_measures_the_blended_router_through_an_embeddings_endpoint() {
    use toolgate_llm::scripted::{ScriptedServer, embeddings_reply};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("small");
    std::fs::create_dir(&data).unwrap();
    write_dataset(&data);
    let server = ScriptedServer::start().await.unwrap();
    let axis = |group: &str| match group {
        "mail" => vec![1.0, 0.0, 0.0],
        "calendar" => vec![0.0, 1.0, 0.0],
        _ => vec![0.0, 0.0, 1.0],
    };
    let tools: Vec<Vec<f32>> = GROUPS
        .iter()
        .flat_map(|(g, _, tools)| tools.iter().map(move |_| axis(g)))
        .collect();
    let queries: Vec<Vec<f32>> = QUERIES
        .iter()
        .map(|(_, tool, _)| axis(tool.split('_').next().unwrap()))
        .collect();
    server.push(embeddings_reply(&tools));
    server.push(embeddings_reply(&queries));
    // The queries' keyword rewrites, which find_tool_groups is also asked.
    server.push(embeddings_reply(&queries));
    std::fs::write(
        dir.path().join("toolgate.toml"),
        format!(
            "[routing.embeddings]\nbase_url = \"{}/v1\"\nmodel = \"embedder\"\nweight = 0.5\n",
            server.url()
        ),
    )
    .unwrap();
    let cwd = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        toolgate(
            &[
                "eval",
                "--dataset",
                "small",
                "--config",
                "toolgate.toml",
                "--json",
                "eval.json",
            ],
            &cwd,
        )
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("small: 9 tools and 12 queries embedded with embedder"),
        "{}",
        text(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(requests[0].body["input"].as_array().unwrap().len(), 9);
    assert_eq!(requests[1].body["input"][0], "send an email to Anna");
    assert_eq!(requests[2].body["input"][0], "send email anna");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("eval.json")).unwrap())
            .unwrap();
    let semantic = json[0]["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["policy"]
                .as_str()
                .is_some_and(|name| name.starts_with("tool_router[embedding"))
        })
        .expect("the semantic router is reported");
    assert_eq!(semantic["group_recall"], 1.0, "{semantic}");
}

#[test]
fn eval_says_which_policies_do_not_fit_in_the_context_window() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("small");
    std::fs::create_dir(&data).unwrap();
    write_dataset(&data);
    let output = toolgate(
        &[
            "eval",
            "--dataset",
            "small",
            "--context-window",
            "100",
            "--json",
            "eval.json",
        ],
        dir.path(),
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("Context window assumed: 100 tokens; every schema ("),
        "{stdout}"
    );
    assert!(
        stdout.contains("| all_tools (does not fit) | baseline |"),
        "{stdout}"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("eval.json")).unwrap())
            .unwrap();
    assert_eq!(json[0]["context_window"], 100);
    let all_tools = &json[0]["task_costs"][0];
    assert_eq!(
        (
            &all_tools["fits"],
            &all_tools["done"],
            &all_tools["over_window"]
        ),
        (&Value::Bool(false), &Value::from(0.0), &Value::from(1.0))
    );
}
