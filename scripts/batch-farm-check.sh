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

echo "== Two tasks in PID namespaces of their own, on one output folder and one cache"
# As two pods of a Kubernetes Job (each is PID 1, with its own /proc) or an array task retried
# while the first still runs: both compress the whole library into one folder and one cache at
# once, every write slowed (TEXSET_FAULT=slow-write: 1 KiB pieces, 5 ms apart), so that they
# write the same files at the same time. Nothing may be torn (every bundle is the unsharded
# run's, byte for byte; every record and cache entry reads), lost (the merge is complete) or
# left behind (no temporary file).
if unshare --pid --fork --mount-proc true 2>/dev/null; then
  pidns_cache="$work/pidns-cache"
  # Two tasks at once into folder $1; the second round reads every bundle from the cache the
  # first filled, so the two write the same files in step.
  two_tasks() {
    local pids=() task
    for task in 0 1; do
      TEXSET_FAULT=slow-write unshare --pid --fork --mount-proc sh -c 'echo "task '"$task"': PID $$ in its namespace"; exec "$@"' sh \
        "$texset" compress --batch "$work/library" -o "$1" --cache "$pidns_cache" "${options[@]}" >"$work/pidns-$task.log" 2>&1 &
      pids+=($!)
    done
    for task in 0 1; do
      if ! wait "${pids[$task]}"; then
        cat "$work/pidns-$task.log"
        echo "FAILED: task $task in its own PID namespace, into $1"
        exit 1
      fi
      head -1 "$work/pidns-$task.log"
    done
    "$texset" compress --batch "$work/library" -o "$1" --merge "${options[@]}" 2>&1
    same_as_unsharded "$1" "two PID-1 tasks on one folder and cache, slow writes ($2)"
    python3 - "$work/library" "$1" "$pidns_cache" <<'PY'
import json, pathlib, sys
library, out, cache = map(pathlib.Path, sys.argv[1:])
materials = sum(1 for p in library.iterdir() if p.is_dir())
records = [json.loads(p.read_text()) for p in out.glob("*.texset.json")]
entries = [json.loads(p.read_text()) for p in cache.glob("*.json")]
assert len(records) == len(entries) == materials and all(r.get("error") is None for r in records), (materials, records, entries)
assert all((cache / f'{e["input_sha256"]}.texset').stat().st_size == e["bundle_bytes"] for e in entries)
left = [p.name for d in (out, cache) for p in d.iterdir() if ".tmp-" in p.name]
assert not left, f"temporary files left: {left}"
print(f"{len(records)} records and {len(entries)} cache entries read whole; no temporary file left")
PY
  }
  two_tasks "$work/pidns-compressed" "both compress"
  two_tasks "$work/pidns-cached" "both copy from the cache"
else
  skip "unshare --pid cannot make a PID namespace here (needs root or user namespaces)"
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
