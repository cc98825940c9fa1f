//! One module per `toolgate` subcommand, and what they share.

pub(crate) mod catalog;
pub(crate) mod chat;
pub(crate) mod eval;
pub(crate) mod migrate;
pub(crate) mod route;
pub(crate) mod serve;
pub(crate) mod tools;
