//! An [`Upstream`] as a source of the tool runtime: the toolbox lists it
//! into the catalog, routes its tools' calls to it, and relists it when it
//! announces a change. A call coming from an MCP client carries that
//! client (a [`Downstream`]), to which the server's progress, logs and
//! requests for input are relayed while the call runs.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use toolgate_tools::{
    CallContext, CallDeadline, ListedGroup, ListedSource, SourceCall, SourceChange, SourceError,
    SourceListing, ToolCallError, ToolOutput, ToolSource,
};

use crate::convert::output_from_result;
use crate::relay::{Downstream, relayed};
use crate::upstream::Upstream;

/// How much longer than its own timeouts a call of an upstream may run
/// before the toolbox gives up on it: those timeouts answer first, with the
/// server's name, and tell the server.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

#[async_trait]
impl ToolSource for Upstream {
    /// Its own timeouts bound a call: start-up (when the call starts it),
    /// then the call itself; the toolbox's deadline only backs them up.
    fn deadline(&self) -> CallDeadline {
        let config = self.config();
        CallDeadline::Own(
            config
                .startup_timeout
                .saturating_add(config.call_timeout)
                .saturating_add(DEADLINE_MARGIN),
        )
    }

    /// Calls the tool on the server; what the server sends meanwhile
    /// (progress, logs, requests for input) goes to the calling MCP client,
    /// when the call came from one.
    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        let Value::Object(arguments) = call.arguments else {
            return Err(ToolCallError::respond("Tool arguments must be an object."));
        };
        let downstream = context
            .backchannel
            .get::<Downstream>()
            .cloned()
            .unwrap_or_default();
        let (relay, events) = mpsc::channel(32);
        let running = self.call_tool(
            &call.tool,
            arguments,
            &context.cancel,
            downstream.session.clone(),
            relay,
        );
        match relayed(running, events, &downstream).await {
            Ok(result) => Ok(output_from_result(result)),
            Err(error) => Err(ToolCallError::respond(error.to_string())),
        }
    }
}

#[async_trait]
impl ListedSource for Upstream {
    fn group(&self) -> &ListedGroup {
        self.listed_group()
    }

    async fn list(&self) -> Result<SourceListing, SourceError> {
        self.list_tools().await.map_err(SourceError::new)
    }

    async fn running_generation(&self) -> Option<u64> {
        self.connection_generation().await
    }

    async fn stop(&self) {
        self.stop_connection().await;
    }

    async fn shutdown(&self) {
        self.close().await;
    }

    async fn retire(&self) {
        self.drain_and_close().await;
    }

    async fn changed(&self) -> SourceChange {
        self.wait_for_change().await
    }
}

#[cfg(test)]
#[path = "upstream_source_tests.rs"]
mod tests;
