//! Cross-crate integration tests of quiche-cr live in `tests/`.
