#!/usr/bin/env bash
# Mirrors CI locally: format, lints, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo check -p texset-core --no-default-features --locked
# Tests that could not run here (no GPU adapter, …) are listed at the end, as CI counts them.
export TEXSET_SKIP_LOG="$(mktemp)"
scripts/test.sh
echo "skipped: $(wc -l < "$TEXSET_SKIP_LOG") tests"
cat "$TEXSET_SKIP_LOG"
