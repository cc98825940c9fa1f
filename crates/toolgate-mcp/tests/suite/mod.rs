mod fuzz_config;
mod fuzz_messages;
mod fuzz_transports;
mod http_gateway;
mod polymorphic;
mod stdio;
mod support;
mod upstreams;
