//! Integration tests of the agent loop against a scripted provider: one
//! binary, tests in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
