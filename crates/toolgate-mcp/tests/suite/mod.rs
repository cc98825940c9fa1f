mod agent;
mod http_gateway;
mod support;
mod upstreams;
