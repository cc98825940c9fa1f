//! Named clients, each with a bearer token of its own. The gateway keeps
//! only each token's SHA-256, so the configuration holds no secret; a
//! request's token is hashed and looked up. A session belongs to the client
//! that opened it: another client presenting its id is told the session is
//! unknown.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use toolgate_store::ConversationId;

use crate::bounded::bounded;

/// The longest client name.
pub const MAX_CLIENT_NAME: usize = 64;

/// A client's name: 1-64 of `A-Z a-z 0-9 _ . -`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientName(Arc<str>);

impl ClientName {
    /// `name`, checked.
    pub fn new(name: &str) -> Result<Self, ClientError> {
        let fits = !name.is_empty()
            && name.len() <= MAX_CLIENT_NAME
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'));
        if fits {
            Ok(Self(name.into()))
        } else {
            Err(ClientError::Name(bounded(name, 80).into_owned()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The SHA-256 of a token.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash([u8; 32]);

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenHash(..)")
    }
}

impl TokenHash {
    /// The hash of `token`.
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// A hash written as 64 hexadecimal digits.
    pub fn from_hex(hex: &str) -> Result<Self, ClientError> {
        let digits = hex.trim().as_bytes();
        if digits.len() != 64 {
            return Err(ClientError::Hash(format!(
                "is {} characters long; a SHA-256 is 64 hexadecimal digits",
                digits.len()
            )));
        }
        let mut hash = [0u8; 32];
        for (byte, pair) in hash.iter_mut().zip(digits.chunks_exact(2)) {
            let text = std::str::from_utf8(pair).unwrap_or("");
            *byte = u8::from_str_radix(text, 16).map_err(|_| {
                ClientError::Hash("holds a character that is not a hexadecimal digit".to_owned())
            })?;
        }
        Ok(Self(hash))
    }

    /// The hash as 64 lowercase hexadecimal digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// A client configuration that does not check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// A name outside the allowed form.
    #[error("client name {0:?} is not 1-{MAX_CLIENT_NAME} of the characters A-Z a-z 0-9 _ . -")]
    Name(String),
    /// A `token_sha256` that is not a SHA-256.
    #[error("`token_sha256` {0}")]
    Hash(String),
    /// Two clients with one token.
    #[error("clients '{0}' and '{1}' have the same token; each client needs its own")]
    SameToken(ClientName, ClientName),
}

/// The configured clients, by token hash, and those that sign in through
/// OAuth only.
#[derive(Clone, Debug, Default)]
pub struct Clients {
    by_hash: HashMap<TokenHash, ClientName>,
    names: BTreeSet<ClientName>,
}

impl Clients {
    /// The clients; two with one token are refused.
    pub fn new(
        clients: impl IntoIterator<Item = (ClientName, TokenHash)>,
    ) -> Result<Self, ClientError> {
        let mut by_hash = HashMap::new();
        for (name, hash) in clients {
            if let Some(first) = by_hash.insert(hash, name.clone()) {
                let (first, second) = if first <= name {
                    (first, name)
                } else {
                    (name, first)
                };
                return Err(ClientError::SameToken(first, second));
            }
        }
        let names = by_hash.values().cloned().collect();
        Ok(Self { by_hash, names })
    }

    /// These clients and `names`, which have no token of their own: they
    /// come in with an OAuth token mapped to them.
    pub fn with_token_less(mut self, names: impl IntoIterator<Item = ClientName>) -> Self {
        self.names.extend(names);
        self
    }

    /// Whether no client is configured.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether no client has a token of its own.
    pub fn has_no_tokens(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// How many clients there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Every client's name, in order.
    pub fn names(&self) -> impl Iterator<Item = &ClientName> {
        self.names.iter()
    }

    /// Whether `name` is a configured client.
    pub fn contains(&self, name: &ClientName) -> bool {
        self.names.contains(name)
    }

    /// The client whose token `token` is.
    pub fn identify(&self, token: &str) -> Option<&ClientName> {
        self.by_hash.get(&TokenHash::of(token))
    }
}

/// Who sent a request: a named client, or (`None`) the operator: the
/// stdio connection, the holder of the shared `--token-file` token, or
/// anyone when no token is required.
pub type ClientKey = Option<ClientName>;

/// What the HTTP listener established of a request, carried in its
/// extensions to the rmcp handler (which runs on another task than the
/// request): its client and user, and its session (whose owner it checked).
/// The handler builds the request's scope from it; a request without it is
/// refused.
#[derive(Clone, Debug)]
pub(crate) struct RequestEdge {
    pub(crate) owner: Owner,
    pub(crate) session: Option<ConversationId>,
}

/// Whose a session is: the client that opened it and, when it came with an
/// OAuth token, the token's subject. One user's session is not another's,
/// even where both users' tokens map to one client. The default is the
/// operator's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) client: ClientKey,
    pub(crate) subject: Option<Arc<str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        assert!(ClientName::new("ci-bot.v2_A").is_ok());
        for bad in ["", "a b", "ünïcode", "a/b", &"x".repeat(65)] {
            assert!(ClientName::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_token_is_found_by_its_hash_only() {
        let alice = ClientName::new("alice").unwrap();
        let hash = TokenHash::of("tg_secret-of-alice");
        assert_eq!(TokenHash::from_hex(&hash.to_hex()).unwrap(), hash);
        let clients = Clients::new([(alice.clone(), hash)]).unwrap();
        assert_eq!(clients.identify("tg_secret-of-alice"), Some(&alice));
        assert_eq!(clients.identify("tg_secret-of-alicE"), None);
        assert_eq!(clients.identify(&hash.to_hex()), None);
    }

    #[test]
    fn bad_hashes_and_shared_tokens_are_named() {
        let error = TokenHash::from_hex("abc").unwrap_err().to_string();
        assert!(error.contains("3 characters long"), "{error}");
        let error = TokenHash::from_hex(&"g".repeat(64))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a hexadecimal digit"), "{error}");
        let hash = TokenHash::of("same");
        let error = Clients::new([
            (ClientName::new("bob").unwrap(), hash),
            (ClientName::new("alice").unwrap(), hash),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "clients 'alice' and 'bob' have the same token; each client needs its own"
        );
    }
}
