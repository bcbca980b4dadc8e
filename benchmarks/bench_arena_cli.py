"""File to leaderboard at Arena scale: the whole ``oscar fit`` process, this checkout against another (issue 37).

Each measurement is one fresh ``oscar fit FILE --model oscar --format json`` process (the
console entry point of the checkout on ``PYTHONPATH``, started in an empty folder): CPU =
user + system of the finished process and its threads (``os.wait4``), wall from outside,
peak RSS (``ru_maxrss``). The data are :func:`bench_io.make_data`'s Chatbot Arena-style
battles (C = 100, K = 20, 20 records per prompt, a continuous length: one cell per record),
as Parquet and CSV. Warm compile cache: one unmeasured run of each checkout and file first
(each checkout keeps its own cache folder, since its programs differ); then the checkouts
alternate A B A B within each round. The load average is recorded beside every row.

    git worktree add /tmp/arena_base 845c71c
    python benchmarks/bench_arena_cli.py --baseline /tmp/arena_base --sizes 1e6,1e7 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_io import make_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "import sys; from oscar_jax.cli.main import main; sys.exit(main())"


def run_one(checkout: Path, path: Path, cache: Path, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "JAX_PLATFORMS": "cpu", "OSCAR_JAX_CACHE_DIR": str(cache)}
    argv = [sys.executable, "-c", COMMAND, "fit", str(path), "--model", "oscar", "--format", "json"]
    with tempfile.TemporaryDirectory() as empty:
        load = os.getloadavg()[0]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=empty, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                raise RuntimeError(f"{argv} ran past {timeout} s")
            time.sleep(0.01)
        wall = time.perf_counter() - start
        stderr = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"oscar fit failed in {checkout}:\n{stderr[-2000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "peak_mb": usage.ru_maxrss / 1024, "load": load}


def summarise(runs: list[dict]) -> dict:
    return {k: (min(r[k] for r in runs), statistics.median(r[k] for r in runs), max(r[k] for r in runs))
            for k in ("cpu", "wall", "peak_mb", "load")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="another checkout (e.g. git worktree add /tmp/b REV)")
    ap.add_argument("--sizes", default="1e6", help="comma-separated record counts, e.g. 1e6,1e7")
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "oscar_bench_io")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "arena_cli.md")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    sides = {"this checkout": ROOT}
    if args.baseline:
        sides["baseline"] = args.baseline.resolve()
    caches = {name: Path(tempfile.mkdtemp(prefix="oscar_arena_cache_")) for name in sides}
    started, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.perf_counter()
    rows = []
    for size in (int(float(s)) for s in args.sizes.split(",")):
        paths = make_data(args.data_dir, size)
        for fmt in args.formats.split(","):
            path = paths[fmt]
            runs = {name: [] for name in sides}
            for name, checkout in sides.items():  # warm-up: each side's programs in its own cache
                run_one(checkout, path, caches[name], args.timeout)
            for _ in range(args.rounds):
                for name, checkout in sides.items():
                    runs[name].append(run_one(checkout, path, caches[name], args.timeout))
            for name in sides:
                rows.append((size, fmt, name, summarise(runs[name])))
                print(size, fmt, name, rows[-1][3], flush=True)
    lines = [
        "# File to leaderboard at Arena scale (bench_arena_cli.py, issue 37)", "",
        f"Run {started}, {time.perf_counter() - t0:.0f} s; {os.cpu_count()} logical cores. Whole `oscar fit FILE "
        "--model oscar --format json` processes, warm compile cache, "
        f"{args.rounds} rounds interleaved"
        + (f"; baseline `{sides['baseline']}`" if "baseline" in sides else "") + ". Min / median (max for the load).",
        "", "| records | file | checkout | CPU s | wall s | peak RSS MiB | load |", "|---|---|---|---|---|---|---|"]
    for size, fmt, name, s in rows:
        lines.append(f"| {size:,} | {fmt} | {name} | {s['cpu'][0]:.2f} / {s['cpu'][1]:.2f} | "
                     f"{s['wall'][0]:.2f} / {s['wall'][1]:.2f} | {s['peak_mb'][0]:,.0f} / {s['peak_mb'][1]:,.0f} | "
                     f"{s['load'][0]:.1f}–{s['load'][2]:.1f} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
