#!/usr/bin/env bash
# Mirrors CI locally: format, lints, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo check -p texset-core --no-default-features --locked
cargo test --workspace --locked
