//! What toolgate's fuzz targets share: structure-aware input generators
//! ([`json`], [`toml`], [`mutate`]) and a [runner](fuzz) that counts the
//! inputs of each target and lets its input count be raised from the
//! environment.
//!
//! The targets themselves live with the code they fuzz, as tests named
//! `fuzz_*` (`toolgate-core`, `toolgate-tools`, `toolgate-mcp`,
//! `toolgate-cli`); the normal test suite runs each on a few hundred inputs,
//! `scripts/fuzz` on millions. A target's inputs come from
//! `TOOLGATE_FUZZ_CASES_<TARGET>`, else `PROPTEST_CASES`, else its default.
#![deny(missing_docs)]

pub mod json;
pub mod mutate;
mod runner;
pub mod toml;

pub use runner::{CASES_VARIABLE, HANG_VARIABLE, KnownFault, STRICT_VARIABLE, Tally, Target, fuzz};

/// The panic `Duration::from_secs_f64` gives a number of seconds too large
/// for a `Duration` (`timeout_seconds = 1e300`). Known and being fixed
/// outside the fuzzing work; the configuration targets tolerate it (and
/// count it) until then.
pub const TIMEOUT_OVERFLOW: KnownFault = KnownFault {
    message: "cannot convert float seconds to Duration",
    why: "a timeout of more seconds than a Duration holds (being fixed separately)",
};

/// A timeout setting that passes the check (a positive, finite number of
/// seconds) but becomes a zero `Duration`: below a nanosecond
/// (`timeout_seconds = 1e-10`), `Duration::from_secs_f64` rounds it to
/// zero, and every call or start-up then times out at once. In the same
/// lines as [`TIMEOUT_OVERFLOW`], so left to the change fixing that; the
/// configuration targets report it with [`KnownFault::found`].
pub const ZERO_TIMEOUT: KnownFault = KnownFault {
    message: "a positive timeout setting became a zero Duration",
    why: "timeouts below a nanosecond round to zero (in the lines of the overflow fix)",
};

/// The kind of value a key takes: generated values are mostly of that kind
/// (so a table passes the parser's type checks and reaches the checks
/// after them), sometimes of any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    String,
    /// A number of seconds, a count or a weight: integers and floats,
    /// huge, tiny, negative, infinite and not a number among them.
    Number,
    /// `true` or `false`.
    Bool,
    /// An array of strings.
    Strings,
    /// An inline table of strings.
    StringTable,
    /// Anything.
    Any,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 6] = [
        Kind::String,
        Kind::Number,
        Kind::Bool,
        Kind::Strings,
        Kind::StringTable,
        Kind::Any,
    ];
}
