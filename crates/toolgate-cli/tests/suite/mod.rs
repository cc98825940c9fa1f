mod catalog;
mod serve;
