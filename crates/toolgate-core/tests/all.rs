//! Integration tests of toolgate-core: one binary, tests in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
