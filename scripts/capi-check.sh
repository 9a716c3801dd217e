#!/usr/bin/env bash
# texset-capi in CI (integrations/capi, a workspace of its own): format, the build linted by
# clippy, then its tests: the header against cbindgen, and the C program (ASan and UBSan on the C
# side) against the Rust decoder, glslangValidator on its GLSL, the documented snippet.
# Usage: scripts/capi-check.sh [build|run|all]   (default all)
# - build: format, and the test build linted by clippy;
# - run: the tests, on what `build` made (nothing is rebuilt).
# .ci/run starts `build` in the background after texset-bevy's, and `run` after the root's tests.
set -euo pipefail
phase="${1:-all}"
case "$phase" in build | run | all) ;; *) echo "usage: $0 [build|run|all]" >&2; exit 2 ;; esac
step() { echo "== capi-check step at +${SECONDS}s ($(date -u +%T)): $*"; }
cd "$(dirname "$0")/../integrations/capi"

# clippy lints this workspace inside its test build, as .ci/run does for the root's.
if cargo clippy --version >/dev/null 2>&1 && clippy_driver="$(command -v clippy-driver)"; then
  export RUSTC_WORKSPACE_WRAPPER="$clippy_driver" RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
else
  echo "WARNING: clippy is not installed; texset-capi's lint check skipped"
fi
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
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "texset-capi tests: %d passed, %d failed\n", p, f }' "$log"
step "done"
