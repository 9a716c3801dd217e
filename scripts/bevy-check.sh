#!/usr/bin/env bash
# texset-bevy in CI (called by .ci/run after the root workspace's tests): its versions, format,
# lints, headless render tests on lavapipe and the example under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/../integrations/bevy"

# One wgpu in this tree, Bevy's: texset-core and texset-shaders come in without wgpu 30.
versions="$(cargo tree --locked -e normal --prefix none | grep -oE '^(bevy|wgpu) v[0-9.]+' | sort -u | tr '\n' ' ')"
echo "texset-bevy: ${versions}"
if [ "$versions" != "bevy v0.19.1 wgpu v29.0.4 " ]; then
  echo "texset-bevy: expected Bevy 0.19.1 on one wgpu (29.0.4), got: ${versions}" >&2
  exit 1
fi

if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --locked --all-targets -- -D warnings
fi

# Each render test runs a whole Bevy app: one at a time.
log="$(mktemp)"
cargo test --locked -- --test-threads=1 2>&1 | tee "$log"
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "texset-bevy tests: %d passed, %d failed\n", p, f }' "$log"

# The example opens a window (Xvfb here) and renders the sample library for 20 s.
if command -v xvfb-run >/dev/null 2>&1; then
  TEXSET_BEVY_EXIT_AFTER_SECS=20 xvfb-run -a cargo run --locked --example bevy_material
  echo "texset-bevy: the example ran 20 s in a window"
else
  echo "SKIPPED: bevy_material example: xvfb-run is not installed"
fi
