"""One process against `--processes 2` for a 2,000-replicate prompt bootstrap.

Each run is the whole command a user types (`python -m oscar_jax.cli.main bootstrap … --format
json`), timed from start to exit, with the persistent compilation cache off. Agreement is
the largest absolute difference over every number in the two JSON outputs (0 = the same
bytes). On one machine the second process cannot add cores that XLA does not already use,
so expect a ratio at or below 1: the row measures the overhead of the distributed path.

    python benchmarks/bench_processes.py [--replicates 2000] [--data FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"


def _numbers(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, float(obj)


def max_abs_difference(a: str, b: str) -> float:
    na, nb = dict(_numbers(json.loads(a))), dict(_numbers(json.loads(b)))
    if na.keys() != nb.keys():
        return float("inf")
    return max((abs(na[k] - nb[k]) for k in na), default=0.0)


def run(args_list, processes: int) -> tuple[str, float]:
    env = dict(os.environ, OSCAR_JAX_CACHE_DIR="off", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "oscar_jax.cli.main", "bootstrap", *args_list, "--format", "json"]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return out.stdout, time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--data", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from oscar_jax.io.data import shared_data_dir

    mt = shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json"
    if args.data:
        data = [args.data]
    elif mt.exists() and not args.quick:
        data = [str(mt), "--reference-judge", REFERENCE_JUDGE]
    else:
        data = [str(ROOT / "tests" / "data" / "eco_oscar.csv")]
    reps = 50 if args.quick else args.replicates
    common = data + ["--replicates", str(reps), "--seed", "0"]
    load0 = os.getloadavg()[0]
    one, t1 = run(common, 1)
    two, t2 = run(common, 2)
    diff = max_abs_difference(one, two)
    note = (f"{Path(data[0]).name}, {reps} replicates; max |Δ| over the JSON numbers {diff:.1e} "
            f"({'identical bytes' if one == two else 'bytes differ'}); load {load0:.1f}→{os.getloadavg()[0]:.1f}")
    print(f"1 process {t1:.1f} s, 2 processes {t2:.1f} s; {note}")
    return {"run_all": [{"package": "bootstrap, 2 processes (--processes 2, gloo)", "package_s": t2,
                         "alternative": "1 process", "alternative_s": t1, "note": note}],
            "one_s": t1, "two_s": t2, "max_abs_diff": diff, "identical": one == two}


if __name__ == "__main__":
    main()
