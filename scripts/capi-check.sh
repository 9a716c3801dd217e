#!/usr/bin/env bash
# texset-capi in CI (integrations/capi, a workspace of its own): format, the build linted by
# clippy, then its tests: the header against cbindgen, and the C program (ASan and UBSan on the C
# side) against the Rust decoder, glslangValidator on its GLSL, the documented snippet.
# Usage: scripts/capi-check.sh [build|run|all]   (default all)
# - build: format, and the test build linted by clippy;
# - run: the tests, on what `build` made (nothing is rebuilt).
# .ci/run starts `build` in the background after texset-bevy's, and `run` after the root's tests.
set -euo pipefail
# The phase, `step`, `count_tests`, the folder and clippy: scripts/workspace-check.sh.
. "$(dirname "$0")/workspace-check.sh" capi integrations/capi "$@"

if [ "$phase" != run ]; then
step "format, build (linted by clippy)"
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt -- --check
fi
cargo test --locked --no-run
fi
[ "$phase" = build ] && exit 0

step "tests"
log="$(mktemp)"
cargo test --locked 2>&1 | tee "$log"
count_tests "$log"
step "done"
