mod backends;
mod conformance;
mod postgres;
