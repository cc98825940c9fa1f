//! Gateway sessions. Each MCP session is a stored conversation whose history
//! holds its group loads and unloads, so any gateway process that sees the
//! session id again rebuilds the same tool list:
//!
//! - [`Sessions`] (`sessions.rs`): every live session, restored from its
//!   history when it is not in memory;
//! - [`HeldSessions`] (`held.rs`): which HTTP sessions rmcp holds in memory,
//!   and when one leaves it;
//! - [`HistorySessionStore`] (`history_store.rs`): rmcp's session store on
//!   the same history, so a restarted gateway serves a session on;
//! - `list_changed.rs`: telling one client its tool list changed.

mod held;
mod history_store;
mod list_changed;
mod sessions;

pub use held::{HeldSessions, Hold};
pub(crate) use held::{SessionOwner, sweep_until};
pub use history_store::HistorySessionStore;
pub(crate) use list_changed::notify_tool_list_changed;
pub use sessions::{HELD_IN_MEMORY, SESSION_STARTED, Session, Sessions};
