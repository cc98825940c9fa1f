mod http_gateway;
mod http_limits;
mod polymorphic;
mod relay;
mod shutdown;
mod support;
mod upstreams;
