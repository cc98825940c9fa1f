//! The gateway as an OAuth resource server, against a local issuer this
//! test starts with signing keys made here: the metadata is published, a
//! request without a valid token gets `401` pointing at it, a valid token's
//! claim picks the client whose policy applies, and a user's session is not
//! another's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_core::ToolPolicy;
use toolgate_mcp::{ClientName, Clients, HttpOptions, OAuth, OAuthSettings};
use toolgate_store::MemoryStore;

use super::identities::{
    INITIALIZE, INITIALIZED, LOAD_TIME, audit_lines, audit_log, post, refused_as_unknown,
};
use super::support::{Served, exchange, header_value, loopback, options, serve};

const AUDIENCE: &str = "https://toolgate.test/mcp";

/// A signing key of the issuer, and its public JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        // An uncompressed point: 0x04, then x and y.
        let point = pair.public_key().as_ref();
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        Self {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk: json!({
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                "x": b64(&point[1..33]), "y": b64(&point[33..65]),
            }),
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// A local authorization server: its RFC 8414 metadata and its key set,
/// which a test may change; it counts fetches of the keys.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    key_fetches: Arc<AtomicUsize>,
}

impl Issuer {
    async fn start(keys: &[&SigningKey]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/realm", listener.local_addr().unwrap());
        let published = Arc::new(Mutex::new(
            keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>(),
        ));
        let key_fetches = Arc::new(AtomicUsize::new(0));
        let (issuer, keys, fetches) = (
            url.clone(),
            Arc::clone(&published),
            Arc::clone(&key_fetches),
        );
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut request = vec![0; 4096];
                let read = stream.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..read]).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
                let (status, body) = match path.as_str() {
                    "/.well-known/oauth-authorization-server/realm" => (
                        "200 OK",
                        json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}),
                    ),
                    "/realm/jwks" => {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        ("200 OK", json!({"keys": *keys.lock().unwrap()}))
                    }
                    _ => ("404 Not Found", json!({})),
                };
                let body = body.to_string();
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        Self {
            url,
            keys: published,
            key_fetches,
        }
    }

    /// Claims of a valid token for `client_id` and user `sub`.
    fn claims(&self, client_id: &str, sub: &str) -> Value {
        json!({
            "iss": self.url, "aud": AUDIENCE, "sub": sub, "client_id": client_id,
            "exp": now() + 300, "iat": now(), "scope": "mcp:tools",
        })
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A gateway taking the issuer's tokens: claim `client_id` "ci-app" maps to
/// alice, who may not use the time group; any other client is bob.
async fn served(issuer: &Issuer, required_scopes: &[&str]) -> Served<MemoryStore> {
    served_audited(issuer, required_scopes, None).await
}

async fn served_audited(
    issuer: &Issuer,
    required_scopes: &[&str],
    audit: Option<toolgate_mcp::AuditLog>,
) -> Served<MemoryStore> {
    let root = tempfile::tempdir().unwrap();
    let (alice, bob) = (
        ClientName::new("alice").unwrap(),
        ClientName::new("bob").unwrap(),
    );
    let clients = Clients::default().with_token_less([alice.clone(), bob]);
    let settings = OAuthSettings {
        claim_clients: BTreeMap::from([("ci-app".to_owned(), alice.clone())]),
        required_scopes: required_scopes.iter().map(|s| (*s).to_owned()).collect(),
        ..oauth_settings(issuer)
    };
    settings.check(&clients).unwrap();
    let mut options = options(root.path(), vec![]);
    options.audit = audit;
    options.policies = Arc::new(HashMap::from([(
        alice,
        ToolPolicy {
            deny_groups: BTreeSet::from(["time".to_owned()]),
            ..ToolPolicy::default()
        },
    )]));
    let http = HttpOptions {
        clients,
        oauth: Some(Arc::new(OAuth::new(settings).unwrap())),
        ..HttpOptions::default()
    };
    serve(options, MemoryStore::new(), loopback(), http).await
}

/// A GET of `path` over a fresh connection.
async fn get(address: SocketAddr, path: &str) -> String {
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n",
        address.port()
    );
    exchange(address, &request).await
}

/// A session opened with `token`, initialized.
async fn open(address: SocketAddr, token: &str) -> String {
    let answer = post(address, Some(token), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let session = header_value(&answer, "mcp-session-id").unwrap();
    post(address, Some(token), Some(&session), INITIALIZED).await;
    session
}

#[tokio::test]
async fn the_metadata_is_published_and_a_401_points_to_it() {
    let key = SigningKey::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let served = served(&issuer, &["mcp:tools"]).await;
    let expected = "https://toolgate.test/.well-known/oauth-protected-resource/mcp";
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let answer = get(served.address, path).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
        let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["resource"], AUDIENCE);
        assert_eq!(body["authorization_servers"], json!([issuer.url]));
        assert_eq!(body["scopes_supported"], json!(["mcp:tools"]));
    }
    let answer = post(served.address, None, None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert_eq!(
        header_value(&answer, "www-authenticate").as_deref(),
        Some(format!("Bearer resource_metadata=\"{expected}\", scope=\"mcp:tools\"").as_str())
    );
}

#[tokio::test]
async fn a_token_is_refused_with_the_reason_unless_all_checks_pass() {
    let key = SigningKey::new("k1");
    let stranger = SigningKey::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let served = served(&issuer, &["mcp:tools"]).await;
    let good = issuer.claims("ci-app", "user-1");
    let with = |field: &str, value: Value| {
        let mut claims = good.clone();
        claims[field] = value;
        claims
    };
    let hmac = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &good,
        &EncodingKey::from_secret(b"a secret the gateway does not have"),
    )
    .unwrap();
    let cases = [
        (
            key.sign(&with("exp", json!(now() - 600))),
            "401",
            "the token has expired",
        ),
        (
            key.sign(&with("aud", json!("https://other.test/mcp"))),
            "401",
            "not for this gateway",
        ),
        (
            key.sign(&with("iss", json!("https://evil.test"))),
            "401",
            "from another issuer",
        ),
        (
            key.sign(&with("nbf", json!(now() + 600))),
            "401",
            "not valid yet",
        ),
        (stranger.sign(&good), "401", "signature does not verify"),
        (hmac, "401", "only the issuer's public keys"),
        ("not.a.jwt".to_owned(), "401", "not a signed JWT"),
        (
            key.sign(&with("scope", json!("other"))),
            "403",
            "lacks the scope(s) mcp:tools",
        ),
    ];
    for (token, status, reason) in cases {
        let answer = post(served.address, Some(&token), None, INITIALIZE).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")) && answer.contains(reason),
            "expected {status} '{reason}': {answer}"
        );
        let challenge = header_value(&answer, "www-authenticate").unwrap();
        let code = if status == "401" {
            "invalid_token"
        } else {
            "insufficient_scope"
        };
        assert!(
            challenge.contains(&format!("error=\"{code}\"")),
            "{challenge}"
        );
        assert!(challenge.contains("resource_metadata="), "{challenge}");
    }
    let answer = post(served.address, Some(&key.sign(&good)), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        issuer.key_fetches.load(Ordering::SeqCst),
        1,
        "keys are cached"
    );
}

#[tokio::test]
async fn the_claim_picks_the_client_whose_policy_applies() {
    let key = SigningKey::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let dir = tempfile::tempdir().unwrap();
    let (audit, path) = audit_log(dir.path(), false).await;
    let served = served_audited(&issuer, &[], Some(audit)).await;
    // "ci-app" is alice, who may not use the time group; anyone else is bob.
    let alice = key.sign(&issuer.claims("ci-app", "user-1"));
    let bob = key.sign(&issuer.claims("some-other-app", "user-2"));
    let session = open(served.address, &alice).await;
    let answer = post(served.address, Some(&alice), Some(&session), LOAD_TIME).await;
    assert!(answer.contains("Tool group 'time' not found"), "{answer}");
    assert!(!answer.contains("time_now"), "{answer}");
    let session = open(served.address, &bob).await;
    let answer = post(served.address, Some(&bob), Some(&session), LOAD_TIME).await;
    assert!(answer.contains("Loaded"), "{answer}");
    // The audit log names the client and the user.
    let lines = audit_lines(&path, 2).await;
    let who: Vec<(&str, &str)> = lines
        .iter()
        .map(|line| {
            (
                line["client"].as_str().unwrap(),
                line["user"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(who, [("alice", "user-1"), ("bob", "user-2")]);
}

#[tokio::test]
async fn a_users_session_is_not_another_users_under_the_same_client() {
    let key = SigningKey::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let served = served(&issuer, &[]).await;
    let first = key.sign(&issuer.claims("some-app", "user-1"));
    let second = key.sign(&issuer.claims("some-app", "user-2"));
    let session = open(served.address, &first).await;
    let answer = post(served.address, Some(&second), Some(&session), LOAD_TIME).await;
    refused_as_unknown(&answer);
    // The same user with a fresh token keeps the session.
    let renewed = key.sign(&with_iat(issuer.claims("some-app", "user-1"), now() + 1));
    let answer = post(served.address, Some(&renewed), Some(&session), LOAD_TIME).await;
    assert!(answer.contains("Loaded"), "{answer}");
}

fn with_iat(mut claims: Value, iat: u64) -> Value {
    claims["iat"] = json!(iat);
    claims
}

#[tokio::test]
async fn rotated_keys_are_fetched_again_and_a_dead_issuer_is_a_503() {
    let old = SigningKey::new("k1");
    let new = SigningKey::new("k2");
    let issuer = Issuer::start(&[&old]).await;
    let first = served(&issuer, &[]).await;
    let claims = issuer.claims("some-app", "user-1");
    let answer = post(first.address, Some(&old.sign(&claims)), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The issuer rotates to k2; the gateway fetches the new set at most once
    // per 30 s, so a token naming an unknown key is refused until then.
    *issuer.keys.lock().unwrap() = vec![new.jwk.clone()];
    let answer = post(first.address, Some(&new.sign(&claims)), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("no key 'k2'"), "{answer}");
    assert_eq!(issuer.key_fetches.load(Ordering::SeqCst), 1);

    // A fresh gateway (no recent fetch) meets the rotated set at once.
    drop(first);
    let second = served(&issuer, &[]).await;
    let answer = post(second.address, Some(&new.sign(&claims)), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // An issuer that cannot be reached: the gateway cannot tell, so 503.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/keys", dead.local_addr().unwrap());
    drop(dead);
    let settings = OAuthSettings {
        jwks_url: Some(dead_url),
        ..oauth_settings(&issuer)
    };
    let oauth = OAuth::new(settings).unwrap();
    let clients = Clients::default().with_token_less([ClientName::new("bob").unwrap()]);
    let refusal = oauth
        .verify(&new.sign(&claims), &clients)
        .await
        .unwrap_err();
    assert!(
        matches!(&refusal, toolgate_mcp::Refusal::KeysUnavailable(why) if why.contains("/keys")),
        "{refusal:?}"
    );
}

/// The issuer's tokens for [`AUDIENCE`]; every client is bob.
fn oauth_settings(issuer: &Issuer) -> OAuthSettings {
    OAuthSettings {
        issuer: issuer.url.clone(),
        audience: AUDIENCE.to_owned(),
        jwks_url: None,
        client_claim: OAuthSettings::DEFAULT_CLIENT_CLAIM.to_owned(),
        claim_clients: BTreeMap::new(),
        default_client: Some(ClientName::new("bob").unwrap()),
        required_scopes: Vec::new(),
    }
}
