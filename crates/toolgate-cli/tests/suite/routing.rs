//! `toolgate route` on a small labelled dataset written here in the
//! normalized layout (which `toolgate eval`'s tests share).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::support::text;

/// A group: name, description, and its tools with their descriptions.
pub(super) type Group = (
    &'static str,
    &'static str,
    [(&'static str, &'static str); 3],
);

pub(super) const GROUPS: [Group; 3] = [
    (
        "mail",
        "Email",
        [
            ("mail_send", "Send an email message to a recipient"),
            ("mail_search", "Search the inbox for email messages"),
            ("mail_delete", "Delete an email message"),
        ],
    ),
    (
        "calendar",
        "Calendar events",
        [
            (
                "calendar_create_event",
                "Create a calendar event or meeting",
            ),
            (
                "calendar_list_events",
                "List upcoming calendar events and meetings",
            ),
            ("calendar_cancel_event", "Cancel a meeting"),
        ],
    ),
    (
        "weather",
        "Weather",
        [
            ("weather_forecast", "Weather forecast for a city"),
            (
                "weather_current",
                "Current temperature and conditions in a city",
            ),
            ("weather_alerts", "Severe weather alerts for a region"),
        ],
    ),
];

pub(super) const QUERIES: [(&str, &str, &str); 12] = [
    ("send an email to Anna", "mail_send", "dev"),
    ("what is the forecast for Paris", "weather_forecast", "dev"),
    ("create a meeting on Monday", "calendar_create_event", "dev"),
    ("search my inbox for invoices", "mail_search", "dev"),
    ("any storm alerts in Texas", "weather_alerts", "dev"),
    ("cancel my 3pm meeting", "calendar_cancel_event", "dev"),
    ("delete the email from Bob", "mail_delete", "test"),
    ("current temperature in Rome", "weather_current", "test"),
    ("list my upcoming events", "calendar_list_events", "test"),
    ("email the report to Carla", "mail_send", "test"),
    (
        "will it rain tomorrow in Oslo, forecast please",
        "weather_forecast",
        "test",
    ),
    (
        "schedule a calendar event with the team",
        "calendar_create_event",
        "test",
    ),
];

pub(super) fn write_dataset(dir: &Path) {
    let mut tools = String::new();
    let mut groups = String::new();
    for (group, description, members) in GROUPS {
        groups.push_str(&format!(
            "{}\n",
            json!({"group": group, "description": description, "n_tools": 3})
        ));
        for (name, text) in members {
            tools.push_str(&format!(
                "{}\n",
                json!({"name": name, "description": text, "group": group,
                       "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}})
            ));
        }
    }
    let mut queries = String::new();
    for (index, (query, tool, split)) in QUERIES.iter().enumerate() {
        let group = tool.split('_').next().unwrap();
        queries.push_str(&format!(
            "{}\n",
            json!({"id": index, "query": query, "tools": [tool], "groups": [group], "split": split})
        ));
    }
    std::fs::write(dir.join("tools.jsonl"), tools).unwrap();
    std::fs::write(dir.join("groups.jsonl"), groups).unwrap();
    std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
}

pub(super) fn toolgate(args: &[&str], cwd: &Path) -> Output {
    // Tool vectors are cached, and `route` looks for chat's store, under
    // the test's directory, not the home.
    super::support::toolgate(cwd).args(args).output().unwrap()
}

#[test]
fn route_prints_the_decision_for_a_query() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    let output = toolgate(
        &[
            "route",
            "what is the weather forecast in Paris",
            "--jsonl",
            "tools.jsonl",
            "--no-builtins",
            "--json",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let decision: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(decision["routed"][0], "weather");
    assert_eq!(decision["intent"], "weather");
    assert!(
        decision["visible_tokens"].as_u64().unwrap()
            < decision["all_tools_tokens"].as_u64().unwrap()
    );
    // Its self-test: the nine tools' descriptions as turns, each group's
    // found by its other two tools; the confidence restates the fitted one.
    let test = &decision["self_test"];
    assert_eq!(
        (test["probes"].as_u64(), test["held"].as_u64()),
        (Some(9), Some(9)),
        "{decision}"
    );
    assert_ne!(
        decision["confidence"], decision["fitted_confidence"],
        "{decision}"
    );

    let plain = toolgate(
        &[
            "route",
            "send an email",
            "--jsonl",
            "tools.jsonl",
            "--no-builtins",
        ],
        dir.path(),
    );
    let stdout = text(&plain.stdout);
    assert!(stdout.contains("routed:     mail\n"), "{stdout}");
    assert!(stdout.contains("tier)"), "{stdout}");
    assert!(
        stdout.contains("self-test:  9 of this catalog's tools routed as turns, 100.0% to their own group (and the finder of any id they require); the confidence restates the fitted "),
        "{stdout}"
    );
}

#[test]
fn route_shows_a_partly_loaded_group_with_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[routing]\nroute_tools = 0\ntools_per_group = 1\n",
    )
    .unwrap();
    let args = [
        "route",
        "send an email",
        "--jsonl",
        "tools.jsonl",
        "--no-builtins",
    ];
    let plain = toolgate(&args, dir.path());
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    let stdout = text(&plain.stdout);
    assert!(
        stdout.contains("visible:    mail (1 of 3 tools: mail_send)\n"),
        "{stdout}"
    );
    // The two core meta-tools and mail_send.
    assert!(stdout.contains(" for 3 tools ("), "{stdout}");

    let json = toolgate(&[&args[..], &["--json"]].concat(), dir.path());
    let decision: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        decision["partial_groups"],
        json!([{"group": "mail", "tools": ["mail_send"], "group_tools": 3}])
    );
    assert_eq!(decision["visible_tools"], 3);
}

#[test]
fn route_shows_the_tool_that_finds_a_required_id() {
    let dir = tempfile::tempdir().unwrap();
    // `person_credits` requires a person id that only the search group's
    // `search_person` finds; the turn names the credits alone.
    let tool = |name: &str, group: &str, description: &str, required: &[&str]| {
        let properties: serde_json::Map<String, Value> = required
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"name": name, "description": description, "group": group,
               "parameters": {"type": "object", "properties": properties, "required": required}})
        .to_string()
    };
    let tools = [
        tool(
            "search_person",
            "search",
            "Looks people up by name",
            &["query"],
        ),
        tool(
            "search_keyword",
            "search",
            "Looks tags up, actor or crew",
            &["query"],
        ),
        tool(
            "person_credits",
            "person",
            "Filmography credits",
            &["person_id"],
        ),
        tool(
            "person_images",
            "person",
            &"Portrait photographs in many sizes and formats. ".repeat(30),
            &["id"],
        ),
    ];
    std::fs::write(dir.path().join("tools.jsonl"), tools.join("\n") + "\n").unwrap();
    let args = [
        "route",
        "the filmography credits of this actor",
        "--jsonl",
        "tools.jsonl",
        "--no-builtins",
    ];
    let routed = |finders: bool| {
        std::fs::write(
            dir.path().join("toolgate.toml"),
            // A catalog this small leaves no room for a finder within the
            // default budget: the listing alone costs most of it.
            format!(
                "[routing]\nroute_tools = 0\nroute_above = 0.5\ntools_per_group = 1\nmax_token_share = 1.0\nid_finders = {finders}\n"
            ),
        )
        .unwrap();
        let plain = toolgate(&args, dir.path());
        assert!(plain.status.success(), "{}", text(&plain.stderr));
        let json = toolgate(&[&args[..], &["--json"]].concat(), dir.path());
        let decision: Value = serde_json::from_slice(&json.stdout).unwrap();
        (text(&plain.stdout), decision)
    };
    let (stdout, decision) = routed(true);
    assert!(
        stdout.contains(
            "id finder:  search_person (search) finds the id person_credits requires ([routing] id_finders)\n"
        ),
        "{stdout}"
    );
    assert_eq!(decision["routed"], json!(["person"]));
    assert_eq!(
        decision["id_finders"],
        json!([{"group": "search", "tool": "search_person", "needed_by": "person_credits"}])
    );
    assert_eq!(
        decision["partial_groups"],
        json!([
            {"group": "person", "tools": ["person_credits"], "group_tools": 2},
            {"group": "search", "tools": ["search_person"], "group_tools": 2},
        ])
    );
    let (stdout, decision) = routed(false);
    assert!(!stdout.contains("id finder:"), "{stdout}");
    assert_eq!(decision["id_finders"], json!([]));
    assert_eq!(decision["visible_groups"], json!(["person"]));
}

#[test]
fn route_says_when_the_group_cap_ended_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    // A turn naming two groups, each within any share of the best.
    let args = [
        "route",
        "send an email with the weather forecast",
        "--jsonl",
        "tools.jsonl",
        "--no-builtins",
    ];
    let open = toolgate(&args, dir.path());
    assert!(open.status.success(), "{}", text(&open.stderr));
    assert!(
        !text(&open.stdout).contains("cap:"),
        "{}",
        text(&open.stdout)
    );

    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[routing]\nroute_tools = 0\nmax_groups = 1\nroute_above = 0.01\n",
    )
    .unwrap();
    let capped = toolgate(&args, dir.path());
    assert!(capped.status.success(), "{}", text(&capped.stderr));
    let stdout = text(&capped.stdout);
    assert!(
        stdout.contains("cap:        routed 1 groups, the most [routing] max_groups allows\n"),
        "{stdout}"
    );
    let json = toolgate(&[&args[..], &["--json"]].concat(), dir.path());
    let decision: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(decision["max_groups"], 1);
    assert_eq!(decision["routed"].as_array().map(Vec::len), Some(1));
}

#[test]
fn route_keeps_a_turn_within_its_token_budget() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    let args = [
        "route",
        "send an email with the weather forecast",
        "--jsonl",
        "tools.jsonl",
        "--no-builtins",
        "--json",
    ];
    let routed = |share: &str| {
        std::fs::write(
            dir.path().join("toolgate.toml"),
            format!("[routing]\nroute_tools = 0\nroute_above = 0.01\nmax_token_share = {share}\n"),
        )
        .unwrap();
        let output = toolgate(&args, dir.path());
        assert!(output.status.success(), "{}", text(&output.stderr));
        let decision: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(decision["max_token_share"].as_f64(), share.parse().ok());
        decision
    };
    let names = |decision: &Value, field: &str| -> Vec<String> {
        decision[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_owned())
            .collect()
    };
    // The whole budget holds both groups the turn names; a sliver holds
    // only the best one, which is routed whatever it costs, and the
    // decision names the ones it passed over.
    let whole = routed("1.0");
    assert!(names(&whole, "routed").len() >= 2, "{whole}");
    assert_eq!(names(&whole, "passed_over"), Vec::<String>::new());
    let sliver = routed("0.01");
    assert_eq!(names(&sliver, "routed"), names(&whole, "routed")[..1]);
    assert_eq!(names(&sliver, "passed_over"), names(&whole, "routed")[1..]);

    let plain = toolgate(&args[..args.len() - 1], dir.path());
    let stdout = text(&plain.stdout);
    assert!(
        stdout.contains(
            "budget:     routed tools, core tools and listing within 1% of every tool's tokens"
        ),
        "{stdout}"
    );
    let passed = names(&whole, "routed")[1..].join(", ");
    assert!(
        stdout.contains(&format!(
            "passed over: {passed} (scored to be routed, but their tools did not fit the budget)\n"
        )),
        "{stdout}"
    );
}

#[test]
fn a_routing_table_naming_an_unknown_group_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path());
    std::fs::write(
        dir.path().join("toolgate.toml"),
        "[routing]\nrecovery_groups = [\"wether\"]\n",
    )
    .unwrap();
    let output = toolgate(
        &["route", "hi", "--jsonl", "tools.jsonl", "--no-builtins"],
        dir.path(),
    );
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("recovery_groups names group 'wether', which is not in the catalog. Known groups: mail, calendar, weather"),
        "{stderr}"
    );
}

/// The gateway's model never holds up a request: a cold cache is answered
/// at once (the router scores lexically), the tools are embedded on a
/// thread of their own into the cache, and then answered from it.
#[test]
fn the_gateways_model_embeds_a_cold_catalog_in_the_background() {
    use toolgate_core::routing::Embeddings;
    use toolgate_tools::LocalEmbeddings;
    let cache = tempfile::tempdir().unwrap();
    let model = super::support::peers().embed_model;
    let embeddings = LocalEmbeddings::new(&model, cache.path()).in_background();
    let texts = [
        "send an email: to, subject, body",
        "weather forecast for a city",
    ];
    assert_eq!(
        embeddings.embed_texts(&texts),
        None,
        "cold: answered at once"
    );
    let started = std::time::Instant::now();
    while embeddings.is_warming() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "still embedding two texts after a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let vectors = embeddings.embed_texts(&texts).expect("warm now");
    assert_eq!(vectors.iter().map(Vec::len).collect::<Vec<_>>(), [384, 384]);

    // The vectors are on disk: another process has them from the start.
    let again = LocalEmbeddings::new(&model, cache.path()).in_background();
    assert_eq!(again.embed_texts(&texts), Some(vectors));
}
