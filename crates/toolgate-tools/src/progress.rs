//! [`Progress`]: how the slow steps of a start report how far they got
//! (starting upstream servers, embedding the tool texts for routing). The
//! library crates print nothing: the command line passes a `Progress` in
//! and shows the steps on a terminal.

use std::fmt;
use std::sync::Arc;

use toolgate_core::GroupId;

/// How far a slow step of a start got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step<'a> {
    /// A source is starting (an upstream MCP server: its process or its
    /// connection, then the handshake).
    Starting {
        /// The source, by its group.
        source: &'a GroupId,
    },
    /// The source started, or failed to.
    Started {
        /// The source, by its group.
        source: &'a GroupId,
    },
    /// Tool texts missing from the vector cache: `done` of `total`
    /// embedded.
    Embedding {
        /// Embedded so far.
        done: usize,
        /// To embed.
        total: usize,
    },
}

/// Where the steps go: a function the command line gives. Cheap to clone.
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(Step<'_>) + Send + Sync>);

impl Progress {
    /// Steps go to `report`, called on the thread doing the work.
    pub fn new(report: impl Fn(Step<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    /// Reports `step`.
    pub fn report(&self, step: Step<'_>) {
        (self.0)(step);
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress(..)")
    }
}
