//! One module per `toolgate` subcommand.

pub(crate) mod catalog;
pub(crate) mod serve;
