//! `/metrics`: what a scrape shows after real traffic, and that it is
//! behind the same token as `/mcp`.

use std::time::Duration;

use serde_json::json;
use toolgate_mcp::HttpOptions;
use toolgate_store::MemoryStore;

use super::support::{
    call, connect, exchange, is_error, load, loopback, options, serve, serve_default, text,
};

/// `GET /metrics` over a fresh connection: the status line and the body.
async fn scrape(address: std::net::SocketAddr, headers: &str) -> (String, String) {
    let request = format!(
        "GET /metrics HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n{headers}connection: close\r\n\r\n",
        address.port()
    );
    let response = exchange(address, &request).await;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// The value of the sample `series` (name and labels, exactly).
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test]
async fn a_scrape_counts_requests_calls_loads_and_sessions() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(root.path(), vec![]).await;
    let (client, _) = connect(&served.url).await;
    load(&client, "time").await;
    for _ in 0..2 {
        let now = call(&client, "time_now", json!({})).await;
        assert!(!is_error(&now), "{}", text(&now));
    }
    let through = call(
        &client,
        "call_tool",
        json!({"name": "time_now", "arguments": {}}),
    )
    .await;
    assert!(!is_error(&through), "{}", text(&through));
    let unloaded = call(&client, "files_read", json!({"path": "x"})).await;
    assert!(is_error(&unloaded));
    let made_up = call(&client, "no_such_tool_abc", json!({})).await;
    assert!(is_error(&made_up));

    let (status, body) = scrape(served.address, "").await;
    assert!(status.contains("200"), "{status}");
    let expect = [
        (
            "toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"ok\"}",
            3.0,
        ),
        (
            "toolgate_tool_calls_total{group=\"core\",tool=\"load_tool_group\",outcome=\"ok\"}",
            1.0,
        ),
        (
            "toolgate_tool_calls_total{group=\"core\",tool=\"call_tool\",outcome=\"ok\"}",
            1.0,
        ),
        (
            "toolgate_tool_calls_total{group=\"files\",tool=\"files_read\",outcome=\"unavailable\"}",
            1.0,
        ),
        (
            "toolgate_tool_calls_total{group=\"\",tool=\"(unknown)\",outcome=\"unavailable\"}",
            1.0,
        ),
        ("toolgate_group_loads_total{group=\"time\"}", 1.0),
        (
            "toolgate_tool_call_duration_seconds_count{group=\"time\"}",
            3.0,
        ),
        ("toolgate_sessions_opened_total", 1.0),
        ("toolgate_sessions_in_memory", 1.0),
        ("toolgate_mcp_requests_total{method=\"initialize\"}", 1.0),
        ("toolgate_mcp_requests_total{method=\"tools/call\"}", 6.0),
    ];
    for (series, value) in expect {
        assert_eq!(sample(&body, series), Some(value), "{series} in\n{body}");
    }
    // A made-up name is never a label.
    assert!(!body.contains("no_such_tool_abc"), "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    served.stop().await;
}

#[tokio::test]
async fn metrics_need_the_token_mcp_needs() {
    let root = tempfile::tempdir().unwrap();
    let http = HttpOptions {
        bearer_token: Some("a-long-enough-secret-token".to_owned()),
        ..HttpOptions::default()
    };
    let served = serve(
        options(root.path(), vec![]),
        MemoryStore::new(),
        loopback(),
        http,
    )
    .await;
    let (status, body) = scrape(served.address, "").await;
    assert!(status.contains("401"), "{status}");
    assert!(!body.contains("toolgate_"), "{body}");
    let (status, body) = scrape(
        served.address,
        "authorization: Bearer a-long-enough-secret-token\r\n",
    )
    .await;
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("toolgate_sessions_in_memory"), "{body}");
    served.stop().await;
}

#[tokio::test]
async fn tokens_saved_against_every_schema_are_counted_per_list() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(root.path(), vec![]).await;
    let (client, _) = connect(&served.url).await;
    // The first list counts the catalog's costs; lists after it are counted.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        super::support::tool_names(&client).await;
        let (_, body) = scrape(served.address, "").await;
        if sample(&body, "toolgate_tool_tokens_listed_total").unwrap_or(0.0) > 0.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no list counted: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, before) = scrape(served.address, "").await;
    let lists = |body: &str| sample(body, "toolgate_tool_lists_total").unwrap();
    let listed = |body: &str| sample(body, "toolgate_tool_tokens_listed_total").unwrap();
    let saved = |body: &str| sample(body, "toolgate_tool_tokens_saved_total").unwrap();
    super::support::tool_names(&client).await;
    let (_, core_only) = scrape(served.address, "").await;
    assert_eq!(lists(&core_only), lists(&before) + 1.0);
    let core_listed = listed(&core_only) - listed(&before);
    let core_saved = saved(&core_only) - saved(&before);
    assert!(core_listed > 0.0 && core_saved > 0.0, "{core_only}");

    // Loading a group lists more and saves less, by the same amount (a group
    // small enough that the list stays under all the schemas: saved tokens
    // are never below zero).
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    super::support::tool_names(&client).await;
    let (_, loaded) = scrape(served.address, "").await;
    let loaded_listed = listed(&loaded) - listed(&core_only);
    let loaded_saved = saved(&loaded) - saved(&core_only);
    assert!(loaded_listed > core_listed, "{loaded}");
    assert_eq!(loaded_listed + loaded_saved, core_listed + core_saved);
    served.stop().await;
}
