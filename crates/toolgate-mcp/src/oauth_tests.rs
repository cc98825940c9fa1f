use super::*;

fn settings() -> OAuthSettings {
    OAuthSettings {
        issuer: "https://login.example.com/realms/team".into(),
        audience: "https://toolgate.example.com/mcp".into(),
        jwks_url: None,
        client_claim: OAuthSettings::DEFAULT_CLIENT_CLAIM.into(),
        claim_clients: BTreeMap::new(),
        default_client: None,
        required_scopes: Vec::new(),
    }
}

fn clients(names: &[&str]) -> Clients {
    Clients::default().with_token_less(names.iter().map(|name| ClientName::new(name).unwrap()))
}

#[test]
fn the_metadata_url_inserts_the_well_known_path_before_the_resources() {
    assert_eq!(
        settings().metadata_url().unwrap(),
        "https://toolgate.example.com/.well-known/oauth-protected-resource/mcp"
    );
    let root = OAuthSettings {
        audience: "https://toolgate.example.com/".into(),
        ..settings()
    };
    assert_eq!(
        root.metadata_url().unwrap(),
        "https://toolgate.example.com/.well-known/oauth-protected-resource"
    );
}

#[test]
fn settings_errors_name_the_key_and_what_is_wrong() {
    let cases = [
        (
            OAuthSettings {
                issuer: "http://login.example.com".into(),
                ..settings()
            },
            "[auth.oauth] `issuer` 'http://login.example.com' must be an https URL",
        ),
        (
            OAuthSettings {
                jwks_url: Some("keys.json".into()),
                ..settings()
            },
            "[auth.oauth] `jwks_url` 'keys.json' is not a URL",
        ),
        (
            OAuthSettings {
                audience: "toolgate".into(),
                ..settings()
            },
            "[auth.oauth] `audience` 'toolgate' is not a URL",
        ),
        (
            OAuthSettings {
                default_client: Some(ClientName::new("staff").unwrap()),
                ..settings()
            },
            "[auth.oauth] `default_client` names client 'staff', which has no [clients.staff] table",
        ),
        (
            OAuthSettings {
                claim_clients: BTreeMap::from([("app-1".into(), ClientName::new("ci").unwrap())]),
                ..settings()
            },
            "[auth.oauth] `clients.\"app-1\"` names client 'ci'",
        ),
    ];
    for (settings, expected) in cases {
        let error = settings
            .check(&clients(&["alice"]))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(expected), "{error}");
    }
    let local = OAuthSettings {
        issuer: "http://127.0.0.1:8080/realm".into(),
        ..settings()
    };
    assert!(local.check(&clients(&[])).is_ok());
}

#[test]
fn a_claim_maps_to_a_client_or_the_default_never_to_an_unconfigured_one() {
    let oauth = OAuth::new(OAuthSettings {
        claim_clients: BTreeMap::from([
            ("app-1".into(), ClientName::new("ci").unwrap()),
            ("gone".into(), ClientName::new("removed").unwrap()),
        ]),
        client_claim: "groups".into(),
        ..settings()
    })
    .unwrap();
    let clients = clients(&["ci", "alice"]);
    let claims = |value: Value| {
        serde_json::json!({ "groups": value })
            .as_object()
            .unwrap()
            .clone()
    };
    let client = |value| oauth.client_of(&claims(value), &clients);
    assert_eq!(client(json_str("app-1")).unwrap().as_str(), "ci");
    assert_eq!(client(json_str("alice")).unwrap().as_str(), "alice");
    // A list: the first value that names a client.
    let listed = client(serde_json::json!(["staff", "alice", "app-1"])).unwrap();
    assert_eq!(listed.as_str(), "alice");
    let refused = client(json_str("staff")).unwrap_err();
    assert_eq!(
        refused,
        Refusal::InsufficientScope(
            "the token's `groups` 'staff' names no configured client".into()
        )
    );
    let refused = client(json_str("gone")).unwrap_err();
    assert_eq!(
        refused,
        Refusal::InsufficientScope("the token's client 'removed' is no longer configured".into())
    );
}

fn json_str(value: &str) -> Value {
    Value::String(value.into())
}

#[test]
fn the_challenge_is_a_well_formed_header_value() {
    let oauth = OAuth::new(OAuthSettings {
        required_scopes: vec!["mcp:tools".into(), "mcp:read".into()],
        ..settings()
    })
    .unwrap();
    assert_eq!(
        oauth.challenge(None),
        "Bearer resource_metadata=\"https://toolgate.example.com/.well-known/\
         oauth-protected-resource/mcp\", scope=\"mcp:tools mcp:read\""
    );
    let refusal = Refusal::InvalidToken("a \"quoted\"\\ reason\n".into());
    let challenge = oauth.challenge(Some(&refusal));
    assert!(
        challenge.ends_with(", error=\"invalid_token\", error_description=\"a 'quoted'' reason\""),
        "{challenge}"
    );
    assert!(http::HeaderValue::from_str(&challenge).is_ok());
}

#[test]
fn a_key_verifies_only_the_algorithms_it_is_for() {
    let jwk: Jwk = serde_json::from_value(serde_json::json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
    }))
    .unwrap();
    assert!(fits(&jwk, Algorithm::ES256));
    assert!(!fits(&jwk, Algorithm::ES384));
    assert!(!fits(&jwk, Algorithm::HS256));
    let mut encryption = jwk.clone();
    encryption.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Encryption);
    assert!(!fits(&encryption, Algorithm::ES256));
    let mut unstated = jwk;
    unstated.common.key_algorithm = None;
    assert!(fits(&unstated, Algorithm::ES256));
    assert!(!fits(&unstated, Algorithm::RS256));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// Whatever a client sends as a bearer token is refused with a reason,
    /// never a panic (the keys' URL is a closed port, so nothing verifies).
    #[test]
    fn any_token_text_is_refused_with_a_reason(
        token in "[A-Za-z0-9_=.-]{0,300}|eyJ[A-Za-z0-9_-]{0,60}\\.[A-Za-z0-9_-]{0,60}\\.[A-Za-z0-9_-]{0,60}",
    ) {
        let oauth = OAuth::new(OAuthSettings {
            jwks_url: Some("http://127.0.0.1:9/keys".into()),
            default_client: Some(ClientName::new("alice").unwrap()),
            ..settings()
        })
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let refusal = runtime
            .block_on(oauth.verify(&token, &clients(&["alice"])))
            .unwrap_err();
        let reason = match refusal {
            Refusal::InvalidToken(why)
            | Refusal::InsufficientScope(why)
            | Refusal::KeysUnavailable(why) => why,
        };
        proptest::prop_assert!(!reason.is_empty());
    }
}
