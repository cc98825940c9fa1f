//! [`ManifestScripts`]: the tools of every manifest whose JavaScript file
//! sits beside it (`mathx.json` + `mathx.js`), run by `toolgate_js`.
//!
//! The manifest says what the tools are (the catalog holds them like any
//! other); this source says how they run: each entry's `function` (else its
//! `name`) is called in a fresh QuickJS runtime with the call's arguments as
//! one object, under the `[tools.javascript]` limits. It is one source for
//! every manifest, holding each tool's script behind a lock, so a reload of
//! the manifests directories swaps a file's scripts while calls go on (a
//! call already running keeps the script it started with). A script that
//! cannot be read is reported like a bad manifest, and its tools answer an
//! error naming the file: a tool the model was shown never panics or
//! vanishes.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use toolgate_js::JsError;

use super::{DEADLINE_MARGIN, JsCall, JsRunner};
use crate::context::CallContext;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, SourceCall, ToolSource};

/// The JavaScript file beside a manifest, or why it cannot be run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Script {
    /// Its text.
    Source(Arc<str>),
    /// It exists but could not be read: why.
    Unreadable(String),
    /// It was read, but does not load: it does not compile, or its
    /// top-level code throws or runs past its limits. Why.
    Broken(String),
}

/// How one manifest tool runs.
#[derive(Clone, Debug)]
pub(crate) struct JsTool {
    /// The script's file name, as errors and stack traces name it (never its
    /// directory: the model reads it).
    pub(crate) file_name: String,
    /// The manifest's file stem: its group, whose settings its calls get.
    pub(crate) group: String,
    /// The script.
    pub(crate) script: Script,
    /// The function of the script the tool calls.
    pub(crate) function: String,
    /// Its time limit (its own, else the configured one).
    pub(crate) timeout: Duration,
}

/// Every manifest tool that runs in JavaScript, by tool name.
#[derive(Debug)]
pub(crate) struct ManifestScripts {
    tools: RwLock<HashMap<String, JsTool>>,
    runner: Arc<JsRunner>,
}

impl ManifestScripts {
    /// A source running no tool yet, whose calls `runner` runs.
    pub(crate) fn new(runner: Arc<JsRunner>) -> Self {
        Self {
            tools: RwLock::new(HashMap::new()),
            runner,
        }
    }

    /// The time limit of a tool with `own` limit (or none).
    pub(crate) fn timeout_of(&self, own: Option<Duration>) -> Duration {
        self.runner.timeout_of(own)
    }

    /// Why `source` (named `file_name`) cannot be loaded, when it cannot:
    /// it is evaluated once, without host functions, under a call's limits,
    /// as every call would evaluate it. A missing function is not a reason:
    /// only its own tool fails, and its calls say so.
    pub(crate) fn load_problem(&self, source: &str, file_name: &str) -> Option<String> {
        let limits = self.runner.limits(self.runner.timeout_of(None));
        // Any identifier will do: only whether the script loads matters.
        match toolgate_js::check_function(source, file_name, "__toolgate_load_check", &limits) {
            Ok(()) | Err(JsError::NotAFunction { .. }) => None,
            Err(JsError::Thrown { message, line }) => Some(match line {
                Some(line) => format!("does not load: {message} (line {line})"),
                None => format!("does not load: {message}"),
            }),
            Err(other) => Some(format!("does not load: {other}")),
        }
    }

    /// Swaps one manifest's tools: those named `old` go, `new` come.
    pub(crate) fn replace<'a>(
        &self,
        old: impl IntoIterator<Item = &'a str>,
        new: Vec<(String, JsTool)>,
    ) {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for name in old {
            tools.remove(name);
        }
        tools.extend(new);
    }

    fn tool(&self, name: &str) -> Option<JsTool> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

/// The script at `path` (a manifest's path with `.js`): `None` when there is
/// none (the manifest's tools stay without implementation),
/// [`Script::Unreadable`] when it exists but cannot be read.
pub(crate) fn read_script(path: &Path) -> Option<Script> {
    // A link to nothing is a script that cannot be read, not no script.
    if fs::symlink_metadata(path).is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound) {
        return None;
    }
    Some(match fs::read_to_string(path) {
        Ok(text) => Script::Source(text.into()),
        Err(error) => Script::Unreadable(error.to_string()),
    })
}

#[async_trait]
impl ToolSource for ManifestScripts {
    /// The script interrupts itself at its time limit; the toolbox waits a
    /// little longer (past the longest limit of any manifest tool), so the
    /// model reads the script's own timeout.
    fn deadline(&self) -> CallDeadline {
        let longest = self
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|tool| tool.timeout)
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
        let Some(js) = self.tool(&tool) else {
            // Removed by a reload between the routing and this call.
            return Err(ToolCallError::respond(format!(
                "Tool '{tool}' is no longer available: its manifest changed."
            )));
        };
        let source = match js.script {
            Script::Source(source) => source,
            Script::Unreadable(reason) => {
                return Ok(ToolOutput::error(format!(
                    "Tool '{tool}' cannot run: its JavaScript file {} could not be read ({reason}).",
                    js.file_name
                )));
            }
            Script::Broken(reason) => {
                return Ok(ToolOutput::error(format!(
                    "Tool '{tool}' cannot run: its JavaScript file {} {reason}.",
                    js.file_name
                )));
            }
        };
        let call = JsCall {
            tool,
            file_name: js.file_name,
            source,
            function: js.function,
            group: js.group,
            timeout: js.timeout,
            arguments: call.arguments,
        };
        self.runner.run(call, context).await
    }
}
