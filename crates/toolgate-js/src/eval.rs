//! [`eval_script`]: a snippet's value, for a tool that evaluates what the
//! model writes (`js_eval`).

use std::sync::Arc;

use rquickjs::Value;

use crate::error::Result;
use crate::host::NoHost;
use crate::limits::JsLimits;
use crate::runner::{evaluate, json_text, run_limited};

/// Evaluates `source` (named `file_name` in errors) as a classic script in a
/// fresh, limited context and answers its completion value (the value of
/// its last expression statement) as JSON, once settled when it is a
/// Promise. `undefined`, and anything else JSON cannot say, is `null`.
///
/// ```
/// use serde_json::json;
/// use toolgate_js::{JsLimits, eval_script};
///
/// let value = eval_script("const xs = [1, 2, 3];\nxs.map((x) => x * 2)", "snippet.js", &JsLimits::default())?;
/// assert_eq!(value, json!([2, 4, 6]));
/// # Ok::<(), toolgate_js::JsError>(())
/// ```
pub fn eval_script(source: &str, file_name: &str, limits: &JsLimits) -> Result<serde_json::Value> {
    run_limited(file_name, limits, Arc::new(NoHost), |ctx| {
        let value = evaluate::<Value<'_>>(ctx, source, file_name)?;
        json_text(ctx, value)
    })
}

#[cfg(test)]
#[path = "eval_tests.rs"]
mod tests;
