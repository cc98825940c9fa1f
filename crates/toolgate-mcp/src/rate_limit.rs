//! [`RateLimits`]: token buckets per caller and per caller and tool. Every
//! bucket is made at start for the configured clients (and the shared
//! token), so the hot path takes only its own bucket's lock, never a
//! global one.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::clients::{ClientKey, ClientName};

/// The JSON-RPC error code of a call refused by a rate limit.
pub(crate) const RATE_LIMITED_CODE: i32 = -32000;

/// The longest period a limit may count over: a day.
pub const MAX_LIMIT_PERIOD: Duration = Duration::from_secs(24 * 3600);

/// `calls` per `per`, with bursts of up to `calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls allowed per period (and the largest burst).
    pub calls: u32,
    /// The period.
    pub per: Duration,
}

impl RateLimit {
    /// A limit, checked: at least one call, over a period of more than
    /// nothing and at most a day.
    pub fn new(calls: u32, per: Duration) -> Result<Self, String> {
        if calls == 0 {
            return Err("`calls` must be at least 1".to_owned());
        }
        if per.is_zero() || per > MAX_LIMIT_PERIOD {
            return Err(format!(
                "`per_seconds` must be above 0 and at most {}, got {}",
                MAX_LIMIT_PERIOD.as_secs(),
                per.as_secs_f64()
            ));
        }
        Ok(Self { calls, per })
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tool calls per {} s",
            self.calls,
            self.per.as_secs_f64()
        )
    }
}

/// What the configuration limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateLimitSettings {
    /// Every caller's tool calls, each caller separately.
    pub per_client: Option<RateLimit>,
    /// A client's own limit instead of `per_client`.
    pub clients: HashMap<ClientName, RateLimit>,
    /// Calls of one tool, each caller separately.
    pub tools: HashMap<String, RateLimit>,
}

/// A call refused for now.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimited {
    /// What was limited, for the message: `client 'x'`, `tool 'y' for client 'x'`.
    pub what: String,
    /// The limit.
    pub limit: RateLimit,
    /// When the next call would be allowed.
    pub retry_after: Duration,
}

impl fmt::Display for RateLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Rate limit reached: {} may make {}; retry in {:.1} s",
            self.what,
            self.limit,
            self.retry_after.as_secs_f64()
        )
    }
}

#[derive(Debug)]
struct Bucket {
    limit: RateLimit,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(limit: RateLimit, now: Instant) -> Self {
        Self {
            limit,
            state: Mutex::new((f64::from(limit.calls), now)),
        }
    }

    /// Takes a token at `now`, or says how long until one is there.
    fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (tokens, at) = &mut *state;
        let rate = f64::from(self.limit.calls) / self.limit.per.as_secs_f64();
        let elapsed = now.saturating_duration_since(*at).as_secs_f64();
        *tokens = (*tokens + elapsed * rate).min(f64::from(self.limit.calls));
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / rate))
        }
    }
}

/// The buckets of every configured caller.
#[derive(Debug, Default)]
pub struct RateLimits {
    /// Per caller: the shared token (`None`) and each named client.
    callers: HashMap<ClientKey, Bucket>,
    /// Per caller and tool.
    tools: HashMap<(ClientKey, String), Bucket>,
}

impl RateLimits {
    /// Buckets for `settings`, for the shared token and `clients`.
    pub fn new<'a>(
        settings: &RateLimitSettings,
        clients: impl IntoIterator<Item = &'a ClientName>,
    ) -> Self {
        let now = Instant::now();
        let callers: Vec<ClientKey> = std::iter::once(None)
            .chain(clients.into_iter().cloned().map(Some))
            .collect();
        let mut limits = Self::default();
        for caller in &callers {
            let own = caller
                .as_ref()
                .and_then(|client| settings.clients.get(client));
            if let Some(limit) = own.or(settings.per_client.as_ref()) {
                limits
                    .callers
                    .insert(caller.clone(), Bucket::new(*limit, now));
            }
            for (tool, limit) in &settings.tools {
                limits
                    .tools
                    .insert((caller.clone(), tool.clone()), Bucket::new(*limit, now));
            }
        }
        limits
    }

    /// Admits one tool call of `caller`, counted against its own limit.
    pub fn admit_call(&self, client: &ClientKey) -> Result<(), RateLimited> {
        let Some(bucket) = self.callers.get(client) else {
            return Ok(());
        };
        bucket
            .take(Instant::now())
            .map_err(|retry_after| RateLimited {
                what: describe(client),
                limit: bucket.limit,
                retry_after,
            })
    }

    /// Admits one call of `tool` by `caller`, counted against the tool's
    /// limit.
    pub fn admit_tool(&self, client: &ClientKey, tool: &str) -> Result<(), RateLimited> {
        if self.tools.is_empty() {
            return Ok(());
        }
        let Some(bucket) = self.tools.get(&(client.clone(), tool.to_owned())) else {
            return Ok(());
        };
        bucket
            .take(Instant::now())
            .map_err(|retry_after| RateLimited {
                what: format!("tool '{tool}' for {}", describe(client)),
                limit: bucket.limit,
                retry_after,
            })
    }
}

fn describe(client: &ClientKey) -> String {
    match client {
        Some(client) => format!("client '{client}'"),
        None => "this client".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_its_rate() {
        let start = Instant::now();
        let bucket = Bucket::new(RateLimit::new(3, Duration::from_secs(60)).unwrap(), start);
        for _ in 0..3 {
            assert_eq!(bucket.take(start), Ok(()));
        }
        let wait = bucket.take(start).unwrap_err();
        assert!((wait.as_secs_f64() - 20.0).abs() < 0.01, "{wait:?}");
        // One token every 20 s.
        assert!(bucket.take(start + Duration::from_secs(19)).is_err());
        assert_eq!(bucket.take(start + Duration::from_secs(40)), Ok(()));
        // Never more than the burst, however long it waited.
        let later = start + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(bucket.take(later), Ok(()));
        }
        assert!(bucket.take(later).is_err());
    }

    #[test]
    fn each_caller_and_tool_counts_on_its_own() {
        let alice = ClientName::new("alice").unwrap();
        let bob = ClientName::new("bob").unwrap();
        let settings = RateLimitSettings {
            per_client: Some(RateLimit::new(2, Duration::from_secs(60)).unwrap()),
            clients: HashMap::from([(
                bob.clone(),
                RateLimit::new(1, Duration::from_secs(60)).unwrap(),
            )]),
            tools: HashMap::from([(
                "web_fetch".to_owned(),
                RateLimit::new(1, Duration::from_secs(60)).unwrap(),
            )]),
        };
        let limits = RateLimits::new(&settings, [&alice, &bob]);
        let (alice, bob) = (Some(alice), Some(bob));
        assert!(limits.admit_call(&alice).is_ok());
        assert!(limits.admit_call(&alice).is_ok());
        let refused = limits.admit_call(&alice).unwrap_err();
        assert_eq!(refused.what, "client 'alice'");
        assert!(
            refused.to_string().starts_with(
                "Rate limit reached: client 'alice' may make 2 tool calls per 60 s; retry in "
            ),
            "{refused}"
        );
        // Bob has his own, lower limit; the shared token its own bucket.
        assert!(limits.admit_call(&bob).is_ok());
        assert!(limits.admit_call(&bob).is_err());
        assert!(limits.admit_call(&None).is_ok());
        // A tool's limit counts per caller too.
        assert!(limits.admit_tool(&alice, "web_fetch").is_ok());
        assert_eq!(
            limits.admit_tool(&alice, "web_fetch").unwrap_err().what,
            "tool 'web_fetch' for client 'alice'"
        );
        assert!(limits.admit_tool(&bob, "web_fetch").is_ok());
        assert!(limits.admit_tool(&alice, "time_now").is_ok());
    }

    #[test]
    fn limits_are_checked() {
        assert!(RateLimit::new(0, Duration::from_secs(1)).is_err());
        assert!(RateLimit::new(1, Duration::ZERO).is_err());
        assert!(RateLimit::new(1, Duration::from_secs(86_401)).is_err());
    }
}
