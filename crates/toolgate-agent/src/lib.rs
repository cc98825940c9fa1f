//! Tool execution for toolgate: the [`ToolExecutor`] and
//! [`ToolHost`] traits every tool source implements, the [built-in tool
//! groups](BuiltinTools) (`time`, `files`) that ship with the gateway and the
//! agent.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod builtin;
mod executor;
mod host;

pub use builtin::{BuiltinConfig, BuiltinError, BuiltinTools, FilesAccess};
pub use executor::{ToolExecutor, ToolFuture, ToolOutput};
pub use host::{PrepareFuture, ToolHost};
