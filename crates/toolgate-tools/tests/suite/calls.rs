//! Calling a toolbox's tools as a test expects them to answer.

use serde_json::Value;
use toolgate_tools::{Authority, CallContext, ToolOutput, Toolbox};

/// The output of calling `name` with no caller, failing the test when the
/// toolbox refuses the call.
pub(crate) async fn call(toolbox: &Toolbox, name: &str, arguments: Value) -> ToolOutput {
    match toolbox
        .call(name, arguments, &CallContext::new(Authority::everything()))
        .await
    {
        Ok(output) => output,
        Err(error) => panic!("{name} was refused: {error}"),
    }
}
