//! Serving one MCP client over a byte pipe: this process's stdin and stdout
//! (`toolgate serve --stdio`), or any reader and writer, speaking
//! newline-delimited JSON-RPC. The connection is one session, whose caller
//! is the operator that started the gateway.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use toolgate_store::{ConversationId, ConversationStore};

use crate::gateway::Gateway;
use crate::handler::{GatewayHandler, SessionSource};

/// How a connection over a pipe is served.
#[derive(Clone, Debug)]
pub struct StdioOptions {
    /// The connection's session: its history holds the groups it loads.
    pub session: ConversationId,
    /// On shutdown, how long calls in flight may take to finish.
    pub shutdown_grace: Duration,
}

/// Serves `gateway` to the MCP client on this process's stdin and stdout,
/// as [`serve_pipe`] does.
pub async fn serve_stdio<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    options: StdioOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let (input, output) = rmcp::transport::stdio();
    serve_pipe(gateway, input, output, options, shutdown).await
}

/// Serves `gateway` to the MCP client at the other end of `input` and
/// `output` until the client closes its input or `shutdown` is cancelled.
/// On shutdown it refuses new tool calls, lets the calls in flight finish
/// (up to [`StdioOptions::shutdown_grace`]), then ends the connection. An
/// error when the client does not complete the MCP handshake.
pub async fn serve_pipe<S, R, W>(
    gateway: Arc<Gateway<S>>,
    input: R,
    output: W,
    options: StdioOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    S: ConversationStore + 'static,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let handler = GatewayHandler::new(Arc::clone(&gateway), SessionSource::Fixed(options.session));
    let running = handler
        .serve((input, output))
        .await
        .map_err(std::io::Error::other)?;
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => {}
        () = shutdown.cancelled() => {
            gateway.drain(options.shutdown_grace).await;
            cancel.cancel();
            let _ = waiting.await;
        }
    }
    Ok(())
}
