mod catalog;
mod chat;
mod migrate;
mod routing;
mod serve;
