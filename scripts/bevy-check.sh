#!/usr/bin/env bash
# texset-bevy in CI: its versions, format, lints, headless render tests on lavapipe and the
# example under Xvfb.
# Usage: scripts/bevy-check.sh [build|run|all]   (default all)
# - build: the checks that need no GPU, and every build (tests and example), linted;
# - run: the render tests and the example, on what `build` made (nothing is rebuilt).
# .ci/run starts `build` in the background, at a low priority, beside the root workspace's build
# (whose single-crate stretches leave a core idle), and `run` after the root's tests.
set -euo pipefail
# The phase, `step`, `count_tests`, the folder and clippy: scripts/workspace-check.sh.
. "$(dirname "$0")/workspace-check.sh" bevy integrations/bevy "$@"

if [ "$phase" != run ]; then
step "versions, format, build (linted by clippy)"
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
cargo test --locked --no-run
cargo build --locked --example bevy_material
step "built"
fi
[ "$phase" = build ] && exit 0

step "tests"
# Each render test runs a whole Bevy app: one at a time.
log="$(mktemp)"
cargo test --locked -- --test-threads=1 2>&1 | tee "$log"
count_tests "$log"

# The example opens a window (Xvfb here) and renders the sample library; Space, pressed through
# xdotool once the spheres are shown, switches them to the per-pixel material and back: the log
# and the window's title must say so each time. Escape then quits it.
if command -v xvfb-run >/dev/null 2>&1 && command -v xdotool >/dev/null 2>&1; then
  step "example"
  example_log="$(mktemp)"
  TEXSET_BEVY_EXIT_AFTER_SECS=60 xvfb-run -a bash -c '
    set -u
    log="$1"
    cargo run --locked --example bevy_material >"$log" 2>&1 &
    app=$!
    # Waits up to $2 seconds for the $1-th line of the log that matches $3.
    wait_for() {
      for _ in $(seq 1 "$2"); do
        [ "$(grep -c -- "$3" "$log")" -ge "$1" ] && return 0
        sleep 1
      done
      echo "texset-bevy: the example never logged \"$3\" (${1}x) within $2 s" >&2
      cat "$log" >&2
      return 1
    }
    press() {
      window="$(xdotool search --name "texset in Bevy" | head -1)"
      # No window manager: the pointer over the window gives it the keyboard.
      xdotool mousemove 640 360
      xdotool windowfocus --sync "$window"
      xdotool key "$1"
    }
    status=0
    wait_for 1 45 "materials shown" || status=1
    if [ "$status" = 0 ]; then
      press space
      wait_for 1 20 "decoded per pixel (Space" || status=1
      # The title changes with a later frame than the log line: up to 20 s of frames.
      title=""
      for _ in $(seq 1 20); do
        title="$(xdotool getwindowname "$(xdotool search --name "texset in Bevy" | head -1)")"
        case "$title" in *"per pixel (Space"*) break ;; esac
        sleep 1
      done
      case "$title" in *"per pixel (Space"*) ;; *) echo "texset-bevy: the title 20 s after Space: $title" >&2; status=1 ;; esac
    fi
    if [ "$status" = 0 ]; then
      press space
      # The first such line came when the spheres were shown.
      wait_for 2 20 "decoded on load (Space" || status=1
    fi
    # Every check has passed or failed: Escape quits (TEXSET_BEVY_EXIT_AFTER_SECS is the cap, for
    # a window that no longer takes keys).
    if [ "$status" = 0 ]; then
      press Escape
      wait_for 1 20 "Escape: quitting" || status=1
    fi
    wait "$app" || status=1
    exit "$status"
  ' _ "$example_log"
  echo "texset-bevy: the example ran in a window; Space switched it to per-pixel decoding and back"
else
  echo "SKIPPED: bevy_material example: xvfb-run or xdotool is not installed"
fi
