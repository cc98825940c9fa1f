//! Conversation storage for toolgate.
//!
//! A conversation is an ordered list of [`Message`](toolgate_core::Message)s;
//! nothing else is stored, because everything else (the loaded tool groups in
//! particular) is rebuilt from the messages. [`ConversationStore`] is the
//! backend-neutral trait; [`MemoryStore`], [`SqliteStore`] (the embedded
//! default: WAL, versioned migrations) and [`PostgresStore`] (shared by
//! several processes) implement it, and the integration tests run one
//! conformance suite against each. All of them also store agents
//! ([`AgentStore`]): a name, prompts and enabled tools, linked to the
//! conversations that use them; the JavaScript tools agents write
//! ([`JsToolStore`]), per owner; and the outcomes of routed turns
//! ([`RoutingOutcomeStore`]), per catalog, so the router's online
//! calibration survives a restart.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod conversation;
mod error;
mod id;
mod js_tool;
mod memory;
mod postgres;
mod routing_outcome;
mod sqlite;
mod store;

pub use agent::{AgentRecord, AgentStore, SYSTEM_PROMPT, StoreFuture};
pub use conversation::StoredMessage;
pub use error::{Result, StoreError};
pub use id::{AgentId, ConversationId, MessageId};
pub use js_tool::{JsToolRecord, JsToolStore, ToolOwner};
pub use memory::MemoryStore;
pub use postgres::{PostgresOptions, PostgresStore};
pub use routing_outcome::{KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore};
pub use sqlite::SqliteStore;
pub use store::ConversationStore;
