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
