#!/usr/bin/env bash
# Rate–distortion curve of one material folder: compress at several bits per texel with the
# default preset and print a markdown table (bits per texel, pooled PSNR, per-map PSNR, train time).
# Usage: scripts/rd_curve.sh ../shared/textures/painted_wooden_cabinet [OUT_DIR] [extra compress args]
set -euo pipefail
dir="$1"; out="${2:-target/rd}"; shift; shift || true
mkdir -p "$out"
name="$(basename "$dir")"
cargo build -q --workspace --bins
echo "| target bpt | bundle bytes | bits per texel | pooled PSNR dB | per map PSNR dB | train s | steps |"
echo "|---|---|---|---|---|---|---|"
for bpp in 2 3 4 6 8; do
  ./target/debug/texset compress "$dir" -o "$out/$name-$bpp.texset" --bpp "$bpp" --no-ssim --report "$out/$name-$bpp.json" "$@" 2>/dev/null
  python3 - "$out/$name-$bpp.json" "$bpp" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
maps = ", ".join(f"{m['map']} {m['psnr_db']:.2f}" for m in r["maps"])
print(f"| {sys.argv[2]} | {r['bundle_bytes']} | {r['bits_per_texel']:.3f} | {r['pooled_psnr_db']:.2f} | {maps} | {r['train_secs']:.0f} | {r['steps']} |")
PY
done
