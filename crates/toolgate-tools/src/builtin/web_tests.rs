use std::sync::mpsc;
use std::time::Duration;

use pretty_assertions::assert_eq;

use super::*;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Work that runs until its token is cancelled, and says when it starts
/// and when it stops.
fn until_cancelled(
    started: mpsc::Sender<()>,
    stopped: mpsc::Sender<()>,
) -> impl FnOnce(&CancellationToken) -> &'static str {
    move |token| {
        started.send(()).unwrap();
        while !token.is_cancelled() {
            std::thread::yield_now();
        }
        stopped.send(()).unwrap();
        "stopped"
    }
}

/// On a runtime of one thread, work off the workers leaves the thread to
/// other tasks: one of them cancels the call, which ends the work.
#[test]
fn work_off_the_workers_leaves_the_runtime_to_other_tasks() {
    let runtime = current_thread();
    let cancel = CancellationToken::new();
    let (started, has_started) = mpsc::channel();
    let (stopped, _has_stopped) = mpsc::channel();
    let ended = runtime.block_on(async {
        let canceller = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                // Runs only while the work leaves the thread free.
                while has_started.try_recv().is_err() {
                    tokio::task::yield_now().await;
                }
                cancel.cancel();
            }
        });
        let ended = off_worker(&cancel, until_cancelled(started, stopped)).await;
        canceller.await.unwrap();
        ended
    });
    assert_eq!(ended.unwrap(), "stopped");
}

/// A call dropped while its work runs (its caller gone) stops the work.
#[test]
fn dropping_the_call_stops_its_work() {
    let runtime = current_thread();
    let (started, has_started) = mpsc::channel();
    let (stopped, has_stopped) = mpsc::channel();
    runtime.block_on(async {
        let work = until_cancelled(started, stopped);
        let call = tokio::spawn(async move {
            let _ = off_worker(&CancellationToken::new(), work).await;
        });
        while has_started.try_recv().is_err() {
            tokio::task::yield_now().await;
        }
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
    });
    // A hang guard, not a speed bound: the work stops at once.
    let result = has_stopped.recv_timeout(Duration::from_secs(60));
    runtime.shutdown_background();
    assert_eq!(result, Ok(()), "the dropped call's work went on");
}

#[test]
fn page_text_converts_html_and_cuts_by_characters() {
    let never = CancellationToken::new();
    let page = page_text(
        b"<p>\xc3\xa9t\xc3\xa9 &amp; \xff</p>",
        "text/html",
        5,
        &never,
    )
    .unwrap();
    assert_eq!(page.content, "\u{e9}t\u{e9} &");
    assert_eq!(page.truncated_from, Some(7));
    let plain = page_text(b"  <p>as is</p>\n", "text/plain", 100, &never).unwrap();
    assert_eq!(plain.content, "<p>as is</p>");
    assert_eq!(plain.truncated_from, None);
    let sniffed = page_text(b"\n<p>a</p>", "", 100, &never).unwrap();
    assert_eq!(sniffed.content, "a");
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    assert!(page_text(b"<p>a</p>", "text/html", 100, &cancelled).is_err());
}

/// Without a search endpoint, the search tool says it needs one (a search
/// would only answer an error); with one, it says what a search returns.
#[test]
fn search_says_it_needs_an_endpoint_until_one_is_configured() {
    let description = |config: WebConfig| {
        let definitions = Web::new(config).definitions().unwrap();
        let search = definitions
            .iter()
            .find(|tool| tool.name.as_str() == SEARCH)
            .unwrap();
        search.description.clone()
    };
    assert_eq!(
        description(WebConfig::default()),
        "Search the web. Needs a search endpoint, and none is configured: every search answers an error until `search_url` is set in the [web] table."
    );
    let configured = WebConfig {
        search_url: Some("http://127.0.0.1:8888".to_owned()),
        max_results: 5,
        searches_per_turn: 3,
        ..WebConfig::default()
    };
    assert_eq!(
        description(configured),
        "Search the web. Returns up to 5 results (url, title, snippet). At most 3 searches per response."
    );
}
