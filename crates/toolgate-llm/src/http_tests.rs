use std::time::{Duration, UNIX_EPOCH};

use pretty_assertions::assert_eq;
use reqwest::header::{HeaderMap, HeaderValue};

use super::{backoff, error_message, http_date, retry_after};

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn retry_after_reads_milliseconds_seconds_and_dates() {
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "250")])),
        Some(Duration::from_millis(250))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "7")])),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "50"), ("retry-after", "7")])),
        Some(Duration::from_millis(50)),
        "the precise header wins"
    );
    assert_eq!(
        retry_after(&headers(&[(
            "retry-after",
            "Sun, 06 Nov 1994 08:49:37 GMT"
        )])),
        Some(Duration::ZERO),
        "a past date means now"
    );
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
    assert_eq!(retry_after(&headers(&[])), None);
}

#[test]
fn http_dates_parse_to_the_right_instant() {
    assert_eq!(
        http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
        Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
    );
    assert_eq!(
        http_date("Tue, 29 Feb 2028 00:00:00 GMT"),
        Some(UNIX_EPOCH + Duration::from_secs(1_835_395_200))
    );
    assert_eq!(http_date("06 Nov 1994 08:49:37"), None);
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let (initial, max) = (Duration::from_millis(500), Duration::from_secs(3));
    let waits: Vec<Duration> = (1..=5)
        .map(|attempt| backoff(initial, max, attempt))
        .collect();
    assert_eq!(
        waits,
        [500, 1000, 2000, 3000, 3000]
            .map(Duration::from_millis)
            .to_vec()
    );
}

#[test]
fn error_messages_come_from_either_providers_body_shape() {
    assert_eq!(
        error_message(
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#
        ),
        "Incorrect API key"
    );
    assert_eq!(
        error_message(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        ),
        "Overloaded"
    );
    assert_eq!(
        error_message(r#"{"error":"model not found"}"#),
        "model not found"
    );
    assert_eq!(
        error_message("<html>Bad Gateway</html>"),
        "<html>Bad Gateway</html>"
    );
    assert_eq!(error_message(""), "(empty body)");
}
