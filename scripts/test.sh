#!/usr/bin/env bash
# The README's test command, what CI runs (.ci/run): every test of the workspace under
# cargo-nextest, one queue longest first with its setup scripts and groups (.config/nextest.toml),
# then the doc tests, which nextest does not run. Where cargo-nextest is missing it is installed
# first from crates.io (`cargo install --locked cargo-nextest`, a few minutes on 2 cores), so the
# two commands of the README are all a fresh machine needs. Arguments go to `cargo nextest run`
# (e.g. `scripts/test.sh -E 'test(/studio/)'`).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo-nextest is not installed; installing it (cargo install --locked cargo-nextest)"
  cargo install --locked cargo-nextest
fi
cargo nextest run --workspace --locked "$@"
cargo test --workspace --doc --locked
