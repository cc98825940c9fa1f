//! Integration tests of the `toolgate` binary: one test binary, tests in `suite/`.
#![expect(clippy::unwrap_used, reason = "test helpers should fail loudly")]

mod suite;
