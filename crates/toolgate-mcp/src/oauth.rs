//! The gateway as an OAuth 2.1 resource server, as the MCP authorization
//! spec describes it: it publishes its protected resource metadata
//! (RFC 9728), answers a request without a valid token with `401` and a
//! `WWW-Authenticate` header pointing there, and accepts bearer JWTs signed
//! by the configured issuer's keys (its JWKS, fetched and cached) for this
//! gateway's audience. A token's claim names the client whose policy and
//! limits apply.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde_json::Value;

use crate::bounded::bounded;
use crate::clients::{ClientName, Clients};

/// The path of the protected resource metadata at the root; the metadata
/// is also served at this path followed by the resource's own path.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The longest token verified; a longer one is refused unread.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The largest metadata or key set document read from the issuer.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// How long one request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Keys older than this are fetched again before the next verification.
const KEYS_TTL: Duration = Duration::from_secs(60 * 60);
/// The shortest time between two fetches of the keys: a token naming an
/// unknown key cannot make the gateway hammer the issuer.
const MIN_REFETCH: Duration = Duration::from_secs(30);
/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECONDS: u64 = 60;

/// `[auth.oauth]`: who issues the tokens, for which audience, and how a
/// token's claims name a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthSettings {
    /// The authorization server's issuer identifier (`iss`).
    pub issuer: String,
    /// This gateway's resource identifier: the `aud` tokens must carry, and
    /// the `resource` of its metadata (`https://toolgate.example.com/mcp`).
    pub audience: String,
    /// Where the issuer's keys are; discovered from its metadata when unset.
    pub jwks_url: Option<String>,
    /// The claim naming the client (`client_id` by default; `azp`, `sub`
    /// or a groups claim holding a list are common).
    pub client_claim: String,
    /// Claim values mapped to client names; a value that is itself a
    /// client's name needs no entry.
    pub claim_clients: BTreeMap<String, ClientName>,
    /// The client of a token whose claim maps to none; without it such a
    /// token is refused.
    pub default_client: Option<ClientName>,
    /// Scopes every token must hold.
    pub required_scopes: Vec<String>,
}

impl OAuthSettings {
    /// The default claim naming a token's client (RFC 9068).
    pub const DEFAULT_CLIENT_CLAIM: &str = "client_id";

    /// Checks the settings against the configured clients; the error names
    /// the key at fault.
    pub fn check(&self, clients: &Clients) -> Result<(), OAuthError> {
        issuer_url("issuer", &self.issuer)?;
        if let Some(jwks) = &self.jwks_url {
            issuer_url("jwks_url", jwks)?;
        }
        resource_url(&self.audience)?;
        if self.client_claim.is_empty() {
            return Err(OAuthError::Setting(
                "client_claim".into(),
                "is empty; name the claim that says which client a token is for".into(),
            ));
        }
        let mapped = self
            .claim_clients
            .iter()
            .map(|(value, client)| (format!("clients.{value:?}"), client));
        let default = self
            .default_client
            .iter()
            .map(|client| ("default_client".to_owned(), client));
        for (key, client) in mapped.chain(default) {
            if !clients.contains(client) {
                return Err(OAuthError::Setting(
                    key,
                    format!("names client '{client}', which has no [clients.{client}] table"),
                ));
            }
        }
        Ok(())
    }

    /// Where this resource's metadata is published (RFC 9728 section 3.1:
    /// the well-known path, followed by the resource's path).
    fn metadata_url(&self) -> Result<String, OAuthError> {
        let resource = resource_url(&self.audience)?;
        let path = resource.path().trim_end_matches('/');
        let mut url = resource.clone();
        url.set_path(&format!("{RESOURCE_METADATA_PATH}{path}"));
        url.set_query(None);
        Ok(url.to_string())
    }
}

/// `[auth.oauth]` settings that do not check, or an issuer that cannot be
/// read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// A setting that does not check.
    #[error("[auth.oauth] `{0}` {1}")]
    Setting(String, String),
    /// The issuer's metadata or keys could not be read.
    #[error("{0}")]
    Issuer(String),
}

/// Why a request's token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No token, or one that is not valid here: `401`.
    InvalidToken(String),
    /// A valid token that may not use the gateway: `403`.
    InsufficientScope(String),
    /// The issuer's keys cannot be read right now: `503`.
    KeysUnavailable(String),
}

/// Who a valid token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The client whose policy and limits apply.
    pub client: ClientName,
    /// The token's `sub`: the user, whose sessions are their own.
    pub subject: Option<Arc<str>>,
}

/// The issuer's keys, and when they were fetched.
#[derive(Debug, Default)]
struct Keys {
    set: Vec<Jwk>,
    fetched: Option<Instant>,
}

/// Where the keys are fetched from, once known, and the last attempt.
#[derive(Debug, Default)]
struct Fetching {
    jwks_url: Option<String>,
    attempted: Option<Instant>,
}

/// The resource server: verifies tokens against the issuer's keys.
#[derive(Debug)]
pub struct OAuth {
    settings: OAuthSettings,
    metadata_url: String,
    http: reqwest::Client,
    keys: RwLock<Arc<Keys>>,
    fetching: tokio::sync::Mutex<Fetching>,
}

impl OAuth {
    /// A resource server for `settings`; the keys are fetched on first use.
    pub fn new(settings: OAuthSettings) -> Result<Self, OAuthError> {
        let metadata_url = settings.metadata_url()?;
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| OAuthError::Issuer(format!("no HTTP client: {error}")))?;
        Ok(Self {
            fetching: tokio::sync::Mutex::new(Fetching {
                jwks_url: settings.jwks_url.clone(),
                attempted: None,
            }),
            settings,
            metadata_url,
            http,
            keys: RwLock::new(Arc::default()),
        })
    }

    /// Fetches the issuer's keys now; serving starts without them when this
    /// fails, and fetches again on the first token.
    pub async fn prefetch(&self) -> Result<usize, OAuthError> {
        self.refresh(None).await?;
        Ok(self.current_keys().set.len())
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// The URL of this resource's metadata, for `WWW-Authenticate`.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// Whether `path` is where the metadata is served.
    pub fn is_metadata_path(&self, path: &str) -> bool {
        path == RESOURCE_METADATA_PATH
            || Url::parse(&self.metadata_url).is_ok_and(|url| url.path() == path)
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut document = serde_json::json!({
            "resource": self.settings.audience,
            "authorization_servers": [self.settings.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolgate",
        });
        if !self.settings.required_scopes.is_empty() {
            document["scopes_supported"] = self.settings.required_scopes.clone().into();
        }
        document
    }

    /// The `WWW-Authenticate` value answering `refusal` (or a request with
    /// no token, when `None`).
    pub fn challenge(&self, refusal: Option<&Refusal>) -> String {
        let mut value = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if !self.settings.required_scopes.is_empty() {
            value.push_str(&format!(
                ", scope=\"{}\"",
                self.settings.required_scopes.join(" ")
            ));
        }
        let (code, description) = match refusal {
            Some(Refusal::InvalidToken(why)) => ("invalid_token", why),
            Some(Refusal::InsufficientScope(why)) => ("insufficient_scope", why),
            Some(Refusal::KeysUnavailable(_)) | None => return value,
        };
        // Quoted-string: no quotes or backslashes inside.
        let description: String = description
            .chars()
            .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        format!("{value}, error=\"{code}\", error_description=\"{description}\"")
    }

    /// Verifies `token`, and names its client among `clients`.
    pub async fn verify(&self, token: &str, clients: &Clients) -> Result<Verified, Refusal> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::InvalidToken(format!(
                "the token is over {MAX_TOKEN_BYTES} bytes"
            )));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|error| {
            Refusal::InvalidToken(format!("the token is not a signed JWT ({error})"))
        })?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(Refusal::InvalidToken(format!(
                "the token is signed with {:?}; only the issuer's public keys are accepted",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let key = match self.find_key(kid, header.alg) {
            Some(key) if !self.keys_stale() => key,
            found => {
                // Unknown key: the issuer may have rotated its keys.
                match self.refresh(found.is_some().then_some(KEYS_TTL)).await {
                    Ok(()) => {}
                    Err(error) if found.is_none() && self.current_keys().set.is_empty() => {
                        return Err(Refusal::KeysUnavailable(error.to_string()));
                    }
                    Err(error) => tracing::warn!(%error, "refreshing the issuer's keys failed"),
                }
                self.find_key(kid, header.alg).ok_or_else(|| {
                    Refusal::InvalidToken(match kid {
                        Some(kid) => format!("the issuer has no key '{kid}' for {:?}", header.alg),
                        None => format!("the issuer has no key for {:?}", header.alg),
                    })
                })?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &validation)
                .map_err(|error| Refusal::InvalidToken(describe(&error)))?
                .claims;
        self.check_scopes(&claims)?;
        let client = self.client_of(&claims, clients)?;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .map(|sub| Arc::from(bounded(sub, 256).as_ref()));
        Ok(Verified { client, subject })
    }

    fn check_scopes(&self, claims: &serde_json::Map<String, Value>) -> Result<(), Refusal> {
        let held: Vec<&str> = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(scopes)), _) => scopes.split_whitespace().collect(),
            (_, Some(Value::Array(scopes))) => scopes.iter().filter_map(Value::as_str).collect(),
            (_, Some(Value::String(scopes))) => scopes.split_whitespace().collect(),
            _ => Vec::new(),
        };
        let missing: Vec<&str> = self
            .settings
            .required_scopes
            .iter()
            .map(String::as_str)
            .filter(|scope| !held.contains(scope))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Refusal::InsufficientScope(format!(
                "the token lacks the scope(s) {}",
                missing.join(" ")
            )))
        }
    }

    /// The client `claims` name: the first value of the client claim that
    /// maps to a client (or is one's name), else the default client.
    fn client_of(
        &self,
        claims: &serde_json::Map<String, Value>,
        clients: &Clients,
    ) -> Result<ClientName, Refusal> {
        let claim = &self.settings.client_claim;
        let values: Vec<&str> = match claims.get(claim) {
            Some(Value::String(value)) => vec![value],
            Some(Value::Array(values)) => values.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let named = values.iter().find_map(|value| {
            self.settings
                .claim_clients
                .get(*value)
                .cloned()
                .or_else(|| {
                    ClientName::new(value)
                        .ok()
                        .filter(|name| clients.contains(name))
                })
        });
        // A client removed from the configuration since is no client: its
        // name must not come in without the policy it had.
        match named.or_else(|| self.settings.default_client.clone()) {
            Some(client) if clients.contains(&client) => Ok(client),
            Some(client) => Err(Refusal::InsufficientScope(format!(
                "the token's client '{client}' is no longer configured"
            ))),
            None => Err(Refusal::InsufficientScope(match values.first() {
                Some(value) => format!(
                    "the token's `{claim}` '{}' names no configured client",
                    bounded(value, 80)
                ),
                None => format!("the token has no `{claim}` claim naming its client"),
            })),
        }
    }

    fn current_keys(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn keys_stale(&self) -> bool {
        self.current_keys()
            .fetched
            .is_none_or(|fetched| fetched.elapsed() >= KEYS_TTL)
    }

    /// The key of the current set that verifies `alg` tokens with `kid`.
    fn find_key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let keys = self.current_keys();
        let mut candidates = keys.set.iter().filter(|jwk| {
            kid.is_none_or(|kid| jwk.common.key_id.as_deref() == Some(kid)) && fits(jwk, alg)
        });
        let jwk = candidates.next()?;
        // Without a `kid`, only an unambiguous key is used.
        if kid.is_none() && candidates.next().is_some() {
            return None;
        }
        DecodingKey::from_jwk(jwk).ok()
    }

    /// Fetches the keys again unless the last attempt is more recent than
    /// `unless_within` (at least [`MIN_REFETCH`]); one fetch at a time.
    async fn refresh(&self, unless_within: Option<Duration>) -> Result<(), OAuthError> {
        let mut fetching = self.fetching.lock().await;
        let within = unless_within.unwrap_or(MIN_REFETCH).max(MIN_REFETCH);
        if fetching
            .attempted
            .is_some_and(|attempted| attempted.elapsed() < within)
        {
            return Ok(());
        }
        fetching.attempted = Some(Instant::now());
        let jwks_url = match &fetching.jwks_url {
            Some(url) => url.clone(),
            None => {
                let url = self.discover_jwks_url().await?;
                fetching.jwks_url = Some(url.clone());
                url
            }
        };
        let document = self.fetch_json(&jwks_url).await?;
        let set: JwkSet = serde_json::from_value(document).map_err(|error| {
            OAuthError::Issuer(format!("{jwks_url} is not a JSON Web Key Set: {error}"))
        })?;
        // Secret keys have no place in a published set; they are never used.
        let set: Vec<Jwk> = set
            .keys
            .into_iter()
            .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
            .collect();
        tracing::debug!(keys = set.len(), url = %jwks_url, "fetched the issuer's keys");
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Keys {
            set,
            fetched: Some(Instant::now()),
        });
        Ok(())
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414's location first,
    /// then OpenID Connect's two.
    async fn discover_jwks_url(&self) -> Result<String, OAuthError> {
        let issuer = issuer_url("issuer", &self.settings.issuer)?;
        let path = issuer.path().trim_end_matches('/');
        let at = |well_known: &str| {
            let mut url = issuer.clone();
            url.set_path(&well_known.replace("{path}", path));
            url.to_string()
        };
        let candidates = [
            at("/.well-known/oauth-authorization-server{path}"),
            at("/.well-known/openid-configuration{path}"),
            at("{path}/.well-known/openid-configuration"),
        ];
        let mut failures = Vec::new();
        for url in candidates {
            match self.fetch_json(&url).await {
                Ok(metadata) => {
                    if metadata.get("issuer").and_then(Value::as_str)
                        != Some(self.settings.issuer.as_str())
                    {
                        failures.push(format!("{url} is for another issuer"));
                        continue;
                    }
                    let Some(jwks) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                        failures.push(format!("{url} has no jwks_uri"));
                        continue;
                    };
                    issuer_url("jwks_uri of the issuer's metadata", jwks)?;
                    return Ok(jwks.to_owned());
                }
                Err(error) => failures.push(error.to_string()),
            }
        }
        Err(OAuthError::Issuer(format!(
            "the issuer's metadata was not found ({}); set `jwks_url` in [auth.oauth]",
            failures.join("; ")
        )))
    }

    /// A JSON document at `url`, within the size and time bounds.
    async fn fetch_json(&self, url: &str) -> Result<Value, OAuthError> {
        let failed = |why: String| OAuthError::Issuer(format!("{url}: {why}"));
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| failed(error.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("answered {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| failed(error.without_url().to_string()))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(failed(format!("over {MAX_DOCUMENT_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|error| failed(format!("not JSON: {error}")))
    }
}

/// Whether `jwk` may verify a token signed with `alg`.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    use jsonwebtoken::jwk::PublicKeyUse;
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|used| *used != PublicKeyUse::Signature)
    {
        return false;
    }
    if let Some(stated) = jwk.common.key_algorithm {
        return key_algorithm(alg) == Some(stated);
    }
    matches!(
        (&jwk.algorithm, alg),
        (
            AlgorithmParameters::RSA(_),
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ) | (
            AlgorithmParameters::EllipticCurve(_),
            Algorithm::ES256 | Algorithm::ES384
        ) | (AlgorithmParameters::OctetKeyPair(_), Algorithm::EdDSA)
    )
}

/// The JWK `alg` naming `alg`.
fn key_algorithm(alg: Algorithm) -> Option<KeyAlgorithm> {
    Some(match alg {
        Algorithm::RS256 => KeyAlgorithm::RS256,
        Algorithm::RS384 => KeyAlgorithm::RS384,
        Algorithm::RS512 => KeyAlgorithm::RS512,
        Algorithm::PS256 => KeyAlgorithm::PS256,
        Algorithm::PS384 => KeyAlgorithm::PS384,
        Algorithm::PS512 => KeyAlgorithm::PS512,
        Algorithm::ES256 => KeyAlgorithm::ES256,
        Algorithm::ES384 => KeyAlgorithm::ES384,
        Algorithm::EdDSA => KeyAlgorithm::EdDSA,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => return None,
    })
}

/// Why a token failed verification, in words.
fn describe(error: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidAudience => "the token is not for this gateway (aud)".to_owned(),
        ErrorKind::InvalidIssuer => "the token is from another issuer (iss)".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => format!("the token does not verify ({error})"),
    }
}

/// `value` of `key` as an issuer-side URL: https, or http on a loopback
/// host (a local issuer).
fn issuer_url(key: &str, value: &str) -> Result<Url, OAuthError> {
    let url = Url::parse(value).map_err(|error| {
        OAuthError::Setting(key.to_owned(), format!("'{value}' is not a URL: {error}"))
    })?;
    let loopback = url.host_str().is_some_and(|host| {
        host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(OAuthError::Setting(
            key.to_owned(),
            format!("'{value}' must be an https URL (http only for a loopback host)"),
        )),
    }
}

/// The audience as this gateway's resource URL.
fn resource_url(audience: &str) -> Result<Url, OAuthError> {
    let url = Url::parse(audience).map_err(|error| {
        OAuthError::Setting(
            "audience".into(),
            format!(
                "'{audience}' is not a URL ({error}); it is this gateway's address as clients \
                 reach it, e.g. https://toolgate.example.com/mcp"
            ),
        )
    })?;
    if !matches!(url.scheme(), "https" | "http") || url.fragment().is_some() {
        return Err(OAuthError::Setting(
            "audience".into(),
            format!("'{audience}' must be an http(s) URL without a fragment"),
        ));
    }
    Ok(url)
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
