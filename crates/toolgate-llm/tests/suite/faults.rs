//! What goes wrong on the wire, and what the caller gets: retries that
//! honour the server, and errors that say what happened and where.

use std::time::Duration;

use pretty_assertions::assert_eq;
use toolgate_llm::scripted::{Reply, ScriptedServer, ScriptedTurn, Wire, error_reply};
use toolgate_llm::{LlmError, StreamEvent, connect};

use super::support::{KEY, complete, config, conversation, model};

fn retries(events: &[StreamEvent]) -> Vec<(u32, Duration, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                attempt,
                delay,
                reason,
            } => Some((*attempt, *delay, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_server_error_then_success_is_retried_once() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(error_reply(wire, 500, "internal hiccup"));
        server.push(ScriptedTurn::text("Fine now.").reply(wire, true));
        let (result, events) = complete(model(&server, wire, true).as_ref(), &conversation()).await;
        assert_eq!(result.unwrap().text, "Fine now.");
        assert_eq!(server.requests().len(), 2);
        assert_eq!(
            server.requests()[0].body,
            server.requests()[1].body,
            "the same request again"
        );
        assert_eq!(
            retries(&events),
            [(
                1,
                Duration::from_millis(10),
                "HTTP 500: internal hiccup".to_owned()
            )]
        );
    }
}

#[tokio::test]
async fn a_connection_closed_without_an_answer_is_retried() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(Reply::close());
        server.push(ScriptedTurn::text("Fine now.").reply(wire, false));
        let (result, events) =
            complete(model(&server, wire, false).as_ref(), &conversation()).await;
        assert_eq!(result.unwrap().text, "Fine now.");
        assert_eq!(server.requests().len(), 2);
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{retries:?}");
        assert!(
            retries[0].2.starts_with("no answer: "),
            "{:?}",
            retries[0].2
        );
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let wire = Wire::OpenAi;
    let server = ScriptedServer::start().await.unwrap();
    server.push(error_reply(wire, 429, "slow down").with_header("retry-after-ms", "50"));
    server.push(error_reply(wire, 503, "busy").with_header("retry-after", "1"));
    server.push(ScriptedTurn::text("ok").reply(wire, false));
    let started = std::time::Instant::now();
    let (result, events) = complete(model(&server, wire, false).as_ref(), &conversation()).await;
    assert_eq!(result.unwrap().text, "ok");
    let delays: Vec<Duration> = retries(&events)
        .into_iter()
        .map(|(_, delay, _)| delay)
        .collect();
    assert_eq!(delays, [Duration::from_millis(50), Duration::from_secs(1)]);
    assert!(
        started.elapsed() >= Duration::from_millis(1050),
        "the waits happened"
    );
}

#[tokio::test]
async fn exhausted_retries_and_long_waits_fail_with_the_status() {
    let wire = Wire::Anthropic;
    let server = ScriptedServer::start().await.unwrap();
    let mut config = config(&server, wire, true);
    config.retry.max_retries = 2;
    let model = connect(config).unwrap();
    for _ in 0..3 {
        server.push(error_reply(wire, 529, "Overloaded"));
    }
    let (result, events) = complete(model.as_ref(), &conversation()).await;
    let error = result.unwrap_err();
    assert!(
        matches!(
            error,
            LlmError::Status {
                status: 529,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .ends_with("answered HTTP 529 after 3 attempts: Overloaded"),
        "{error}"
    );
    assert_eq!(retries(&events).len(), 2);

    server.push(error_reply(wire, 429, "quota").with_header("retry-after", "3600"));
    let (result, events) = complete(model.as_ref(), &conversation()).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("asked to retry after 3600 s, longer than the 60 s"),
        "{error}"
    );
    assert!(retries(&events).is_empty(), "no hour-long wait");
}

#[tokio::test]
async fn a_refused_key_names_its_source_and_never_the_key() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(error_reply(wire, 401, "invalid x-api-key"));
        let (result, events) = complete(model(&server, wire, true).as_ref(), &conversation()).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, LlmError::Unauthorized { status: 401, .. }),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("invalid x-api-key"), "{text}");
        assert!(text.contains("the environment variable TEST_KEY"), "{text}");
        assert!(!text.contains(KEY) && !format!("{error:?}").contains(KEY));
        assert!(retries(&events).is_empty(), "a 401 is not retried");
    }
}

#[tokio::test]
async fn a_wrong_model_or_url_is_a_404_naming_the_model() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(error_reply(
        Wire::OpenAi,
        404,
        "The model `test-model` does not exist",
    ));
    let (result, _) = complete(
        model(&server, Wire::OpenAi, false).as_ref(),
        &conversation(),
    )
    .await;
    let error = result.unwrap_err().to_string();
    assert!(error.contains("HTTP 404"), "{error}");
    assert!(error.contains("model 'test-model'"), "{error}");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_reported_with_its_start() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(Reply::raw(
            200,
            "application/json",
            "<html>gateway says hi</html>",
        ));
        let (result, _) = complete(model(&server, wire, false).as_ref(), &conversation()).await;
        let error = result.unwrap_err();
        assert!(
            matches!(
                error,
                LlmError::BadJson {
                    context: "response body",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("<html>gateway says hi</html>"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_truncated_stream_is_an_error_not_a_short_answer() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server = ScriptedServer::start().await.unwrap();
        server.push(
            ScriptedTurn::text("a long answer cut short")
                .reply(wire, true)
                .truncate_after(3),
        );
        let (result, events) = complete(model(&server, wire, true).as_ref(), &conversation()).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, LlmError::TruncatedStream { .. }),
            "{wire:?}: {error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("ended before the answer was complete")
        );
        assert!(retries(&events).is_empty());

        // Cut inside an event, too.
        server.push(Reply::sse(vec![
            "data: {\"choices\":[{\"index\":0,\"del".to_owned(),
        ]));
        let (result, _) = complete(model(&server, wire, true).as_ref(), &conversation()).await;
        assert!(
            matches!(result, Err(LlmError::TruncatedStream { .. })),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn an_error_inside_a_stream_is_the_providers_error() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(Reply::sse(vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n".to_owned(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
    ]));
    let (result, _) = complete(
        model(&server, Wire::Anthropic, true).as_ref(),
        &conversation(),
    )
    .await;
    let error = result.unwrap_err();
    assert!(
        matches!(&error, LlmError::Provider { message, .. } if message == "Overloaded"),
        "{error:?}"
    );

    server.push(Reply::sse(vec![
        "data: {\"error\":{\"message\":\"context length exceeded\"}}\n\n".to_owned(),
    ]));
    let (result, _) = complete(model(&server, Wire::OpenAi, true).as_ref(), &conversation()).await;
    assert!(
        result
            .unwrap_err()
            .to_string()
            .contains("context length exceeded")
    );
}

#[tokio::test]
async fn silence_past_the_read_timeout_fails() {
    let server = ScriptedServer::start().await.unwrap();
    server.push(Reply::hang());
    let mut config = config(&server, Wire::OpenAi, true);
    config.read_timeout = Duration::from_millis(300);
    let (result, _) = complete(connect(config).unwrap().as_ref(), &conversation()).await;
    let error = result.unwrap_err();
    assert!(
        matches!(error, LlmError::Timeout { phase: "read", .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("did not answer within 0.3 s"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let mut config = toolgate_llm::ProviderConfig::new(
        toolgate_llm::ProviderKind::OpenAi,
        format!("http://{address}/v1"),
        "m",
    );
    config.retry.max_retries = 1;
    config.retry.initial_backoff = Duration::from_millis(10);
    let (result, events) = complete(connect(config).unwrap().as_ref(), &conversation()).await;
    let error = result.unwrap_err();
    assert!(
        matches!(error, LlmError::Connect { attempts: 2, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with(&format!(
            "cannot reach http://{address}/v1/chat/completions after 2 attempts"
        )),
        "{error}"
    );
    assert_eq!(retries(&events).len(), 1);
}
