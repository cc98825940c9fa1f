//! Runs one function of a JavaScript tool in a fresh, limited QuickJS context.
//!
//! The crate knows nothing of manifests, tools or toolgate: it takes a source,
//! a function name and an arguments object, and answers a JSON value or a
//! [`JsError`]. Nothing in the context reaches the machine except through a
//! [`Host`], which the embedder implements and guards: `fetch`, `files` and
//! `console` end there. A fresh runtime per call is what isolates calls (QuickJS
//! memory limits and interrupt handlers are per runtime), and at about
//! 0.1 ms it is cheap enough (bench/js-engines/journal.md). The same runtime
//! checks a script before it is stored ([`check_function`]) and runs a
//! snippet for its value ([`eval_script`]).
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod check;
mod error;
mod eval;
mod host;
mod limits;
mod prelude;
mod runner;

pub use check::check_function;
pub use error::{JsError, Result};
pub use eval::eval_script;
pub use host::{FetchRequest, FetchResponse, Host, LogLevel, NoHost};
pub use limits::JsLimits;
pub use runner::{Invocation, run, run_function};
