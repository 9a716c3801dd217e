//! Workspace integration tests live in `tests/tests/*.rs`.
