"""Repeated simulation sweeps: how much a second process still compiles (issue 16, item 3).

Runs the same ``oscar_jax.sweep`` study in fresh processes: once with the compile cache
off (every process compiles everything: the situation before the Python API used the
cache), then twice with one fresh cache folder (first: cold, fills it; second: warm).
Reports, per run, the wall time of the sweep, the seconds the sweep itself reports as
compilation (lowering + XLA compile or cache load, of every simulator and method
program) and the XLA compilations that were persistent-cache hits. Results of the
three runs are checked bit-identical per seed.

Usage::

    python benchmarks/bench_sweep_cache.py                       # main + controls, 100 reps
    python benchmarks/bench_sweep_cache.py --quick               # N = 250, 500; 3 reps; J and OSCAR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time, collections
import jax.monitoring as mon
events = collections.Counter()
mon.register_event_listener(lambda e, **k: events.update([e]))
import numpy as np
from oscar_jax.sweep import sweep, main_and_controls
cfg = json.loads(sys.argv[1])
settings = main_and_controls(tuple(cfg["ns"]), control_n=cfg["control_n"])
t0 = time.perf_counter()
res = sweep(reps=cfg["reps"], methods=tuple(cfg["methods"]), seed=0, settings=settings)
wall = time.perf_counter() - t0
tim = res.timings
compile_s = float(tim.compile_s.sum() + tim.drop_duplicates(["n", "c", "rho"]).simulate_compile_s.sum())
rep = res.per_replicate()
np.save(cfg["out"], rep.select_dtypes("number").to_numpy(dtype=float))
print(json.dumps({"wall_s": wall, "compile_s": compile_s, "fits": len(rep),
                  "cache_hits": events.get("/jax/compilation_cache/cache_hits", 0)}))
"""


def _run(cfg: dict, cache: str) -> dict:
    env = dict(os.environ, OSCAR_JAX_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env, capture_output=True, text=True,
                         check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t0
    return res


def main(argv=None) -> dict:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sweep_cache.md")
    args = parser.parse_args(argv)
    if args.quick:
        cfg = {"ns": [250, 500], "control_n": 500, "reps": 3, "methods": ["j", "oscar"]}
    else:
        cfg = {"ns": [1000, 2500, 5000, 10000], "control_n": 2500, "reps": args.reps,
               "methods": ["j", "j+p", "j+l", "j+f", "oscar"]}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="oscar_sweep_cache_") as tmp:
        runs = {}
        for label, cache in (("cache off", "off"), ("cold cache", f"{tmp}/cache"), ("warm cache", f"{tmp}/cache")):
            runs[label] = _run(dict(cfg, out=f"{tmp}/{label.replace(' ', '_')}.npy"), cache)
            runs[label]["values"] = np.load(f"{tmp}/{label.replace(' ', '_')}.npy")
    load1 = os.getloadavg()[0]
    ref = runs["cache off"]["values"]
    identical = all(np.array_equal(r["values"], ref, equal_nan=True) for r in runs.values())
    lines = [
        "# Repeated sweeps: compilation in a second process (bench_sweep_cache.py)", "",
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} logical cores; "
        f"**load average (1 min) {load0:.1f} at start, {load1:.1f} at end**.", "",
        f"Study: N ∈ {cfg['ns']} main setting + the 3 Table G2 controls at N = {cfg['control_n']}, "
        f"{cfg['reps']} replicates, methods {', '.join(cfg['methods'])}: {runs['cache off']['fits']} fits per run. "
        f"Per-replicate results of the three runs bit-identical: **{'yes' if identical else 'NO'}**.", "",
        "| run (fresh process) | sweep wall s | of which compilation s | persistent-cache hits | process wall s |",
        "|---|---|---|---|---|",
    ]
    for label, r in runs.items():
        lines.append(f"| {label} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | {r['cache_hits']} | {r['process_s']:.1f} |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    for r in runs.values():
        r.pop("values")
    warm = runs["warm cache"]
    return {"runs": runs, "identical": identical,
            "goals": [("second run of the same sweep in a new process: compilation", "< 5 s",
                       f"{warm['compile_s']:.1f} s (cache off: {runs['cache off']['compile_s']:.1f} s)",
                       warm["compile_s"] < 5 if not args.quick else None)],
            "run_all": [{"package": f"sweep, warm compile cache ({warm['fits']} fits, compilation "
                                    f"{warm['compile_s']:.1f} s)", "package_s": warm["wall_s"],
                         "alternative": "the same sweep, cache off (compiles everything)",
                         "alternative_s": runs["cache off"]["wall_s"],
                         "note": f"bit-identical: {identical}; load {load0:.1f}–{load1:.1f}"}]}


if __name__ == "__main__":
    main()
