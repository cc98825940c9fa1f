mod agent_over_gateway;
mod catalog;
mod chat;
mod migrate;
mod reload;
mod routing;
mod serve;
mod support;
