mod backends;
mod conformance;
