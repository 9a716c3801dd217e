#!/usr/bin/env bash
# The batch recipes of deploy/ on real tools (docs/scale.md), run by .ci/run after the tests:
# - deploy/k8s/*.yaml validate against Kubernetes 1.33's schemas (kubernetes-validate, strict);
# - deploy/ray/compress_library.py runs on a local Ray (CPU tasks) where Ray is installed, and
#   its bundles match an unsharded run's; else it is only compiled;
# - a one-node Slurm cluster runs deploy/slurm/array.sbatch as a 4-task array with `--shard auto`
#   on a small library; the shards are merged, and every bundle is compared byte for byte with an
#   unsharded run's. The daemons started are stopped by their process ids.
# Usage: scripts/batch-farm-check.sh [TEXSET_BINARY]   (default target/debug/texset)
set -euo pipefail
cd "$(dirname "$0")/.."
texset=$(realpath "${1:-target/debug/texset}")
work=$(mktemp -d)
skip() {
  echo "SKIPPED: batch-farm-check: $1"
}

echo "== Kubernetes manifests"
if command -v kubernetes-validate >/dev/null 2>&1; then
  kubernetes-validate --strict --kubernetes-version 1.33.0 deploy/k8s/*.yaml
else
  skip "kubernetes-validate is not installed (pip install kubernetes-validate)"
fi

trap 'scripts/slurm-node.sh stop "$work/slurm"; rm -rf "$work"' EXIT
"$texset" gen-samples -o "$work/library" --size 32 --seed 11 2>&1
options=(--steps 60 --seed 4)
"$texset" compress --batch "$work/library" -o "$work/unsharded" "${options[@]}" 2>&1
same_as_unsharded() {
  local count=0
  for bundle in "$work"/unsharded/*.texset; do
    cmp "$bundle" "$1/$(basename "$bundle")"
    count=$((count + 1))
  done
  echo "$2: $count bundles byte-identical to the unsharded run's"
}

echo "== Ray example"
python3 -m py_compile deploy/ray/compress_library.py
if python3 -c "import ray" 2>/dev/null; then
  TEXSET="$texset" TEXSET_GPUS_PER_TASK=0 RAY_DISABLE_USAGE_STATS=1 \
    python3 deploy/ray/compress_library.py "$work/library" "$work/ray" "${options[@]}" 2>&1 | grep -v '^\s*$'
  same_as_unsharded "$work/ray" "one Ray task per material"
else
  skip "Ray is not installed (pip install ray): deploy/ray/compress_library.py only compiled"
fi

echo "== Slurm array"
if ! command -v slurmctld >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  skip "Slurm (slurm-wlm, munge) is not installed, or this is not root"
  exit 0
fi
scripts/slurm-node.sh start "$work/slurm"
export SLURM_CONF="$work/slurm/slurm.conf"
mkdir -p "$work/logs"
start=$(date +%s)
TEXSET="$texset" TEXSET_LIBRARY="$work/library" TEXSET_OUT="$work/sharded" \
  sbatch --wait --array=0-3 --output="$work/logs/%A_%a.out" deploy/slurm/array.sbatch "${options[@]}"
echo "array of 4 tasks done in $(($(date +%s) - start)) s"
cat "$work"/logs/*.out
ls "$work/sharded"/summary-shard-*-of-4.json
"$texset" compress --batch "$work/library" -o "$work/sharded" --merge "${options[@]}" 2>&1
python3 - "$work/sharded" <<'PY'
import json, sys
runs = json.load(open(f"{sys.argv[1]}/merged-summary.json"))["runs"]
schedulers = sorted({r["origin"]["scheduler"] for r in runs})
assert schedulers == ["slurm"] and len(runs) == 4, (schedulers, [r["file"] for r in runs])
print("merged 4 Slurm shards:", ", ".join(f'{r["shard"]["index"]}/{r["shard"]["count"]} ({r["materials"]} on {r["origin"]["host"]})' for r in runs))
PY
same_as_unsharded "$work/sharded" "a Slurm array of 4 tasks with --shard auto"
