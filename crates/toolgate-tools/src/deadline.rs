//! The deadline every tool call the toolbox runs is under: its source's own
//! ([`CallDeadline::Own`]), else the toolbox's `call_timeout`, or the
//! caller's limit ([`CallContext::time_limit`]) when that is shorter: the
//! one deadline of a call, whoever asked for it. A call past
//! its deadline is cancelled and answered with [`CallTimedOut`], so no tool
//! (a built-in stuck on the file system or the network included) holds a
//! turn or a client's request forever.

use std::time::Duration;

use toolgate_core::CallTimedOut;

use crate::context::CallContext;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, SourceCall, ToolSource};

/// How long a tool call may run, by default, before the toolbox cancels it.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a source may take to stop once its call is cancelled, before the
/// toolbox stops waiting for it (at most the deadline itself).
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Runs `call` of catalog tool `tool` on `source` under the source's
/// deadline, `toolbox_default` when the source has none of its own.
pub(crate) async fn call_within_deadline(
    source: &dyn ToolSource,
    tool: &str,
    call: SourceCall,
    context: &CallContext,
    toolbox_default: Duration,
) -> Result<ToolOutput, ToolCallError> {
    let limit = match source.deadline() {
        CallDeadline::Toolbox => toolbox_default,
        CallDeadline::Own(limit) => limit,
    };
    let limit = context.time_limit.map_or(limit, |caller| caller.min(limit));
    // The call's own token: cancelling it at the deadline leaves the
    // caller's token (a turn's, a request's) as it is.
    let context = CallContext {
        cancel: context.cancel.child_token(),
        ..context.clone()
    };
    let running = source.call(call, &context);
    tokio::pin!(running);
    tokio::select! {
        result = &mut running => result,
        () = tokio::time::sleep(limit) => {
            context.cancel.cancel();
            // A source that honours the cancellation stops (and tells its
            // server) within the grace; its late answer is not used.
            let _ = tokio::time::timeout(CANCEL_GRACE.min(limit), running).await;
            let timed_out = CallTimedOut {
                tool: tool.to_owned(),
                limit,
            };
            Err(ToolCallError::respond(timed_out.to_string()))
        }
    }
}
