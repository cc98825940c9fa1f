//! Integration tests of the providers against a scripted server that speaks
//! each wire format: one binary, tests in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
