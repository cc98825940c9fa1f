//! Integration tests of the tool runtime: the built-in tools against local
//! servers, and the toolbox over sources the tests write. One binary, tests
//! in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
