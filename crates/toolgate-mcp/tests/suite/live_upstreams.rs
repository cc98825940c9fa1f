//! A new list of upstreams applied while the gateway serves (what a reload
//! of `toolgate.toml` does): real servers added, restarted with a changed
//! configuration and removed, seen by a session that stays connected.

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_mcp::config::UpstreamConfig;
use toolgate_store::MemoryStore;
use toolgate_tools::{Joined, Startup};

use super::support::{
    CORE, Client, Recorder, Served, call, connect, is_error, load, serve_default, text, tool_names,
};
use super::upstreams::{peers, stdio};

/// The tools of the time reference server.
const CLOCK_TOOLS: [&str; 2] = ["get_current_time", "convert_time"];

#[tokio::test]
async fn upstreams_come_change_and_go_while_a_session_keeps_its_groups() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let time = peers.venv_bin.join("mcp-server-time");
    let clock = stdio("clock", time.clone(), &["--local-timezone", "UTC"]);
    let served = serve_default(root.path(), vec![clock.clone()]).await;
    let gateway = &served.gateway;
    let (client, recorder) = connect(&served.url).await;
    load(&client, "clock").await;
    recorder.wait_for_list_changed(1).await;
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &CLOCK_TOOLS].concat()
    );

    // The same list changes nothing, and restarts nothing.
    let changes = gateway.update_upstreams(vec![clock.clone()]).await;
    assert!(changes.is_empty(), "{changes}");
    assert_eq!(changes.to_string(), "upstreams unchanged");

    let second =
        an_upstream_added_comes_after_the_others(&served, &client, &recorder, &clock, &time).await;
    a_changed_upstream_restarts_in_place(&served, &client, &recorder, &second, &time).await;
    a_removed_upstream_takes_its_group_away(&served, &client, &recorder, &second).await;

    // An upstream whose name is another group's is refused, named.
    let taken = stdio("time", time, &[]);
    let changes = gateway.update_upstreams(vec![second, taken]).await;
    assert!(
        matches!(changes.refused.as_slice(), [(name, _)] if name.as_str() == "time"),
        "{changes}"
    );
    assert!(
        changes.to_string().starts_with("upstream time not added: "),
        "{changes}"
    );
    assert_eq!(gateway.upstream_names(), ["clock2"].map(id));
    served.stop().await;
}

/// An upstream added: after clock, so clock keeps its names. Returns it.
async fn an_upstream_added_comes_after_the_others(
    served: &Served<MemoryStore>,
    client: &Client,
    recorder: &Recorder,
    clock: &UpstreamConfig,
    time: &Path,
) -> UpstreamConfig {
    let gateway = &served.gateway;
    let mut second = stdio("clock2", time.to_owned(), &[]);
    second.startup = Startup::Eager;
    let changes = gateway
        .update_upstreams(vec![second.clone(), clock.clone()])
        .await;
    assert!(
        matches!(changes.added.as_slice(), [(name, Joined::Listed(2))] if name.as_str() == "clock2"),
        "{changes}"
    );
    assert_eq!(changes.to_string(), "upstreams added: clock2 (2 tools)");
    assert_eq!(gateway.upstream_names(), ["clock", "clock2"].map(id));
    // The groups on offer changed: the session is told, keeps clock loaded.
    recorder.wait_for_list_changed(2).await;
    assert_eq!(tool_names(client).await, [&CORE[..], &CLOCK_TOOLS].concat());
    load(client, "clock2").await;
    let now = call(
        client,
        "clock2__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
    second
}

/// clock's configuration changed: restarted in place, its tools keep their
/// names, and the session that loaded it sees the new definitions.
async fn a_changed_upstream_restarts_in_place(
    served: &Served<MemoryStore>,
    client: &Client,
    recorder: &Recorder,
    second: &UpstreamConfig,
    time: &Path,
) {
    let gateway = &served.gateway;
    let before = recorder.list_changed();
    let paris = stdio(
        "clock",
        time.to_owned(),
        &["--local-timezone", "Europe/Paris"],
    );
    let changes = gateway
        .update_upstreams(vec![paris.clone(), second.clone()])
        .await;
    assert!(
        matches!(changes.changed.as_slice(), [(name, Joined::Listed(2))] if name.as_str() == "clock"),
        "{changes}"
    );
    recorder.wait_for_list_changed(before + 1).await;
    let listed = client.list_all_tools().await.unwrap();
    // The server names its local time zone in the schema.
    let schema = listed
        .iter()
        .find(|tool| tool.name == "get_current_time")
        .map(|tool| serde_json::Value::Object((*tool.input_schema).clone()).to_string())
        .unwrap();
    assert!(schema.contains("Europe/Paris"), "{schema}");
    let now = call(client, "get_current_time", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
    assert_eq!(gateway.upstream_names(), ["clock", "clock2"].map(id));
}

/// clock removed: its group goes, its tools are not available, and the
/// session keeps what else it loaded.
async fn a_removed_upstream_takes_its_group_away(
    served: &Served<MemoryStore>,
    client: &Client,
    recorder: &Recorder,
    second: &UpstreamConfig,
) {
    let gateway = &served.gateway;
    let before = recorder.list_changed();
    let changes = gateway.update_upstreams(vec![second.clone()]).await;
    assert_eq!(changes.to_string(), "upstreams removed: clock");
    recorder.wait_for_list_changed(before + 1).await;
    assert_eq!(
        tool_names(client).await,
        [
            &CORE[..],
            &["clock2__get_current_time", "clock2__convert_time"]
        ]
        .concat()
    );
    let gone = call(client, "get_current_time", json!({"timezone": "UTC"})).await;
    assert!(is_error(&gone));
    assert!(text(&gone).contains("not available"), "{}", text(&gone));
    assert!(gateway.with_catalog(|catalog| catalog.group("clock").is_none()));
    let metrics = gateway.metrics().render();
    assert!(
        metrics.contains("toolgate_upstream_restarts_total{upstream=\"clock2\"} 0"),
        "{metrics}"
    );
    assert!(!metrics.contains("upstream=\"clock\""), "{metrics}");
}

fn id(name: &str) -> toolgate_core::GroupId {
    toolgate_core::GroupId::new(name).unwrap()
}

#[tokio::test]
async fn a_call_under_way_finishes_on_an_upstream_a_reload_removes() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let everything = stdio(
        "everything",
        peers.node_bin.join("mcp-server-everything"),
        &["stdio"],
    );
    let served = serve_default(root.path(), vec![everything]).await;
    let gateway = &served.gateway;
    let (client, _) = connect(&served.url).await;
    load(&client, "everything").await;

    // A three-second operation under way when the reload removes its
    // server; a call made while the server drains is refused, named.
    let long = call(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 3, "steps": 3}),
    );
    let reload = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        gateway.update_upstreams(Vec::new()).await
    };
    let during = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        call(&client, "echo", json!({"message": "late"})).await
    };
    let (long, changes, during) = tokio::join!(long, reload, during);
    assert!(!is_error(&long), "{}", text(&long));
    assert!(text(&long).contains("completed"), "{}", text(&long));
    assert_eq!(changes.to_string(), "upstreams removed: everything");
    assert!(is_error(&during), "{}", text(&during));
    assert!(
        text(&during).contains("a reload of the configuration removed or changed it"),
        "{}",
        text(&during)
    );
    // Gone once drained.
    let gone = call(&client, "echo", json!({"message": "after"})).await;
    assert!(text(&gone).contains("not available"), "{}", text(&gone));
    served.stop().await;
}
