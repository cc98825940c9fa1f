//! What every request is checked against before it reaches rmcp: its
//! `Host` (DNS rebinding), and its bearer token, when one is required: the
//! shared token, a client's own, or an OAuth issuer's JWT mapped to a
//! client.

use std::sync::Arc;

use http::{Response, StatusCode, header};

use super::options::HttpLimits;
use super::responses::{Body, Rejection};
use crate::clients::Owner;
use crate::gateway::Access;
use crate::oauth::{OAuth, Refusal};

/// What every request is checked against before it reaches rmcp.
#[derive(Debug)]
pub(super) struct Guard {
    /// The shared token, when one is configured.
    pub(super) token: Option<Arc<str>>,
    /// Accepted `Host` values (rmcp checks them for `/mcp`).
    pub(super) hosts: Vec<String>,
    pub(super) limits: HttpLimits,
}

impl Guard {
    /// Whether a request with these headers names an accepted host: a page
    /// that rebinds its own name to this address gets nothing.
    pub(super) fn host_allowed(&self, headers: &http::HeaderMap) -> bool {
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        let name = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => name,
            _ => host,
        };
        self.hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(name))
    }

    /// Whether requests need no token.
    pub(super) fn open_to_all(&self, access: &Access) -> bool {
        self.token.is_none() && access.clients.has_no_tokens() && access.oauth.is_none()
    }

    /// Who sent a request with these headers: a client of `access`, a
    /// client an OAuth token maps to (with its user), or the holder of the
    /// shared token. `Err` when a token is required and no accepted one
    /// came.
    pub(super) async fn owner(
        &self,
        headers: &http::HeaderMap,
        access: &Access,
    ) -> Result<Owner, Refused> {
        if self.open_to_all(access) {
            return Ok(Owner::default());
        }
        let clients = &access.clients;
        let refused = |refusal| Refused {
            refusal,
            oauth: access.oauth.clone(),
        };
        let presented = bearer(headers.get(header::AUTHORIZATION)).ok_or_else(|| refused(None))?;
        if let Some(token) = &self.token
            && same_token(presented, token)
        {
            return Ok(Owner::default());
        }
        if let Some(client) = clients.identify(presented) {
            return Ok(Owner {
                client: Some(client.clone()),
                subject: None,
            });
        }
        let Some(oauth) = &access.oauth else {
            return Err(refused(None));
        };
        match oauth.verify(presented, clients).await {
            Ok(verified) => Ok(Owner {
                client: Some(verified.client),
                subject: verified.subject,
            }),
            Err(refusal) => Err(refused(Some(refusal))),
        }
    }
}

/// A request refused by the guard, and how to say so.
pub(super) struct Refused {
    refusal: Option<Refusal>,
    oauth: Option<Arc<OAuth>>,
}

impl Refused {
    pub(super) fn into_response(self) -> Response<Body> {
        let (status, text) = match &self.refusal {
            None => (
                StatusCode::UNAUTHORIZED,
                "A bearer token is required\n".to_owned(),
            ),
            Some(Refusal::InvalidToken(why)) => {
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}\n"))
            }
            Some(Refusal::InsufficientScope(why)) => {
                (StatusCode::FORBIDDEN, format!("Forbidden: {why}\n"))
            }
            Some(Refusal::KeysUnavailable(why)) => {
                tracing::warn!(reason = %why, "the OAuth issuer's keys cannot be read");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable: the token issuer's keys cannot be read right now; \
                     retry shortly.\n"
                        .to_owned(),
                )
            }
        };
        let challenge = match &self.oauth {
            Some(oauth) => oauth.challenge(self.refusal.as_ref()),
            None => "Bearer".to_owned(),
        };
        let mut response = Rejection::text(status, text).into_response();
        if status != StatusCode::SERVICE_UNAVAILABLE
            && let Ok(value) = http::HeaderValue::from_str(&challenge)
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The token of an `Authorization: Bearer <token>` header. The scheme is
/// case-insensitive (RFC 7235).
fn bearer(header: Option<&http::HeaderValue>) -> Option<&str> {
    let (scheme, presented) = header
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim_start().split_once(' '))?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| presented.trim())
}

/// Compares the presented token with the expected one in constant time.
fn same_token(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `header` carries exactly the bearer token `expected`.
#[cfg(test)]
fn authorized(header: Option<&http::HeaderValue>, expected: &str) -> bool {
    bearer(header).is_some_and(|presented| same_token(presented, expected))
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
