# What scripts/bevy-check.sh and scripts/capi-check.sh share, for a workspace of its own under
# integrations/: sourced as `. scripts/workspace-check.sh NAME FOLDER "$@"`, it reads the phase
# (build|run|all, default all) into $phase, defines `step` and `count_tests LOG`, enters FOLDER,
# and has clippy lint every cargo build there, as .ci/run does for the root's: each cargo command
# compiles the workspace's own crates with clippy-driver and `-D warnings`, so the dependencies
# are compiled once, not also checked. Both phases set the same, so `run` finds `build`'s
# artifacts current.
name="$1"
folder="$2"
phase="${3:-all}"
case "$phase" in build | run | all) ;; *) echo "usage: $0 [build|run|all]" >&2; exit 2 ;; esac
step() { echo "== ${name}-check step at +${SECONDS}s ($(date -u +%T)): $*"; }
# The passed and failed counts of `cargo test`'s output in LOG.
count_tests() {
  awk -v name="texset-$name" '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
       END { printf "%s tests: %d passed, %d failed\n", name, p, f }' "$1"
}
cd "$(dirname "${BASH_SOURCE[0]}")/../$folder"
if cargo clippy --version >/dev/null 2>&1 && clippy_driver="$(command -v clippy-driver)"; then
  export RUSTC_WORKSPACE_WRAPPER="$clippy_driver" RUSTFLAGS="${RUSTFLAGS:-} -D warnings"
else
  echo "WARNING: clippy is not installed; texset-$name's lint check skipped"
fi
