mod catalog;
mod chat;
mod serve;
