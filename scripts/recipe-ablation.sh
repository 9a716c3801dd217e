#!/usr/bin/env bash
# NTC's training recipe against texset's default, whole and piece by piece (docs/decisions/028).
#
#   scripts/recipe-ablation.sh OUT_DIR SET_DIR... [-- EXTRA COMPRESS FLAGS]
#
# Env: TEXSET (the binary; default target/release/texset), BPPS (default "4"), RUNS (the runs,
# default "texset ntc" plus "ntc-<piece>" for each piece of --recipe-without; "ntc-a+b" leaves
# out two; "classic", the default before decision 034: the classic recipe, the 64-48-32 decoder,
# normal maps at loss weight 6, ReLU; "relu", the default before decision 038), TAG (appended to each run's name, e.g. for the EXTRA flags).
# Each run compresses on the CPU trainer at the default preset, then `texset eval` scores it;
# one TSV line per run goes to OUT_DIR/results.tsv: set, bpp, run, bits/texel, pooled PSNR, lit
# (rendered) PSNR, training seconds, wall seconds of the compress command.
set -euo pipefail
out=$1
shift
sets=()
while [[ $# -gt 0 && $1 != "--" ]]; do
    sets+=("$1")
    shift
done
[[ ${1:-} == "--" ]] && shift
extra=("$@")
texset=${TEXSET:-target/release/texset}
bpps=${BPPS:-4}
pieces="noise freeze rates decay adam weights init"
runs=${RUNS:-"texset ntc $(for p in $pieces; do printf 'ntc-%s ' "$p"; done)"}
mkdir -p "$out"
results=$out/results.tsv
[[ -f $results ]] || printf 'set\tbpp\trun\tbits_per_texel\tpooled_db\tlit_db\ttrain_secs\twall_secs\n' >"$results"
for set in "${sets[@]}"; do
    name=$(basename "$set")
    for bpp in $bpps; do
        for run in $runs; do
            case $run in
                texset) flags=() ;;
                classic) flags=(--recipe classic --decoder 64-48-32 --loss-weight normal=6 --activation relu) ;;
                relu) flags=(--activation relu) ;;
                ntc) flags=(--recipe ntc) ;;
                ntc-*) flags=(--recipe ntc --recipe-without "$(tr + , <<<"${run#ntc-}")") ;;
                *) echo "unknown run $run" >&2; exit 2 ;;
            esac
            label=$run${TAG:-}
            stem=$out/$name-$bpp-$label
            start=$(date +%s.%N)
            "$texset" compress "$set" -o "$stem.texset" --bpp "$bpp" --preset default --backend cpu --no-ssim \
                --report "$stem.json" "${flags[@]}" "${extra[@]}" >"$stem.log" 2>&1
            end=$(date +%s.%N)
            "$texset" eval "$set" "$stem.texset" --json >"$stem.eval.json" 2>/dev/null
            python3 - "$stem" "$name" "$bpp" "$label" "$start" "$end" >>"$results" <<'PY'
import json, sys
stem, name, bpp, run, start, end = sys.argv[1:]
report = json.load(open(stem + ".json"))
ev = json.load(open(stem + ".eval.json"))
lit = sum(r["rendered_psnr_db"] for r in ev["rendered"]) / len(ev["rendered"])
print(f"{name}\t{bpp}\t{run}\t{report['bits_per_texel']:.3f}\t{ev['pooled_psnr_db']:.2f}\t{lit:.2f}\t{report['train_secs']:.1f}\t{float(end) - float(start):.1f}")
PY
            tail -1 "$results"
        done
    done
done
