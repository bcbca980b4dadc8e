"""Where a cold ``oscar fit`` spends its compilation: XLA compile seconds per program (issue 36).

Runs ``oscar fit DATA --model MODEL --format json`` in this process with the program cache
off (``OSCAR_JAX_CACHE_DIR=off``: the plain jit, so that each compilation event carries its
function's name; the exported programs compile the same StableHLO) and sums JAX's
``backend_compile`` durations by program, beside the process CPU time of the whole run and
the load average. It tells which programs a smaller cold start would have to shrink: those
that scale with records (the fit core) or the dim-θ ones (covariances, targets and their SEs).

    python benchmarks/studies/compile_split.py [--data FILE] [--model oscar] [--rounds 3]

Each round is a fresh interpreter (a program compiles once per process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import collections, contextlib, io, json, os, sys, time
import jax.monitoring as monitoring
seconds, count = collections.defaultdict(float), collections.Counter()

def on(event, duration, **kw):
    if event.endswith("backend_compile_duration"):
        seconds[kw.get("fun_name", "?")] += duration
        count[kw.get("fun_name", "?")] += 1

monitoring.register_event_duration_secs_listener(on)
from oscar_jax.cli.main import main
cpu = time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"exit": code, "cpu_s": time.process_time() - cpu, "load": os.getloadavg()[0],
                  "programs": {k: [count[k], v] for k, v in seconds.items()}}))
"""


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(Path(os.environ.get("OSCAR_DATA_DIR", ROOT.parent / "shared" / "data"))
                                              / "xu2026" / "judge_results_10k_mtbench.json"))
    parser.add_argument("--model", default="oscar")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    env = dict(os.environ, OSCAR_JAX_CACHE_DIR="off",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    runs = []
    for _ in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", CHILD, "fit", args.data, "--model", args.model, "--format", "json"],
                             env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"oscar fit {Path(args.data).name} --model {args.model}, program cache off, {args.rounds} fresh processes")
    print("| program | compilations | compile s (wall), per round | share of the round's compile time |")
    print("|---|---|---|---|")
    names = sorted({k for r in runs for k in r["programs"]}, key=lambda k: -runs[0]["programs"].get(k, [0, 0])[1])
    for name in names:
        per = [r["programs"].get(name, [0, 0.0]) for r in runs]
        share = [p[1] / max(sum(v[1] for v in r["programs"].values()), 1e-9) for p, r in zip(per, runs)]
        print(f"| `{name}` | {per[0][0]} | {', '.join(f'{p[1]:.2f}' for p in per)} | "
              f"{min(share):.0%}–{max(share):.0%} |")
    print("process CPU of the fit (s): " + ", ".join(f"{r['cpu_s']:.2f}" for r in runs)
          + "; load: " + ", ".join(f"{r['load']:.1f}" for r in runs))
    return runs


if __name__ == "__main__":
    main()
