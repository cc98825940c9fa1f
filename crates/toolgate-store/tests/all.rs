//! Integration tests of toolgate-store: one binary, tests in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
