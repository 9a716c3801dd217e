"""A texture library on a Ray cluster: one task per material, a quarter of a GPU each.

    python deploy/ray/compress_library.py LIBRARY OUT [texset compress options...]

`texset compress --batch LIBRARY -o OUT --plan --json` lists the materials and which are up to
date; each material that is not runs as its own task (`--only NAME`), then `--merge` checks the
library and writes its manifest. Pass the same options to every step: they are part of what "up
to date" means. Exit codes (docs/scale.md): 75 is transient and retried, 64 and 65 are for good.

TEXSET names the binary (default `texset`); TEXSET_GPUS_PER_TASK the GPU fraction per task
(default 0.25: four materials share a GPU; 0 trains on the CPU).
"""

import json
import os
import subprocess
import sys

import ray

TEXSET = os.environ.get("TEXSET", "texset")
GPUS_PER_TASK = float(os.environ.get("TEXSET_GPUS_PER_TASK", "0.25"))
TRANSIENT = 75


class Transient(Exception):
    """A task that exited with texset's transient code: Ray retries it."""


@ray.remote(num_cpus=2, num_gpus=GPUS_PER_TASK, max_retries=3, retry_exceptions=[Transient])
def compress(library, out, material, options):
    backend = ["--backend", "gpu"] if GPUS_PER_TASK > 0 else []
    command = [TEXSET, "compress", "--batch", library, "-o", out, "--only", material, *backend, *options]
    code = subprocess.run(command, check=False).returncode
    if code == TRANSIENT:
        raise Transient(material)
    return material, code


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    library, out, options = sys.argv[1], sys.argv[2], sys.argv[3:]
    batch = [TEXSET, "compress", "--batch", library, "-o", out]
    plan = json.loads(subprocess.run([*batch, "--plan", "--json", *options], check=True, capture_output=True, text=True).stdout)
    todo = [entry["material"] for entry in plan if not entry["up_to_date"]]
    print(f"{len(plan)} materials, {len(todo)} to do", file=sys.stderr)
    ray.init()
    failed = []
    for task, material in zip([compress.remote(library, out, m, options) for m in todo], todo):
        try:
            _, code = ray.get(task)
        except Transient:
            code = TRANSIENT
        if code != 0:
            failed.append((material, code))
    for material, code in failed:
        print(f"{material}: exit code {code}", file=sys.stderr)
    merge = subprocess.run([*batch, "--merge", *options], check=False).returncode
    sys.exit(merge or (1 if failed else 0))


if __name__ == "__main__":
    main()
