mod http_gateway;
mod support;
mod upstreams;
