//! Integration tests of toolgate-core: one binary, tests in `suite/`.

mod suite;
