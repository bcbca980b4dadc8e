"""Read, validate and design at Arena scale: this checkout against another, interleaved (issue 37).

Each measurement is a fresh process started in an empty folder (so the working folder
cannot shadow either checkout's package), with ``PYTHONPATH`` pointing at the checkout.
The process imports the three entry points first (pandas, pyarrow and JAX load outside
the timed phases), then times, with ``getrusage`` CPU (all threads) and wall clock:

* read     ``oscar_jax.io.readers.read_table(path)``: the file to a raw frame;
* validate ``oscar_jax.io.data.load_judgments(path)`` on the frame just read (its reader
  replaced by one that returns it): schema detection, every value checked, the canonical
  frame, exactly as the CLI runs it;
* design   ``oscar_jax.model.design.build_design(frame)``: integer codes, cells, pairs;

and the peak RSS of the process (``VmHWM``) after import and at the end. The data are
Chatbot Arena-style battles (``question_id, model_a, model_b, winner, judge, len_a,
len_b``): C = 100 candidates, K = 20 judges, 20 records per prompt, lengths drawn from a
log-normal so the length contrast is continuous (no two records need share a cell), written
once as Parquet and CSV. Baseline and candidate alternate A B A B within each round, after
one unmeasured warm-up pair; the load average is recorded beside every row.

    python benchmarks/bench_io.py --baseline /tmp/io_base --sizes 1e6 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def peak_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")
from oscar_jax.io.readers import read_table
from oscar_jax.io.data import load_judgments
from oscar_jax.model.design import build_design
import pyarrow, jax  # noqa: F401 (loaded outside the timed phases on both sides)
out = {"peak_import_mb": peak_mb()}
path = sys.argv[1]
t, c = time.perf_counter(), cpu()
raw, _ = read_table(path)
out["read_cpu"], out["read_wall"] = cpu() - c, time.perf_counter() - t
# load_judgments(path) as the CLI calls it, on the frame just read (a DataFrame argument
# would be copied first, which the CLI never does).
import oscar_jax.io.data as data
data.read_table = lambda source, encoding=None: (raw, str(source))
t, c = time.perf_counter(), cpu()
frame, report = load_judgments(path)
out["validate_cpu"], out["validate_wall"] = cpu() - c, time.perf_counter() - t
del raw, data.read_table
t, c = time.perf_counter(), cpu()
design = build_design(frame, report=report)
out["design_cpu"], out["design_wall"] = cpu() - c, time.perf_counter() - t
out.update(peak_mb=peak_mb(), n_records=design.n_records, n_cells=design.n_cells, n_cand=design.n_cand,
           n_judge=design.n_judge, n_prompts=design.n_clusters)
print("RESULT " + json.dumps(out))
"""

PHASES = ("read", "validate", "design")


def make_data(folder: Path, n: int, seed: int = 0) -> dict[str, Path]:
    """Arena-style battles with continuous lengths, as Parquet and CSV (written once)."""
    import numpy as np
    import pandas as pd

    paths = {fmt: folder / f"arena_{n}.{fmt}" for fmt in ("parquet", "csv")}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(seed)
    n_cand, n_judge = 100, 20
    cands = np.array([f"model-{i:03d}" for i in range(n_cand)], dtype=object)
    judges = np.array([f"judge-{i:02d}" for i in range(n_judge)], dtype=object)
    a = rng.integers(0, n_cand, n)
    b = (a + rng.integers(1, n_cand, n)) % n_cand
    winner = np.array(["model_a", "model_b", "tie", "tie (bothbad)"], dtype=object)[
        rng.choice(4, n, p=[0.4, 0.4, 0.15, 0.05])]
    frame = pd.DataFrame({
        "question_id": (np.arange(n) // 20).astype(str), "model_a": cands[a], "model_b": cands[b], "winner": winner,
        "judge": judges[rng.integers(0, n_judge, n)],
        "len_a": np.round(rng.lognormal(6.5, 0.8, n)).astype(np.int64),
        "len_b": np.round(rng.lognormal(6.5, 0.8, n)).astype(np.int64)})
    frame.to_parquet(paths["parquet"])
    frame.to_csv(paths["csv"], index=False)
    return paths


def run_one(checkout: Path, path: Path, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "JAX_PLATFORMS": "cpu"}
    with tempfile.TemporaryDirectory() as empty:
        load = os.getloadavg()[0]
        proc = subprocess.run([sys.executable, "-c", WORKER, str(path)], cwd=empty, env=env, capture_output=True,
                              text=True, timeout=timeout)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"worker failed in {checkout}:\n{proc.stderr[-2000:]}")
    return {**json.loads(line[7:]), "load": load}


def summarise(runs: list[dict]) -> dict:
    out = {}
    for key in [f"{p}_{kind}" for p in PHASES for kind in ("cpu", "wall")] + ["peak_mb", "peak_import_mb", "load"]:
        values = [r[key] for r in runs]
        out[key] = {"min": min(values), "median": statistics.median(values), "max": max(values)}
    total = [sum(r[f"{p}_cpu"] for p in PHASES) for r in runs]
    out["total_cpu"] = {"min": min(total), "median": statistics.median(total), "max": max(total)}
    out["n_cells"] = runs[0]["n_cells"]
    return out


def markdown(results: dict, baseline: str, rounds: int) -> str:
    lines = [
        "| records | format | side | read CPU (s) | validate CPU (s) | design CPU (s) | read+validate+design CPU (s), "
        "best / median | peak RSS (MB) | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|"]
    for (n, fmt), sides in results.items():
        for side, s in sides.items():
            label = f"before ({baseline})" if side == "base" else "after (this branch)"
            lines.append(
                f"| {n:,} | {fmt} | {label} | {s['read_cpu']['min']:.2f} | {s['validate_cpu']['min']:.2f} | "
                f"{s['design_cpu']['min']:.2f} | **{s['total_cpu']['min']:.2f}** / {s['total_cpu']['median']:.2f} | "
                f"{s['peak_mb']['median']:.0f} (import {s['peak_import_mb']['median']:.0f}) | "
                f"{s['load']['min']:.1f}–{s['load']['max']:.1f} |")
    lines.append("")
    lines.append(f"Phase columns are each phase's best of {rounds} runs (so they need not add up to the total's best).")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="another checkout (e.g. git worktree add /tmp/b REV)")
    ap.add_argument("--sizes", default="1e6", help="comma-separated record counts, e.g. 1e6,1e7")
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "oscar_bench_io")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", type=Path, help="write every run's numbers here")
    ap.add_argument("--no-warmup", action="store_true", help="skip the unmeasured warm-up pair (large sizes)")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    sides = {"base": args.baseline.resolve(), "new": ROOT}
    results, raw = {}, {}
    for n in [int(float(x)) for x in args.sizes.split(",")]:
        paths = make_data(args.data_dir, n)
        for fmt in args.formats.split(","):
            for side in () if args.no_warmup else ("base", "new"):  # warm-up pair: page cache, .pyc files
                run_one(sides[side], paths[fmt], args.timeout)
            runs = {"base": [], "new": []}
            for r in range(args.rounds):
                for side in (("base", "new") if r % 2 == 0 else ("new", "base")):
                    runs[side].append(run_one(sides[side], paths[fmt], args.timeout))
                    print(f"{n} {fmt} {side}: " + " ".join(f"{p} {runs[side][-1][p + '_cpu']:.2f}" for p in PHASES)
                          + f" peak {runs[side][-1]['peak_mb']:.0f} MB load {runs[side][-1]['load']:.1f}", flush=True)
            results[(n, fmt)] = {side: summarise(v) for side, v in runs.items()}
            raw[f"{n}-{fmt}"] = runs
    print(markdown(results, str(args.baseline), args.rounds))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
