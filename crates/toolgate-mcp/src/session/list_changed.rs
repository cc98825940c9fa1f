//! `notifications/tools/list_changed` to one client, sent without letting
//! a connection that no longer reads hold the call that sends it.

use std::time::Duration;

use rmcp::{Peer, RoleServer};

/// Longest a call waits for the client's connection to take a
/// `notifications/tools/list_changed`. Past it the notification stays queued
/// and goes out if the connection still runs. A connection whose client has
/// closed its input is draining: rmcp still sends the answers of calls in
/// flight but no notifications, so a call waiting on one would hold its own
/// answer, and the connection, until rmcp gives up (5 s) and drops both.
pub(crate) const LIST_CHANGED_WAIT: Duration = Duration::from_millis(500);

/// Sends `peer` a `list_changed`, waiting at most [`LIST_CHANGED_WAIT`] for
/// its connection to take it.
pub(crate) async fn notify_tool_list_changed(peer: &Peer<RoleServer>) {
    match tokio::time::timeout(LIST_CHANGED_WAIT, peer.notify_tool_list_changed()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%error, "list_changed not delivered"),
        Err(_) => tracing::debug!("list_changed still queued: the connection is not reading"),
    }
}
