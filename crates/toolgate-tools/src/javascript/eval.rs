//! [`JsEvalTool`]: the core tool `js_eval`, which runs a snippet of
//! JavaScript and answers its value. Offered only when
//! `[tools.javascript] eval = true`: it runs whatever the model writes,
//! sandboxed and limited like every JavaScript call, but an operator opts
//! in to it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use toolgate_core::{ToolDefinition, ToolName};

use super::{JavaScriptConfig, JsEval, JsRunner, describe, output_of, run_off_workers};
use crate::context::CallContext;
use crate::error::ToolCallError;
use crate::output::ToolOutput;
use crate::source::{CallDeadline, SourceCall, SourceOffer, ToolSource};

/// The tool's name.
pub(crate) const JS_EVAL: &str = "js_eval";
/// The snippet's file name, as errors name it.
const FILE_NAME: &str = "js_eval.js";
/// The longest snippet taken, in bytes.
const MAX_CODE_BYTES: usize = 256 << 10;

/// The `js_eval` tool: a source offering it as a core tool.
#[derive(Debug)]
pub struct JsEvalTool {
    runner: JsRunner,
    timeout: std::time::Duration,
}

impl JsEvalTool {
    /// The `js_eval` tool under `config`'s limits, when `config` offers it
    /// (`eval = On`); `None` otherwise.
    pub fn offered(config: &JavaScriptConfig) -> Option<Arc<dyn ToolSource>> {
        match config.eval {
            JsEval::Off => None,
            JsEval::On => Some(Arc::new(Self {
                runner: JsRunner::new(config.clone()),
                timeout: config.timeout,
            })),
        }
    }
}

#[async_trait]
impl ToolSource for JsEvalTool {
    fn offer(&self) -> SourceOffer {
        let definition = ToolName::new(JS_EVAL).ok().and_then(|name| {
            ToolDefinition::new(
                name,
                "Run a snippet of JavaScript and return the value of its last expression \
                 (a Promise is awaited). Plain ECMAScript only: no file system, network, \
                 modules or timers; limited time and memory; nothing survives the call.",
                json!({
                    "type": "object",
                    "properties": {
                        "code": {
                            "type": "string",
                            "description": "The snippet, e.g. `const xs = [3, 1, 2]; xs.sort()`"
                        }
                    },
                    "required": ["code"]
                }),
            )
            .ok()
        });
        SourceOffer {
            core_tools: definition.into_iter().collect(),
            groups: Vec::new(),
        }
    }

    fn deadline(&self) -> CallDeadline {
        CallDeadline::Own(JsRunner::deadline(self.timeout))
    }

    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let Some(code) = call.arguments.get("code").and_then(|code| code.as_str()) else {
            return Err(ToolCallError::respond(
                toolgate_core::MissingParameter("code").to_string(),
            ));
        };
        if code.len() > MAX_CODE_BYTES {
            return Err(ToolCallError::respond(format!(
                "The snippet is {} bytes long; js_eval takes at most {MAX_CODE_BYTES}.",
                code.len()
            )));
        }
        let code = code.to_owned();
        let limits = self.runner.limits(self.timeout);
        let permit = self.runner.turn(JS_EVAL, context).await?;
        let outcome = run_off_workers(JS_EVAL, context, move || {
            let outcome = toolgate_js::eval_script(&code, FILE_NAME, &limits);
            drop(permit);
            outcome
        })
        .await?;
        Ok(match outcome {
            Ok(value) => output_of(value),
            Err(error) => ToolOutput::error(describe(JS_EVAL, FILE_NAME, &error)),
        })
    }
}
