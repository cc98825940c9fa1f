mod http_gateway;
mod polymorphic;
mod support;
mod upstreams;
