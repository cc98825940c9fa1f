//! The `web` built-in (search and fetch) against a local HTTP server
//! that plays both a SearXNG instance and the pages to fetch.

use std::time::Duration;

use super::site::{Page, Site};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_store::ConversationId;
use toolgate_tools::{
    Authority, BuiltinConfig, BuiltinTools, CallContext, SourceCall, ToolSource, WebConfig,
};

fn searxng(count: usize) -> Page {
    let results: Vec<Value> = (0..count)
        .map(|i| {
            json!({"url": format!("https://example{i}.com"), "title": format!("Result {i}"),
            "content": format!("Content {i}"), "engine": "x"})
        })
        .collect();
    Page::new(
        200,
        "application/json",
        json!({"query": "q", "number_of_results": count * 100, "results": results}).to_string(),
    )
}

/// The built-ins with `web` configured; the local site is on loopback, so
/// private addresses are allowed unless a test says otherwise.
fn web(configure: impl FnOnce(&mut WebConfig)) -> (BuiltinTools, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BuiltinConfig::new(dir.path());
    config.web.allow_private_addresses = true;
    config.web.timeout = Duration::from_secs(5);
    configure(&mut config.web);
    (BuiltinTools::new(&config).unwrap(), dir)
}

fn turn(n: u64) -> CallContext {
    CallContext {
        conversation: Some(ConversationId::new("c1")),
        turn: Some(n),
        ..CallContext::new(Authority::everything())
    }
}

async fn call(tools: &BuiltinTools, tool: &str, arguments: Value, context: &CallContext) -> Value {
    let call = SourceCall {
        tool: tool.to_owned(),
        arguments,
    };
    let output = tools.call(call, context).await.unwrap();
    let value: Value = serde_json::from_str(&output.model_text()).unwrap();
    assert_eq!(
        output.is_error,
        value["type"] == "error",
        "is_error follows the type: {value}"
    );
    value
}

#[tokio::test]
async fn search_returns_results_with_type_field() {
    let site = Site::start(vec![("/search", searxng(2))]).await;
    let (tools, _dir) = web(|web| web.search_url = Some(site.base.clone()));
    let result = call(
        &tools,
        "web_search",
        json!({"query": "ruby on rails"}),
        &turn(1),
    )
    .await;
    assert_eq!(result["type"], "search_results");
    assert_eq!(result["query"], "ruby on rails");
    assert_eq!(result["total_results"], 200);
    assert_eq!(
        result["results"][1],
        json!({"url": "https://example1.com", "title": "Result 1", "snippet": "Content 1"})
    );
    assert_eq!(site.requests(), ["/search?q=ruby+on+rails&format=json"]);
}

#[tokio::test]
async fn search_limits_results_to_the_maximum() {
    let site = Site::start(vec![("/search", searxng(15))]).await;
    let (tools, _dir) = web(|web| {
        web.search_url = Some(format!("{}/search", site.base));
        web.max_results = 50;
    });
    let result = call(&tools, "web_search", json!({"query": "test"}), &turn(1)).await;
    assert_eq!(result["results"].as_array().unwrap().len(), 10);
    let (fewer, _dir) = web(|web| {
        web.search_url = Some(site.base.clone());
        web.max_results = 3;
    });
    let result = call(&fewer, "web_search", json!({"query": "test"}), &turn(1)).await;
    assert_eq!(result["results"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn search_enforces_the_per_turn_limit() {
    let site = Site::start(vec![("/search", searxng(1))]).await;
    let (tools, _dir) = web(|web| web.search_url = Some(site.base.clone()));
    for i in 0..10 {
        let result = call(
            &tools,
            "web_search",
            json!({"query": format!("q{i}")}),
            &turn(1),
        )
        .await;
        assert_eq!(result["type"], "search_results");
    }
    let refused = call(
        &tools,
        "web_search",
        json!({"query": "one too many"}),
        &turn(1),
    )
    .await;
    assert_eq!(
        refused,
        json!({"type": "error", "error": "Search limit reached (10 searches per response)",
            "query": "one too many"})
    );
    assert_eq!(site.requests().len(), 10, "the refused search sent nothing");
    // The next turn starts again, and another conversation has its own count.
    let next = call(&tools, "web_search", json!({"query": "again"}), &turn(2)).await;
    assert_eq!(next["type"], "search_results");
    let other = CallContext {
        conversation: Some(ConversationId::new("c2")),
        ..turn(1)
    };
    let elsewhere = call(&tools, "web_search", json!({"query": "x"}), &other).await;
    assert_eq!(elsewhere["type"], "search_results");

    let (two, _dir) = web(|web| {
        web.search_url = Some(site.base.clone());
        web.searches_per_turn = 2;
    });
    for _ in 0..2 {
        call(&two, "web_search", json!({"query": "q"}), &turn(1)).await;
    }
    let third = call(&two, "web_search", json!({"query": "q"}), &turn(1)).await;
    assert_eq!(
        third["error"],
        "Search limit reached (2 searches per response)"
    );
    // A caller without turns (an MCP client through the gateway) is not limited.
    for _ in 0..3 {
        let free = call(
            &two,
            "web_search",
            json!({"query": "q"}),
            &CallContext::new(Authority::everything()),
        )
        .await;
        assert_eq!(free["type"], "search_results");
    }
}

#[tokio::test]
async fn search_errors_carry_the_type_field() {
    let site = Site::start(vec![
        ("/search", Page::new(500, "text/plain", "boom")),
        (
            "/bad/search",
            Page::new(200, "text/html", "<html>not json</html>"),
        ),
    ])
    .await;
    let (tools, _dir) = web(|web| web.search_url = Some(site.base.clone()));
    let failed = call(&tools, "web_search", json!({"query": "test"}), &turn(1)).await;
    assert_eq!(failed["type"], "error");
    assert_eq!(
        failed["error"],
        "HTTP 500 Internal Server Error from the search service"
    );

    let (bad, _dir) = web(|web| web.search_url = Some(format!("{}/bad", site.base)));
    let invalid = call(&bad, "web_search", json!({"query": "test"}), &turn(1)).await;
    assert!(
        invalid["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid response from the search service"),
        "{invalid}"
    );

    let (unconfigured, _dir) = web(|_| {});
    let missing = call(
        &unconfigured,
        "web_search",
        json!({"query": "test"}),
        &turn(1),
    )
    .await;
    assert_eq!(missing["type"], "error");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .starts_with("No search endpoint is configured: set search_url in the [web] table"),
        "{missing}"
    );
}

#[tokio::test]
async fn fetch_returns_page_text_with_type_field() {
    let site = Site::start(vec![(
        "/",
        Page::new(
            200,
            "text/html; charset=utf-8",
            "<html><head><script>x()</script></head><body><p>Hello World</p></body></html>",
        ),
    )])
    .await;
    let (tools, _dir) = web(|_| {});
    let url = format!("{}/", site.base);
    let result = call(&tools, "web_fetch", json!({"url": url}), &turn(1)).await;
    assert_eq!(result["type"], "fetched_page");
    assert_eq!(result["url"], url);
    assert_eq!(result["content"], "Hello World");
    assert!(
        result["fetched_at"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok(),
        "{result}"
    );
    assert_eq!(result.get("truncated"), None);
}

#[tokio::test]
async fn fetch_reports_a_redirect_with_both_urls() {
    let mut moved = Page::new(301, "text/plain", "");
    moved
        .headers
        .push(("Location", "https://example.com/new".to_owned()));
    let mut relative = Page::new(302, "text/plain", "");
    relative.headers.push(("Location", "/elsewhere".to_owned()));
    let site = Site::start(vec![("/old", moved), ("/rel", relative)]).await;
    let (tools, _dir) = web(|_| {});
    let url = format!("{}/old", site.base);
    let result = call(&tools, "web_fetch", json!({"url": url}), &turn(1)).await;
    assert_eq!(
        result,
        json!({"type": "redirect", "original_url": url,
            "redirect_url": "https://example.com/new", "status": 301})
    );
    let url = format!("{}/rel", site.base);
    let result = call(&tools, "web_fetch", json!({"url": url}), &turn(1)).await;
    assert_eq!(result["redirect_url"], format!("{}/elsewhere", site.base));
    assert_eq!(
        site.requests(),
        ["/old", "/rel"],
        "no redirect was followed"
    );
}

#[tokio::test]
async fn fetch_rejects_non_http_urls() {
    let (tools, _dir) = web(|_| {});
    for (url, error) in [
        (
            "ftp://example.com",
            "Invalid URL: must be http or https, not ftp",
        ),
        (
            "file:///etc/passwd",
            "Invalid URL: must be http or https, not file",
        ),
        ("not a url", "Invalid URL: relative URL without a base"),
    ] {
        let result = call(&tools, "web_fetch", json!({"url": url}), &turn(1)).await;
        assert_eq!(result, json!({"type": "error", "error": error, "url": url}));
    }
}

#[tokio::test]
async fn fetch_refuses_loopback_private_and_link_local_addresses_by_default() {
    let site = Site::start(vec![("/", Page::new(200, "text/plain", "secret"))]).await;
    let (tools, _dir) = web(|web| web.allow_private_addresses = false);
    let port = site.base.rsplit(':').next().unwrap();
    for (url, kind) in [
        (format!("{}/", site.base), "loopback address (127.0.0.1)"),
        (format!("http://localhost:{port}/"), "loopback address"),
        ("http://10.1.2.3/".to_owned(), "private address (10.1.2.3)"),
        (
            "http://192.168.0.1/".to_owned(),
            "private address (192.168.0.1)",
        ),
        (
            "http://169.254.169.254/latest/meta-data".to_owned(),
            "link-local address (169.254.169.254)",
        ),
        ("http://[::1]/".to_owned(), "loopback address (::1)"),
        (
            "http://[fe80::1]/".to_owned(),
            "link-local address (fe80::1)",
        ),
    ] {
        let result = call(&tools, "web_fetch", json!({"url": url}), &turn(1)).await;
        let error = result["error"].as_str().unwrap();
        assert!(error.starts_with("Refused to fetch"), "{error}");
        assert!(error.contains(kind), "{error}");
        assert!(error.contains("allow_private_addresses"), "{error}");
    }
    assert!(site.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn fetch_truncates_long_pages_at_the_configured_limit() {
    let site = Site::start(vec![(
        "/long",
        Page::new(200, "text/plain", "é".repeat(100)),
    )])
    .await;
    let (tools, _dir) = web(|web| web.max_content_chars = 30);
    let result = call(
        &tools,
        "web_fetch",
        json!({"url": format!("{}/long", site.base)}),
        &turn(1),
    )
    .await;
    assert_eq!(result["content"], "é".repeat(30));
    assert_eq!(result["truncated"], true);
    assert_eq!(result["total_chars"], 100);
}

#[tokio::test]
async fn fetch_timeouts_and_http_errors_are_clear_error_results() {
    let mut slow = Page::new(200, "text/plain", "late");
    slow.delay = Duration::from_secs(3);
    let site = Site::start(vec![
        ("/slow", slow),
        ("/image", Page::new(200, "image/png", "PNG")),
    ])
    .await;
    let (tools, _dir) = web(|web| web.timeout = Duration::from_millis(300));
    let result = call(
        &tools,
        "web_fetch",
        json!({"url": format!("{}/slow", site.base)}),
        &turn(1),
    )
    .await;
    assert_eq!(result["error"], "The page did not answer within 0.3 s");
    let missing = call(
        &tools,
        "web_fetch",
        json!({"url": format!("{}/missing", site.base)}),
        &turn(1),
    )
    .await;
    assert_eq!(missing["error"], "HTTP 404 Not Found");
    let image = call(
        &tools,
        "web_fetch",
        json!({"url": format!("{}/image", site.base)}),
        &turn(1),
    )
    .await;
    assert_eq!(
        image["error"],
        "Unsupported content type `image/png`: only text pages can be fetched"
    );
}

/// Serves `body` as `text/html` once; the receiver fires when the client
/// has read it all and closed the connection.
async fn serve_once(body: String) -> (String, tokio::sync::oneshot::Receiver<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    let (read, has_read) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let count = stream.read(&mut buffer).await.unwrap();
            assert_ne!(count, 0, "the request ended early");
            head.extend_from_slice(&buffer[..count]);
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).await.unwrap();
        stream.shutdown().await.unwrap();
        // The client closes once it has the whole body.
        while matches!(stream.read(&mut buffer).await, Ok(count) if count > 0) {}
        let _ = read.send(());
    });
    (url, has_read)
}

/// What an answer says, short: that it answered, or its error.
fn summary(answer: Result<toolgate_tools::ToolOutput, toolgate_tools::ToolCallError>) -> String {
    match answer {
        Ok(output) if output.is_error => format!("error {}", output.model_text()),
        Ok(_) => "answered".to_owned(),
        Err(error) => error.to_string(),
    }
}

/// A 10 MiB page of `&` (the red-team page, 30 times larger) converts off
/// the runtime's thread: on a runtime of one thread, another session's
/// call answers while it converts, and cancelling the page's call ends the
/// conversion. The converter before took hours on it, on that one thread,
/// so nothing else answered.
#[test]
fn a_large_page_converts_off_the_runtime_and_stops_when_cancelled() {
    let (done, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let log = runtime.block_on(async {
            let (url, has_read) = serve_once("&".repeat(10 * 1024 * 1024)).await;
            let (tools, _dir) = web(|_| {});
            let log = std::sync::Mutex::new(Vec::new());
            let cancel = tokio_util::sync::CancellationToken::new();
            let reader = CallContext {
                conversation: Some(ConversationId::new("reader")),
                cancel: cancel.clone(),
                ..CallContext::new(Authority::everything())
            };
            let fetch = async {
                let call = SourceCall {
                    tool: "web_fetch".to_owned(),
                    arguments: json!({"url": url}),
                };
                let answer = tools.call(call, &reader).await;
                log.lock()
                    .unwrap()
                    .push(format!("web_fetch: {}", summary(answer)));
            };
            let other = async {
                has_read.await.unwrap();
                // Time for the fetch to take the body it has read to its
                // conversion.
                for _ in 0..10 {
                    tokio::task::yield_now().await;
                }
                let call = SourceCall {
                    tool: "time_now".to_owned(),
                    arguments: json!({}),
                };
                let context = CallContext {
                    conversation: Some(ConversationId::new("other")),
                    ..CallContext::new(Authority::everything())
                };
                let answer = tools.call(call, &context).await;
                log.lock()
                    .unwrap()
                    .push(format!("time_now: {}", summary(answer)));
                cancel.cancel();
            };
            tokio::join!(fetch, other);
            log.into_inner().unwrap()
        });
        let _ = done.send(log);
    });
    // A guard against the hang this test is about, not a speed bound: the
    // scenario takes about a second.
    let log = answers
        .recv_timeout(Duration::from_secs(60))
        .expect("no call answered within 60 s while the page converted");
    assert_eq!(
        log,
        [
            "time_now: answered",
            "web_fetch: Tool 'web_fetch' was cancelled."
        ]
    );
}
