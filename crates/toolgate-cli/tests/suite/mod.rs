mod catalog;
mod chat;
mod routing;
mod serve;
