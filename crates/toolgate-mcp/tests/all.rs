//! Integration tests: the gateway served over real transports, driven by the
//! rmcp client.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod suite;
