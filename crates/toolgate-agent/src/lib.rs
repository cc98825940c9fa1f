//! Tool execution for toolgate: the [`ToolExecutor`] trait every tool source
//! implements, and the [built-in tool groups](BuiltinTools) (`time`, `files`)
//! that ship with the gateway and the agent.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod builtin;
mod executor;

pub use builtin::{BuiltinConfig, BuiltinError, BuiltinTools, FilesAccess};
pub use executor::{ToolExecutor, ToolFuture, ToolOutput};
