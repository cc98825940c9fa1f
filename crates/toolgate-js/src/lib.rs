//! Runs one function of a JavaScript tool in a fresh, limited QuickJS context.
//!
//! The crate knows nothing of manifests, tools or toolgate: it takes a source,
//! a function name and an arguments object, and answers a JSON value or a
//! [`JsError`]. A fresh runtime per call is what isolates calls (QuickJS
//! memory limits and interrupt handlers are per runtime), and at about
//! 0.1 ms it is cheap enough (BENCHMARKS.md, issue 15). The same runtime
//! checks a script before it is stored ([`check_function`]) and runs a
//! snippet for its value ([`eval_script`]).
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod check;
mod error;
mod eval;
mod limits;
mod runner;

pub use check::check_function;
pub use error::{JsError, Result};
pub use eval::eval_script;
pub use limits::JsLimits;
pub use runner::run_function;
