#!/usr/bin/env bash
# Where the studio's CPU goes on a software GPU: the real window on Xvfb (lavapipe), the sample
# library, per-thread CPU (cores, from /proc) while idle, while training in the Compare view,
# and while training with the PBR preview open and its lights orbiting. `llvmpipe-*` threads
# rasterise the window's frames and run the preview's shaders; `texset-work-*` trains.
#
#   scripts/studio-cpu.sh [TEXSET_BINARY]     (default: target/debug/texset)
#
# Needs Xvfb and xdotool (what .ci/run installs). Run two builds one after the other, with
# nothing else running, to compare them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/debug/texset}"
export DISPLAY=:77 XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/xdg-runtime}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
MESA_SHADER_CACHE_DIR="$(mktemp -d)" XDG_DATA_HOME="$(mktemp -d)"
export MESA_SHADER_CACHE_DIR XDG_DATA_HOME
Xvfb :77 -screen 0 1440x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
sleep 2
"$bin" studio --steps 3000 sample_textures/* >"$XDG_DATA_HOME/studio.log" 2>&1 &
studio=$!
trap 'kill $studio $xvfb 2>/dev/null || true' EXIT
window=""
for _ in $(seq 1 120); do
  window="$(xdotool search --name 'texset studio' 2>/dev/null | head -1 || true)"
  [ -n "$window" ] && break
  sleep 1
done
[ -n "$window" ] || { echo "no studio window; its log:"; cat "$XDG_DATA_HOME/studio.log"; exit 1; }
sleep 8
xdotool mousemove 700 450
xdotool windowfocus --sync "$window"
hz="$(getconf CLK_TCK)"
ticks() {
  for t in /proc/$studio/task/*; do
    awk -v c="$(tr -d ' ' <"$t/comm")" '{print c, $14 + $15}' "$t/stat" 2>/dev/null || true
  done | awk '{k = $1; sub(/-[0-9]+$/, "-*", k); a[k] += $2} END {for (k in a) print k, a[k]}' | sort
}
measure() {
  local before after
  before="$(ticks)"
  sleep "$2"
  after="$(ticks)"
  echo "$1 ($2 s), cores per thread group:"
  join -a 2 -e 0 -o 0,1.2,2.2 <(echo "$before") <(echo "$after") |
    awk -v s="$2" -v hz="$hz" '{c = ($3 - $2) / hz / s; if (c >= 0.01) printf "  %-16s %.2f\n", $1, c}'
}
measure "idle" 10
xdotool key space
sleep 3
measure "training, Compare view" 15
xdotool key 2
sleep 20
measure "training, PBR preview, lights orbiting" 15
