//! One module per `toolgate` subcommand, and what several of them share.

mod access;
mod banner;
pub(crate) mod catalog;
pub(crate) mod chat;
pub(crate) mod eval;
mod learned;
pub(crate) mod migrate;
mod partial_group;
mod reload;
pub(crate) mod route;
pub(crate) mod serve;
mod stdio_command;
pub(crate) mod telemetry;
pub(crate) mod token;
mod tool_setup;
