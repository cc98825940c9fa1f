//! [`check_function`]: whether a script compiles and defines a function,
//! before a tool that runs it is stored.

use std::sync::Arc;

use crate::error::Result;
use crate::host::NoHost;
use crate::limits::JsLimits;
use crate::runner::{evaluate, function_of, run_limited};

/// Evaluates `source` (named `file_name` in errors) in a fresh, limited
/// context, as a call would, and checks that it defines the function
/// `function`. Nothing is called; but evaluating runs the script's top-level
/// code, under `limits` like any call.
///
/// A syntax error, or an error thrown by the top-level code, is
/// [`JsError::Thrown`](crate::JsError::Thrown) with its line; a missing
/// function (or a name that is no identifier) is
/// [`JsError::NotAFunction`](crate::JsError::NotAFunction).
///
/// ```
/// use toolgate_js::{JsError, JsLimits, check_function};
///
/// let limits = JsLimits::default();
/// assert!(check_function("const add = (a) => a.x + a.y;", "add.js", "add", &limits).is_ok());
/// let missing = check_function("function add() {}", "add.js", "sum", &limits);
/// assert!(matches!(missing, Err(JsError::NotAFunction { .. })));
/// ```
pub fn check_function(
    source: &str,
    file_name: &str,
    function: &str,
    limits: &JsLimits,
) -> Result<()> {
    run_limited(file_name, limits, Arc::new(NoHost), |ctx| {
        evaluate::<()>(ctx, source, file_name)?;
        function_of(ctx, function)?;
        Ok("null".to_owned())
    })
    .map(drop)
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
