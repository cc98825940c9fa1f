//! [`JsSource`]: the tools of one manifest whose JavaScript file sits beside
//! it (`mathx.json` + `mathx.js`), run by `toolgate_js`.
//!
//! The manifest says what the tools are (the catalog loads it like any
//! other); this source says how they run: each entry's `function` (else its
//! `name`) is called in a fresh QuickJS runtime with the call's arguments as
//! one object, under the `[tools.javascript]` limits. The script is read once,
//! when the toolbox starts. A script that cannot be read is reported like a
//! bad manifest, and its tools answer an error naming the file: a tool the
//! model was shown never panics or vanishes.
//!
//! A call runs on one of tokio's blocking threads: the engine is synchronous
//! and holds its thread for up to its time limit, which must never be a
//! worker's. Those threads have 2 MiB of stack, above the engine's stack
//! limit (`JsLimits::stack_bytes`, 512 KiB).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use toolgate_core::{
    Catalog, MAX_TIMEOUT_SECONDS, ManifestError, ManifestErrorReason, Origin, ToolName,
};
use toolgate_js::{JsError, JsLimits};

use crate::context::CallContext;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, SourceCall, ToolSource};

/// What one call of a JavaScript tool may use (`[tools.javascript]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JavaScriptConfig {
    /// Wall time per call (default 10 s); a manifest entry's own
    /// `timeout_seconds` takes its place for that tool.
    pub timeout: Duration,
    /// Heap per call, in MiB (default 64).
    pub memory_mib: u32,
}

impl Default for JavaScriptConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            memory_mib: 64,
        }
    }
}

/// How long the toolbox waits for a call beyond the script's own time limit
/// (the engine interrupts the script itself; this covers a wait for a
/// blocking thread and the runtime's teardown).
const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// The longest a call may run, whatever its manifest entry says: a day, as
/// for every configured timeout.
const LONGEST_TIMEOUT: Duration = Duration::from_secs(MAX_TIMEOUT_SECONDS as u64);

/// The script of a [`JsSource`], or why there is none.
#[derive(Debug)]
enum Script {
    Source(Arc<str>),
    Unreadable(String),
}

/// How one tool runs: the function it calls and its time limit.
#[derive(Debug)]
struct JsFunction {
    name: String,
    timeout: Duration,
}

/// The tools of one manifest, run by the JavaScript file beside it.
#[derive(Debug)]
pub(crate) struct JsSource {
    /// The script's file name, as errors and stack traces name it (never its
    /// directory: the model reads it).
    file_name: String,
    script: Script,
    /// By tool name.
    functions: HashMap<String, JsFunction>,
    memory_mib: u32,
}

/// A source for each manifest of `catalog` with a `.js` file beside it, with
/// the tools it runs; a script that cannot be read is reported in `errors`
/// (its tools still get the source, which answers that it cannot run).
pub(crate) fn manifest_scripts(
    catalog: &Catalog,
    config: &JavaScriptConfig,
    errors: &mut Vec<ManifestError>,
) -> Vec<(Arc<JsSource>, Vec<ToolName>)> {
    let mut by_manifest: BTreeMap<&Path, Vec<(ToolName, JsFunction)>> = BTreeMap::new();
    for tool in catalog.tools() {
        let Origin::Manifest { path, function } = tool.origin else {
            continue;
        };
        let name = tool.definition.name.clone();
        let function = JsFunction {
            name: function.clone().unwrap_or_else(|| name.to_string()),
            // A manifest's own timeout is bounded like a configured one.
            timeout: tool
                .definition
                .timeout
                .map_or(config.timeout, |own| own.min(LONGEST_TIMEOUT)),
        };
        by_manifest.entry(path).or_default().push((name, function));
    }
    let mut sources = Vec::new();
    for (manifest, tools) in by_manifest {
        let path = manifest.with_extension("js");
        let Some(script) = read_script(&path, errors) else {
            continue;
        };
        let file_name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let names = tools.iter().map(|(name, _)| name.clone()).collect();
        let functions = tools
            .into_iter()
            .map(|(name, function)| (name.to_string(), function))
            .collect();
        let source = JsSource {
            file_name,
            script,
            functions,
            memory_mib: config.memory_mib,
        };
        sources.push((Arc::new(source), names));
    }
    sources
}

/// The script at `path`: `None` when there is none (the manifest's tools
/// stay without implementation), [`Script::Unreadable`] (and an error in
/// `errors`) when it exists but cannot be read.
fn read_script(path: &PathBuf, errors: &mut Vec<ManifestError>) -> Option<Script> {
    // A link to nothing is a script that cannot be read, not no script.
    if fs::symlink_metadata(path).is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound) {
        return None;
    }
    match fs::read_to_string(path) {
        Ok(text) => Some(Script::Source(text.into())),
        Err(error) => {
            let reason = error.to_string();
            errors.push(ManifestError {
                path: path.clone(),
                reason: ManifestErrorReason::Io(reason.clone()),
            });
            Some(Script::Unreadable(reason))
        }
    }
}

#[async_trait]
impl ToolSource for JsSource {
    /// The script interrupts itself at its time limit; the toolbox waits a
    /// little longer, so the model reads the script's own timeout.
    fn deadline(&self) -> CallDeadline {
        let longest = self
            .functions
            .values()
            .map(|function| function.timeout)
            .max()
            .unwrap_or_default();
        CallDeadline::Own(longest.saturating_add(DEADLINE_MARGIN))
    }

    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let tool = call.tool;
        let Some(function) = self.functions.get(&tool) else {
            return Err(ToolCallError::Fatal(format!(
                "{} runs no tool named '{tool}'",
                self.file_name
            )));
        };
        let source = match &self.script {
            Script::Source(source) => Arc::clone(source),
            Script::Unreadable(reason) => {
                return Ok(ToolOutput::error(format!(
                    "Tool '{tool}' cannot run: its JavaScript file {} could not be read ({reason}).",
                    self.file_name
                )));
            }
        };
        let limits = JsLimits {
            time: function.timeout,
            memory_bytes: usize::try_from(self.memory_mib)
                .unwrap_or(usize::MAX)
                .saturating_mul(1 << 20),
            ..JsLimits::default()
        };
        let file_name = self.file_name.clone();
        let function_name = function.name.clone();
        let arguments = call.arguments;
        let running = tokio::task::spawn_blocking(move || {
            toolgate_js::run_function(&source, &file_name, &function_name, &arguments, &limits)
        });
        // A cancelled call answers at once; its script still runs to its
        // time limit on its own thread, which nothing else waits on.
        let outcome = tokio::select! {
            outcome = running => outcome,
            () = context.cancel.cancelled() => {
                return Err(ToolCallError::respond(format!("Tool '{tool}' was cancelled.")));
            }
        };
        match outcome {
            Ok(Ok(value)) => Ok(output_of(value)),
            Ok(Err(error)) => Ok(ToolOutput::error(self.describe(&tool, &error))),
            Err(error) => {
                tracing::error!(%tool, file = %self.file_name, %error, "a JavaScript call did not finish");
                Err(ToolCallError::respond(format!(
                    "Tool '{tool}' failed: its JavaScript call stopped unexpectedly."
                )))
            }
        }
    }
}

impl JsSource {
    /// What the model reads when the script gave no value.
    fn describe(&self, tool: &str, error: &JsError) -> String {
        let file = &self.file_name;
        let at = |line: &Option<u32>| match line {
            Some(line) => format!("{file}, line {line}"),
            None => file.clone(),
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
            JsError::Unsettled => {
                format!("Tool '{tool}' failed: its Promise never settled ({file}).")
            }
            other => {
                tracing::warn!(%tool, %file, error = %other, "a JavaScript call failed");
                format!("Tool '{tool}' failed in {file}: {other}.")
            }
        }
    }
}

/// A script's value as a tool result: a string is the text; an object is
/// also the structured result; any other value is its JSON text (MCP's
/// structured content must be an object).
fn output_of(value: Value) -> ToolOutput {
    match value {
        Value::String(text) => ToolOutput::text(text),
        Value::Object(_) => ToolOutput::json(value),
        other => ToolOutput::text(other.to_string()),
    }
}
