#!/usr/bin/env bash
# The GPU figures, in one run, for the day a hardware GPU is lent (the device tool; see
# docs/benchmarks.md for where they go). Under 5 minutes after the build on a 16-core machine.
#
#   scripts/gpu-check.sh [BASE_TEXSET]
#
# BASE_TEXSET: a `texset` binary of the build to compare against (e.g. a stripped release build of
# the previous main, carried in); each bench then runs base and candidate alternately on the same
# card, so the ratio is one run's. Output: everything printed, and a copy under $OUT (or
# target/gpu-check).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-target/gpu-check}"
mkdir -p "$out"
log="$out/gpu-check.txt"
exec > >(tee "$log") 2>&1

echo "== $(date -u +%FT%TZ) gpu-check of $(git rev-parse --short HEAD 2>/dev/null || echo 'a copied tree')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || true
# Whether the card runs `dot4I8Packed` (`--precision int8`, decision 037) in hardware: wgpu does
# not say, Vulkan does.
vulkaninfo 2>/dev/null | grep -E "integerDotProduct4x8BitPackedSignedAccelerated|deviceName" || true
# A lent machine may have no Rust toolchain and no registry: build here and carry
# target/release/texset (the device tool's `carry`); the script builds only where cargo exists.
if command -v cargo >/dev/null 2>&1; then
  time cargo build --release --locked --bin texset
fi
candidate=target/release/texset
[[ -x "$candidate" ]] || { echo "no $candidate: build it (cargo build --release --bin texset) and carry it"; exit 1; }
base="${1:-}"
bins=("$candidate")
[[ -n "$base" ]] && bins=("$base" "$candidate" "$base" "$candidate")

cabinet="${TEXSET_CABINET:-../shared/textures/painted_wooden_cabinet}"
libs=(sample_textures/*)
[[ -d "$cabinet" ]] && cabinet_args=("$cabinet") || cabinet_args=()

# 1. Decode: adapter features, limits and cooperative-matrix configurations, compile time per
#    entry point, ms per 1080p frame of one map and of a whole material, GFLOP/s against peak.
#    At equal widths: a842090 decodes its default 64-48-32, so a build with `--decoder` (whose
#    default became 64-64-64 in decision 034) decodes 64-48-32 here too; its own default after.
for bin in "${bins[@]}"; do
  widths=()
  "$bin" bench decode --help | grep -q -- --decoder && widths=(--decoder 64-48-32)
  echo "== bench decode --gpu ${widths[*]+${widths[*]}}: $bin (sample library)"
  timeout 120 "$bin" bench decode --gpu --runs 5 ${widths[@]+"${widths[@]}"} "${libs[@]}" || echo "FAILED ($?)"
  if [[ ${#cabinet_args[@]} -gt 0 ]]; then
    echo "== bench decode --gpu ${widths[*]+${widths[*]}}: $bin (painted_wooden_cabinet)"
    timeout 120 "$bin" bench decode --gpu --runs 5 ${widths[@]+"${widths[@]}"} "${cabinet_args[@]}" || echo "FAILED ($?)"
  fi
done
if [[ ${#cabinet_args[@]} -gt 0 ]]; then
  echo "== bench decode --gpu, the default 64-64-64 decoder: $candidate (painted_wooden_cabinet)"
  timeout 120 "$candidate" bench decode --gpu --runs 5 "${cabinet_args[@]}" || echo "FAILED ($?)"
fi

# 1b. The decoder's hidden-layer code shape (decision 032): the portable `vec4` rows (this card's
#     default) against scalar loads (lavapipe's, 1.6x faster there); then f32 against f16 and
#     packed int8 arithmetic (issue 39 item 3, decisions 033 and 037: what each trades is in
#     docs/integration.md). A precision the build lacks prints clap's refusal and goes on.
if "$candidate" bench decode --help | grep -q -- --mlp-shape; then
  echo "== bench decode --gpu --mlp-shape scalar: $candidate (sample library)"
  timeout 120 "$candidate" bench decode --gpu --runs 5 --mlp-shape scalar "${libs[@]}" || echo "FAILED ($?)"
fi
if "$candidate" bench decode --help | grep -q -- --precision; then
  for precision in f32 f16 int8; do
    echo "== bench decode --gpu --precision $precision: $candidate (sample library)"
    timeout 120 "$candidate" bench decode --gpu --runs 5 --precision "$precision" "${libs[@]}" || echo "FAILED ($?)"
  done
fi

# 2. Training: the fused GPU trainer's wall time per step and each dispatch's GPU time
#    (timestamp queries) at 8k to 262k texels per step; a base without --batch-sweep runs the
#    three batches of before.
for bin in "${bins[@]}"; do
  echo "== bench train --gpu --batch-sweep: $bin"
  if "$bin" bench train --help | grep -q -- --batch-sweep; then
    timeout 180 "$bin" bench train --gpu --batch-sweep --runs 3 "${libs[@]}" || echo "FAILED ($?)"
  else
    for batch in 8192 65536 262144; do
      timeout 120 "$bin" bench train --gpu --batch "$batch" "${libs[@]}" || echo "FAILED ($?)"
    done
  fi
done

# 2b. How the weight gradients are summed on this card, at NTC's batch: in `fwd_bwd`'s workgroup
#     (`fused`, the hardware default since decision 040, rounds of 32 and 64 texels) against the
#     `wgrad` pass's tiles (8x8x256, the hardware default before; 16x32x1024, the software GPU's).
#     `fwd_bwd`, `wgrad` and `adam` are the dispatches that change.
if "$candidate" bench train --help | grep -q -- '--wgrad '; then
  for pass in fused fused-64 8x8x256 16x32x1024; do
    echo "== bench train --gpu --batch 65536 --wgrad $pass: $candidate"
    timeout 120 "$candidate" bench train --gpu --batch 65536 --runs 3 --wgrad "$pass" "${libs[@]}" || echo "FAILED ($?)"
  done
elif "$candidate" bench train --help | grep -q -- --wgrad-tile; then
  for tile in 8x8x256 16x16x256 16x32x1024; do
    echo "== bench train --gpu --batch 65536 --wgrad-tile $tile: $candidate"
    timeout 120 "$candidate" bench train --gpu --batch 65536 --runs 3 --wgrad-tile "$tile" "${libs[@]}" || echo "FAILED ($?)"
  done
fi

# 2c. The fixed cost per step: one step per submission against 16 (the uniform ring), at a small
#     batch where it shows and at NTC's, the two timed alternately in one run.
if "$candidate" bench train --help | grep -q -- --submit-steps; then
  for batch in 8192 65536; do
    echo "== bench train --gpu --batch $batch --submit-steps 1,16: $candidate"
    timeout 120 "$candidate" bench train --gpu --batch "$batch" --runs 5 --submit-steps 1,16 "${libs[@]}" || echo "FAILED ($?)"
  done
fi

# 2d. The trainer's MLP code shape (decision 031): the decoder's `vec4` rows (this card's default)
#     against scalar loads (lavapipe's, 1.6x faster there), at NTC's batch; `fwd_bwd` changes.
if "$candidate" bench train --help | grep -q -- --mlp-shape; then
  for shape in vec4-rows scalar; do
    echo "== bench train --gpu --batch 65536 --mlp-shape $shape: $candidate"
    timeout 90 "$candidate" bench train --gpu --batch 65536 --runs 3 --mlp-shape "$shape" "${libs[@]}" || echo "FAILED ($?)"
  done
fi

# 3. The studio's frame times with the preview open (needs a display: Xvfb where installed).
if command -v xvfb-run >/dev/null 2>&1; then
  echo "== bench ui: $candidate"
  timeout 240 xvfb-run -a "$candidate" bench ui || echo "FAILED ($?)"
else
  echo "SKIPPED: bench ui (no xvfb-run)"
fi
# 4. The viewport's frame in GPU time (issue 65: one full-resolution frame of the per-pixel decoded
#    viewport in <= 16.7 ms): `texset render --gpu-time` times its surface, material (the decoder,
#    per pixel) and shading passes with timestamp queries, 50 drawings after a warm one. On the
#    shoe where ../shared is beside the tree (TEXSET_SHOE), else a sample folder on a sphere; the
#    bundle is trained briefly (its shape, not its quality, sets the decoder's cost).
shoe="${TEXSET_SHOE:-../shared/gltf/MaterialsVariantsShoe/MaterialsVariantsShoe.gltf}"
[[ -f "$shoe" ]] && viewport_asset="$shoe" || viewport_asset="${libs[0]}"
if "$candidate" render --help | grep -q -- --gpu-time; then
  echo "== texset render --gpu-time: $candidate ($viewport_asset)"
  if timeout 300 "$candidate" compress "$viewport_asset" -o "$out/viewport.texset" --steps 200 --no-ssim; then
    for size in 1440x900 1920x1080 3840x2160; do
      timeout 120 "$candidate" render "$viewport_asset" --bundle "$out/viewport.texset" --size "$size" --gpu-time 50 \
        -o "$out/viewport_$size.png" || echo "FAILED ($?)"
    done
    timeout 120 "$candidate" render "$viewport_asset" --bundle "$out/viewport.texset" --size 1920x1080 --gpu-time 50 \
      --ab decoded,original -o "$out/viewport_wipe_1920x1080.png" || echo "FAILED ($?)"
  else
    echo "FAILED ($?): the viewport's bundle"
  fi
else
  echo "SKIPPED: texset render --gpu-time (not in $candidate)"
fi
echo "== done; log in $log"
