mod agent_over_gateway;
mod catalog;
mod chat;
mod js_examples;
mod migrate;
mod routing;
mod serve;
mod support;
