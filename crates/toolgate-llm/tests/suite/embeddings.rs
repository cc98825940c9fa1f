//! The OpenAI-compatible embeddings client.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_llm::scripted::{Reply, ScriptedServer, Wire, embeddings_reply, error_reply};
use toolgate_llm::{EmbeddingsClient, LlmError};

use super::support::{KEY, config};

fn client(server: &ScriptedServer) -> EmbeddingsClient {
    let mut config = config(server, Wire::OpenAi, false);
    config.model = "text-embedding-3-small".to_owned();
    EmbeddingsClient::new(config).unwrap()
}

#[tokio::test]
async fn inputs_are_embedded_in_order() {
    let server = ScriptedServer::start().await.unwrap();
    // Served out of order: the index decides.
    server.push(Reply::json(
        200,
        json!({"object": "list", "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}
        ]}),
    ));
    let inputs = vec!["first".to_owned(), "second".to_owned()];
    let vectors = client(&server).embed(&inputs, &mut |_| {}).await.unwrap();
    assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.body,
        json!({"model": "text-embedding-3-small", "input": ["first", "second"]})
    );
}

#[tokio::test]
async fn short_or_malformed_answers_and_refusals_are_errors() {
    let server = ScriptedServer::start().await.unwrap();
    let inputs = vec!["a".to_owned(), "b".to_owned()];
    server.push(embeddings_reply(&[vec![1.0, 0.0]]));
    let error = client(&server)
        .embed(&inputs, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("fewer than the 2 embeddings asked for"),
        "{error}"
    );

    server.push(embeddings_reply(&[vec![1.0, 0.0], vec![1.0]]));
    let error = client(&server)
        .embed(&inputs, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("embeddings of different lengths"),
        "{error}"
    );

    server.push(error_reply(Wire::OpenAi, 401, "bad key"));
    let error = client(&server)
        .embed(&inputs, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Unauthorized { .. }), "{error:?}");
    assert!(
        client(&server)
            .embed(&[], &mut |_| {})
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        server.requests().len(),
        3,
        "nothing asked for, nothing sent"
    );
}
