mod http_gateway;
mod polymorphic;
mod relay;
mod support;
mod upstreams;
