//! JavaScript tools, run by `toolgate_js` in a fresh QuickJS runtime per
//! call.
//!
//! [`JsRunner`] is the one way a JavaScript function runs as a tool, whoever
//! holds its source: a manifest's `.js` file beside it ([`manifest`]), or a
//! tool an agent wrote and stored ([`user_tools`], written through
//! [`management`]); `js_eval` ([`eval`]) runs a snippet under the same
//! limits. It applies the `[tools.javascript]` limits, runs the
//! engine off the async workers, and turns what the script did into what
//! the model reads.
//!
//! A call runs on one of tokio's blocking threads: the engine is synchronous
//! and holds its thread for up to its time limit, which must never be a
//! worker's. Those threads have 2 MiB of stack, above the engine's stack
//! limit (`JsLimits::stack_bytes`, 512 KiB).

pub(crate) mod eval;
mod host;
pub(crate) mod management;
pub(crate) mod manifest;
pub(crate) mod user_tools;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolgate_core::MAX_TIMEOUT_SECONDS;
use toolgate_js::{Invocation, JsError, JsLimits};
use toolgate_store::ToolOwner;

use crate::builtin::{BuiltinConfig, Files, WebConfig};
use crate::context::CallContext;
use crate::error::{ToolCallError, ToolboxError};
use crate::output::ToolOutput;
use host::ToolHost;

/// What one call of a JavaScript tool may use, whether `js_eval` is
/// offered, and whose tools a gateway's agents write (`[tools.javascript]`).
#[derive(Clone, Debug, PartialEq)]
pub struct JavaScriptConfig {
    /// Wall time per call (default 10 s); a manifest entry's own
    /// `timeout_seconds` takes its place for that tool.
    pub timeout: Duration,
    /// Heap per call, in MiB (default 64).
    pub memory_mib: u32,
    /// Calls running at once (default 4 per core, at least 8); more wait
    /// their turn. With `memory_mib`, it bounds what scripts can take of the
    /// machine's memory.
    pub max_concurrent_calls: usize,
    /// Settings by group (`[tools.javascript.settings.<group>]`): a call of
    /// one of the group's tools receives its table as `context.settings`
    /// (an API's base URL, a unit system...).
    pub settings: BTreeMap<String, Map<String, Value>>,
    /// Whether the core tool `js_eval` (run a snippet, answer its value) is
    /// offered: off unless enabled.
    pub eval: JsEval,
    /// Whose JavaScript tools a caller that names no owner writes and sees
    /// ([`DEFAULT_TOOL_OWNER`] unless set): the gateway's operator (stdio,
    /// the shared token); `toolgate chat` uses its agent's id instead.
    pub owner: ToolOwner,
    /// Whether a caller that names an owner (a gateway's named client) has
    /// tools of its own, or every caller has `owner`'s.
    pub ownership: ToolOwnership,
    /// The turns calls take, shared by every clone of this configuration:
    /// manifest tools, tools agents write and `js_eval` made from one
    /// configuration run at most `max_concurrent_calls` calls together.
    pub slots: JsSlots,
}

/// The turns JavaScript calls take ([`JavaScriptConfig::slots`]): made on
/// first use with `max_concurrent_calls` of them, and shared by the clones
/// of the configuration. Not configuration: any two compare equal.
#[derive(Clone, Debug, Default)]
pub struct JsSlots(Arc<OnceLock<Arc<Semaphore>>>);

impl JsSlots {
    /// The shared semaphore, made with `permits` if it is the first use.
    fn semaphore(&self, permits: usize) -> Arc<Semaphore> {
        Arc::clone(self.0.get_or_init(|| Arc::new(Semaphore::new(permits))))
    }
}

impl PartialEq for JsSlots {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Whose JavaScript tools a caller writes and runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolOwnership {
    /// Each caller's own, as its [`Authority`](crate::Authority) names it
    /// (each named client of a gateway); a caller that names none has the
    /// configured owner's. The default.
    #[default]
    PerCaller,
    /// The configured owner's, whoever calls (`[tools.javascript] owner`
    /// set): every client of a gateway shares them.
    Shared,
}

/// The owner of the JavaScript tools written through a gateway by callers
/// that name none, unless `[tools.javascript] owner` says otherwise.
pub const DEFAULT_TOOL_OWNER: &str = "gateway";

/// Whether `js_eval` is offered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JsEval {
    /// Not offered: the default.
    #[default]
    Off,
    /// Offered as a core tool.
    On,
}

impl Default for JavaScriptConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            memory_mib: 64,
            max_concurrent_calls: std::thread::available_parallelism()
                .map_or(8, |cores| (cores.get() * 4).max(8)),
            settings: BTreeMap::new(),
            eval: JsEval::Off,
            owner: ToolOwner::new(DEFAULT_TOOL_OWNER),
            ownership: ToolOwnership::default(),
            slots: JsSlots::default(),
        }
    }
}

/// How long the toolbox waits for a call beyond the script's own time limit
/// (the engine interrupts the script itself; this covers a wait for a
/// blocking thread and the runtime's teardown).
pub(crate) const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// The longest a call may run, whatever its tool's own setting says: a day,
/// as for every configured timeout.
pub(crate) const LONGEST_TIMEOUT: Duration = Duration::from_secs(MAX_TIMEOUT_SECONDS as u64);

/// One call of a JavaScript function as a tool.
#[derive(Clone, Debug)]
pub(crate) struct JsCall {
    /// The tool's name, as the model calls it.
    pub(crate) tool: String,
    /// The script's file name, as errors and stack traces name it (never a
    /// directory: the model reads it).
    pub(crate) file_name: String,
    /// The script.
    pub(crate) source: Arc<str>,
    /// The function of the script the tool calls.
    pub(crate) function: String,
    /// The group whose `[tools.javascript.settings]` table the call gets
    /// (for a manifest, its file stem).
    pub(crate) group: String,
    /// The tool's time limit (its own, else the configured one).
    pub(crate) timeout: Duration,
    /// The call's arguments, checked against the tool's schema.
    pub(crate) arguments: Value,
}

/// Runs JavaScript functions as tools, with the limits and host functions
/// every call gets.
#[derive(Clone, Debug)]
pub(crate) struct JsRunner {
    config: JavaScriptConfig,
    /// The files root of `files`, when the built-in tools have one.
    files: Option<Files>,
    /// What `fetch` keeps to: the built-in `web` tool's settings.
    web: WebConfig,
    /// One permit per call running.
    running: Arc<Semaphore>,
}

impl JsRunner {
    /// A runner under `config` whose scripts reach no files, and the web
    /// under the default `[web]` settings.
    pub(crate) fn new(config: JavaScriptConfig) -> Self {
        let running = config.slots.semaphore(config.max_concurrent_calls);
        Self {
            config,
            files: None,
            web: WebConfig::default(),
            running,
        }
    }

    /// A runner under `config` whose scripts reach the files root and the
    /// web as the built-in tools of `builtins` do (without them: as
    /// [`JsRunner::new`]).
    pub(crate) fn with_builtins(
        config: JavaScriptConfig,
        builtins: Option<&BuiltinConfig>,
    ) -> Result<Self, ToolboxError> {
        let mut runner = Self::new(config);
        if let Some(builtins) = builtins {
            runner.files = builtins.files()?;
            runner.web = builtins.web.clone();
        }
        Ok(runner)
    }

    /// Waits for a turn to run a script: until one is free, or the call is
    /// cancelled.
    pub(crate) async fn turn(
        &self,
        tool: &str,
        context: &CallContext,
    ) -> Result<OwnedSemaphorePermit, ToolCallError> {
        let permit = tokio::select! {
            permit = Arc::clone(&self.running).acquire_owned() => permit,
            () = context.cancel.cancelled() => {
                return Err(ToolCallError::respond(format!("Tool '{tool}' was cancelled.")));
            }
        };
        permit.map_err(|_| {
            ToolCallError::respond(format!(
                "Tool '{tool}' cannot run: JavaScript calls were shut down."
            ))
        })
    }

    /// What a call whose time limit is `time` may use.
    pub(crate) fn limits(&self, time: Duration) -> JsLimits {
        JsLimits {
            time,
            memory_bytes: usize::try_from(self.config.memory_mib)
                .unwrap_or(usize::MAX)
                .saturating_mul(1 << 20),
            ..JsLimits::default()
        }
    }

    /// How long the toolbox waits for a call whose time limit is `time`:
    /// the script interrupts itself, and the model reads its own timeout.
    pub(crate) fn deadline(time: Duration) -> Duration {
        time.saturating_add(DEADLINE_MARGIN)
    }

    /// The time limit of a tool: its own (bounded to a day) or the
    /// configured one.
    pub(crate) fn timeout_of(&self, own: Option<Duration>) -> Duration {
        own.map_or(self.config.timeout, |own| own.min(LONGEST_TIMEOUT))
    }

    /// Runs `call` and answers what the model reads: the function's value,
    /// or an error result saying what the script did wrong.
    pub(crate) async fn run(
        &self,
        call: JsCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let limits = self.limits(call.timeout);
        let JsCall {
            tool,
            file_name,
            source,
            function,
            group,
            arguments,
            ..
        } = call;
        let settings = self
            .config
            .settings
            .get(&group)
            .cloned()
            .unwrap_or_default();
        let host = Arc::new(ToolHost {
            tool: tool.clone(),
            authority: context.authority.clone(),
            files: self.files.clone(),
            web: self.web.clone(),
            runtime: tokio::runtime::Handle::current(),
            cancel: context.cancel.clone(),
            fetches: AtomicUsize::new(0),
            lines: AtomicUsize::new(0),
        });
        let permit = self.turn(&tool, context).await?;
        let outcome = {
            let file_name = file_name.clone();
            let context_value = json!({ "tool": tool, "settings": settings });
            run_off_workers(&tool, context, move || {
                let invocation = Invocation {
                    source: &source,
                    file_name: &file_name,
                    function: &function,
                    arguments: &arguments,
                    context: &context_value,
                };
                let outcome = toolgate_js::run(&invocation, &limits, host);
                drop(permit);
                outcome
            })
            .await?
        };
        Ok(match outcome {
            Ok(value) => output_of(value),
            Err(error) => ToolOutput::error(describe(&tool, &file_name, &error)),
        })
    }
}

/// Runs `job` (the engine, synchronous) on a blocking thread and waits for
/// it, unless the call is cancelled first: a cancelled call answers at
/// once (a script run with a host stops at the engine's next poll of the
/// cancellation; one without runs on to its time limit on its own thread,
/// which nothing else waits on).
pub(crate) async fn run_off_workers<T: Send + 'static>(
    tool: &str,
    context: &CallContext,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolCallError> {
    let running = tokio::task::spawn_blocking(job);
    let outcome = tokio::select! {
        outcome = running => outcome,
        () = context.cancel.cancelled() => {
            return Err(ToolCallError::respond(format!("Tool '{tool}' was cancelled.")));
        }
    };
    outcome.map_err(|error| {
        tracing::error!(%tool, %error, "a JavaScript call did not finish");
        ToolCallError::respond(format!(
            "Tool '{tool}' failed: its JavaScript call stopped unexpectedly."
        ))
    })
}

/// What the model reads when the script of `file` gave no value.
pub(crate) fn describe(tool: &str, file: &str, error: &JsError) -> String {
    let at = |line: &Option<u32>| match line {
        Some(line) => format!("{file}, line {line}"),
        None => file.to_owned(),
    };
    match error {
        JsError::Thrown { message, line } => {
            format!("Tool '{tool}' failed: {message} ({})", at(line))
        }
        JsError::Timeout { limit } => format!(
            "Tool '{tool}' ({file}) timed out after {} s.",
            limit.as_secs_f64()
        ),
        JsError::OutOfMemory { limit_bytes } => format!(
            "Tool '{tool}' ({file}) ran out of memory (limit {} MiB).",
            limit_bytes >> 20
        ),
        JsError::StackOverflow { line } => format!(
            "Tool '{tool}' failed: maximum call stack size exceeded ({})",
            at(line)
        ),
        JsError::NotAFunction { function } => {
            format!("Tool '{tool}' cannot run: {file} defines no function `{function}`.")
        }
        JsError::Cancelled => format!("Tool '{tool}' was cancelled."),
        JsError::Unsettled => {
            format!("Tool '{tool}' failed: its Promise never settled ({file}).")
        }
        other => {
            tracing::warn!(%tool, %file, error = %other, "a JavaScript call failed");
            format!("Tool '{tool}' failed in {file}: {other}.")
        }
    }
}

/// A script's value as a tool result: a string is the text; an object is
/// also the structured result; any other value is its JSON text (MCP's
/// structured content must be an object).
pub(crate) fn output_of(value: Value) -> ToolOutput {
    match value {
        Value::String(text) => ToolOutput::text(text),
        Value::Object(_) => ToolOutput::json(value),
        other => ToolOutput::text(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runners_made_from_one_configuration_share_their_turns() {
        let config = JavaScriptConfig {
            max_concurrent_calls: 3,
            ..JavaScriptConfig::default()
        };
        let manifests = JsRunner::new(config.clone());
        let written = JsRunner::new(config.clone());
        assert!(Arc::ptr_eq(&manifests.running, &written.running));
        assert_eq!(manifests.running.available_permits(), 3);
        // Another configuration, equal as configuration, has turns of its own.
        let other = JsRunner::new(JavaScriptConfig {
            max_concurrent_calls: 3,
            ..JavaScriptConfig::default()
        });
        assert_eq!(other.config, config);
        assert!(!Arc::ptr_eq(&manifests.running, &other.running));
    }
}
