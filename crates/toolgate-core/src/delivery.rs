//! [`Deferral`]: whether a host defers its tools (core tools, the group
//! listing, loads on demand) or sends every tool it may use directly, with
//! no meta-tools. Below some size deferring only costs: the schemas saved
//! are fewer than the round trips and the listing cost, and a provider's
//! cache makes a constant tool list cheap. [`Deferral::decide`] says which
//! applies to a catalog, and why ([`Delivery`]'s text).

use std::fmt;

/// When a host defers its tools (`[tools] defer`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Deferral {
    /// Deferred when the catalog's schemas pass `share` of the model's
    /// context window; sent whole below (the default).
    Auto {
        /// The share of the context window, in (0, 1].
        share: f64,
    },
    /// Always deferred.
    Always,
    /// Never: every tool sent whole, whatever its size.
    Never,
}

/// The share of the context window below which a catalog is sent whole by
/// default: 40,000 tokens of a 200,000-token window. `toolgate eval`'s cost
/// model chose it on each catalog left out, among 2.5% to 20%: sending every
/// tool takes no round trip, so the rule that chooses by cost takes the
/// largest share a catalog of the fold lies under, and the largest where
/// none does; it stops at 20%, where the tools would take a fifth of the
/// window from the task. A catalog of 13k tokens deferred cost 2.2 times
/// all-tools' bill with Anthropic's cache, at 1.35 extra round trips.
pub const DEFAULT_DEFER_SHARE: f64 = 0.20;

/// The context window a host that does not know its model's assumes.
pub const DEFAULT_CONTEXT_WINDOW: usize = 200_000;

impl Default for Deferral {
    fn default() -> Self {
        Self::Auto {
            share: DEFAULT_DEFER_SHARE,
        }
    }
}

/// How a host delivers its tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Every tool the caller may use, directly; no meta-tools, no listing.
    Whole,
    /// Core tools and the group listing; the rest loaded on demand.
    Deferred,
}

/// What [`Deferral::decide`] decided for a catalog, with what it read: its
/// `Display` is the sentence a banner, a status page and `toolgate catalog`
/// print, e.g. `129 tools, 13,214 tokens: under 40,000 (20% of a
/// 200,000-token window), sent whole`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delivery {
    /// The mode.
    pub mode: Mode,
    /// The catalog's tools.
    pub tools: usize,
    /// Their schemas' tokens.
    pub tokens: usize,
    /// The setting decided by.
    pub deferral: Deferral,
    /// The context window assumed.
    pub window: usize,
    /// The most tools the model takes in one request, when it has a limit
    /// the catalog passes: then it is deferred whatever the setting.
    pub over_limit: Option<usize>,
}

impl Deferral {
    /// The threshold in tokens for a `window`: `None` unless automatic.
    pub fn threshold(self, window: usize) -> Option<usize> {
        match self {
            Self::Auto { share } => Some((window as f64 * share).floor() as usize),
            Self::Always | Self::Never => None,
        }
    }

    /// How a catalog of `tools` tools whose schemas hold `tokens` tokens is
    /// delivered to a model with a context window of `window` tokens that
    /// takes at most `max_tools` tools in one request (when it has a limit):
    /// more tools than that are always deferred.
    ///
    /// ```
    /// use toolgate_core::{Deferral, Mode};
    ///
    /// let auto = Deferral::Auto { share: 0.2 };
    /// let small = auto.decide(129, 13_214, 200_000, None);
    /// assert_eq!(small.mode, Mode::Whole);
    /// assert_eq!(
    ///     small.to_string(),
    ///     "129 tools, 13,214 tokens: under 40,000 (20% of a 200,000-token window), sent whole"
    /// );
    /// assert_eq!(auto.decide(2_490, 275_954, 200_000, None).mode, Mode::Deferred);
    /// assert_eq!(auto.decide(129, 13_214, 200_000, Some(128)).mode, Mode::Deferred);
    /// ```
    pub fn decide(
        self,
        tools: usize,
        tokens: usize,
        window: usize,
        max_tools: Option<usize>,
    ) -> Delivery {
        let over_limit = max_tools.filter(|limit| tools > *limit);
        let mode = match (self, self.threshold(window)) {
            _ if over_limit.is_some() => Mode::Deferred,
            (Self::Auto { .. }, Some(threshold)) if tokens < threshold => Mode::Whole,
            (Self::Never, _) => Mode::Whole,
            (Self::Auto { .. } | Self::Always, _) => Mode::Deferred,
        };
        Delivery {
            mode,
            tools,
            tokens,
            deferral: self,
            window,
            over_limit,
        }
    }
}

impl Delivery {
    /// The sentence, naming the setting it follows where it does not say
    /// so itself: `..., sent whole ([tools] defer)`.
    pub fn explained(&self) -> String {
        match (self.deferral, self.over_limit) {
            (Deferral::Auto { .. }, None) => format!("{self} ([tools] defer)"),
            (Deferral::Auto { .. } | Deferral::Always | Deferral::Never, _) => self.to_string(),
        }
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tools, {} tokens: ",
            thousands(self.tools),
            thousands(self.tokens)
        )?;
        if let Some(limit) = self.over_limit {
            return write!(f, "more than the {limit} the model takes at once, deferred");
        }
        match (self.deferral, self.mode) {
            (Deferral::Auto { share }, mode) => {
                let threshold = self.deferral.threshold(self.window).unwrap_or_default();
                let (side, done) = match mode {
                    Mode::Whole => ("under", "sent whole"),
                    Mode::Deferred => ("over", "deferred"),
                };
                write!(
                    f,
                    "{side} {} ({}% of a {}-token window), {done}",
                    thousands(threshold),
                    percent(share),
                    thousands(self.window)
                )
            }
            (Deferral::Always, _) => f.write_str("deferred ([tools] defer = \"always\")"),
            (Deferral::Never, _) => f.write_str("sent whole ([tools] defer = \"never\")"),
        }
    }
}

/// `share` as a percentage, without a trailing `.0`.
fn percent(share: f64) -> String {
    let percent = share * 100.0;
    if (percent - percent.round()).abs() < 1e-9 {
        format!("{}", percent.round() as i64)
    } else {
        format!("{percent:.1}")
    }
}

/// `n` with a comma between thousands: `12345` -> `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;
