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

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use toolgate_core::{Catalog, ManifestError, ManifestErrorReason, Origin, ToolName};

use super::{DEADLINE_MARGIN, JsCall, JsRunner};
use crate::context::CallContext;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, SourceCall, ToolSource};

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
    /// The manifest's file stem: its group, whose settings its calls get.
    group: String,
    script: Script,
    /// By tool name.
    functions: HashMap<String, JsFunction>,
    runner: Arc<JsRunner>,
}

/// A source for each manifest of `catalog` with a `.js` file beside it, with
/// the tools it runs; a script that cannot be read is reported in `errors`
/// (its tools still get the source, which answers that it cannot run).
pub(crate) fn manifest_scripts(
    catalog: &Catalog,
    runner: &Arc<JsRunner>,
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
            timeout: runner.timeout_of(tool.definition.timeout),
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
        let group = manifest
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = JsSource {
            file_name,
            group,
            script,
            functions,
            runner: Arc::clone(runner),
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
        let call = JsCall {
            tool,
            file_name: self.file_name.clone(),
            source,
            function: function.name.clone(),
            group: self.group.clone(),
            timeout: function.timeout,
            arguments: call.arguments,
        };
        self.runner.run(call, context).await
    }
}
