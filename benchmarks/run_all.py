"""Run every benchmark in one process and collect the numbers in ``results/RESULTS.md``.

For each task: the package's time, each alternative's time measured in the same run, and
their ratio (alternative ÷ package: > 1 means oscar_jax is faster), next to the
objective or checks the benchmark records, plus the issue-8 goals with the figure
reached, package versions, CPU and thread settings.

Tasks (each is a module in ``benchmarks/`` with ``main(argv)``; a missing module, or one
without ``main``, is listed as "not available" instead of failing the run):

=========== ============================== =================================================
task        module                         package vs alternatives
=========== ============================== =================================================
bt          bench_bt                       plain BT: compiled fast path vs evalica, choix,
                                           statsmodels (Chatbot Arena records)
fit         bench_fit                      one OSCAR / J+P fit per dataset vs scipy on the same cells
bootstrap   bench_bootstrap ``speed``      500-replicate compiled bootstrap vs loops
simulation  bench_simulation               Section 7 sweep vs a scipy loop (extrapolated)
bayes       bench_bayes                    NUTS next to the point fit (its own table)
scaling     bench_scaling                  10⁴ … 10⁶ records vs the fair scipy baseline; memory at 10⁷
cli         bench_cli                      whole ``oscar`` processes (cold/warm cache) vs
                                           ``import oscar_jax`` and a plain scipy script
processes   bench_processes                2,000-replicate bootstrap: --processes 2 vs 1
svi         bench_svi                      SVI vs NUTS (MT-Bench, Appendix G), SVI at 10⁵/10⁶
=========== ============================== =================================================

A benchmark can hand its rows to this script directly: if ``main`` returns a dict with a
``"run_all"`` list of ``{"package", "package_s", "alternative", "alternative_s",
"note"}`` entries, those rows are used as they are.

``bench_scaling`` runs each size in a fresh subprocess on purpose (peak RSS is a
process-lifetime maximum); everything else shares this process, so compiled programs
are reused across tasks exactly as they would be in a user's session.

Usage::

    python benchmarks/run_all.py                 # full suite (tens of minutes on 2 cores)
    python benchmarks/run_all.py --quick         # tiny settings, results in a temp folder
    python benchmarks/run_all.py --tasks bt,fit  # a subset
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads, for every task alike: bench_bootstrap.py
# measured OpenBLAS threading on its many ≤ 100 × 100 factorizations as 30× slower on 2
# shared cores, and it can only take effect if set before the first numpy import.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
PACKAGES = ("oscar_jax", "jax", "jaxlib", "numpy", "scipy", "pandas", "evalica", "choix", "statsmodels",
            "numpyro", "matplotlib")
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")


# ----------------------------------------------------------------------------- rows
@dataclass
class Row:
    """One comparison: the package's time against one alternative's, same run."""

    task: str
    package: str
    package_s: float | None
    alternative: str = "–"
    alternative_s: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.package_s and self.alternative_s:
            return self.alternative_s / self.package_s
        return None


@dataclass
class Outcome:
    task: str
    status: str                      # "ok" | "not available" | "failed"
    wall_s: float = 0.0
    rows: list = field(default_factory=list)
    goals: list = field(default_factory=list)   # (goal, target, reached, met: bool | None)
    files: list = field(default_factory=list)
    message: str = ""


# ----------------------------------------------------------------------------- collectors
def _find(pattern: str, text: str, group: int = 1, cast=float):
    m = re.search(pattern, text, re.M)
    return cast(m.group(group)) if m else None


def collect_fit(result, out: Outcome, quick: bool):
    rows = result if isinstance(result, list) else []
    ratios = []
    for r in rows:
        if "note" in r:
            out.rows.append(Row("fit", f"{r['dataset']}: {r['note']}", None))
            continue
        b = r["best"]
        fair = min(("cells L-BFGS-B", "cells trust-exact"), key=lambda m: b[m][1])
        label = f"`fit` {r['model']}, {r['dataset']} (N = {r['N']:,}, {r['cells']} cells)"
        out.rows.append(Row("fit", label, b["fit"][0], f"scipy {fair} on the same cells, 1 start, B.3 tolerance",
                            b[fair][0], f"CPU {1e3 * b['fit'][1]:.1f} vs {1e3 * b[fair][1]:.1f} ms; B.3 {r['checks']}; "
                            f"first call {r['first_s']:.1f} s; {r['iters']} Newton evaluations; with both covariances "
                            f"{1e3 * b['fit+cov'][1]:.1f} CPU-ms"))
        if r["model"].upper() == "OSCAR":
            ratios.append((b[fair][1] / b["fit"][1], r["dataset"]))
    if ratios:
        worst = min(ratios)
        out.goals.append(("compiled OSCAR fit on ~10k records vs the fair scipy baseline (same cells)", "report",
                          f"{worst[0]:.1f}× CPU (worst: {worst[1]}; " + ", ".join(f"{d} {s:.1f}×" for s, d in ratios)
                          + ")", None))


def collect_bootstrap(text: str, out: Outcome, quick: bool):
    rows = {}
    for label in ("a", "a1", "a2", "b", "c"):
        m = re.search(rf"^\| \({label}\) ([^|]*)\| ([^|]*)\| ([\d.]+) \|", text, re.M)
        if m:
            rows[label] = (m.group(1).strip(), m.group(2).strip(), float(m.group(3)))
    reps = _find(r"(\d+) prompt-bootstrap replicates", text, cast=int)
    if "a" not in rows:
        raise ValueError("could not find row (a) in the bootstrap table")
    a_name, _, a_s = rows["a"]
    agree = _find(r"^(Agreement: .*)$", text, cast=str) or ""
    failed = _find(r"^(Replicates failing .*?)\(", text, cast=str) or ""
    for key, alt in (("a1", "the same chunks one at a time on one thread"),
                     ("a2", "the same compiled chunks fully vmapped"), ("b", "Python loop over `core.fit_core_jit`"),
                     ("c", "Python loop over scipy L-BFGS-B")):
        if key in rows:
            out.rows.append(Row("bootstrap", f"{reps} replicates, {a_name}", a_s,
                                f"{alt} ({rows[key][1]} timed)", rows[key][2],
                                (agree + " " + failed).strip()))
    if "c" in rows:
        # a tiny quick batch can print as 0.000 s: the ratio is then unbounded, not an error
        ratio = rows["c"][2] / a_s if a_s > 0 else float("inf")
        out.goals.append((f"{reps}-replicate bootstrap vs scipy loop" + (" (quick: not the 500 of the goal)"
                                                                          if reps != 500 else ""),
                          "≥ 50×", f"{ratio:.0f}×", ratio >= 50 if reps == 500 else None))


def collect_simulation(text: str, out: Outcome, quick: bool):
    m = re.search(r"^\| oscar_jax sweep, whole study ([^|]*)\| ([\d.]+) \|", text, re.M)
    b = re.search(r"^\| scipy L-BFGS-B loop, ([^|]*)\| ([\d.]+) \|", text, re.M)
    if not m:
        raise ValueError("could not find the sweep row in simulation.md")
    fits = _find(r"\*\*(\d+) fits\*\*", text, cast=int)
    out.rows.append(Row("simulation", f"`sweep`, {fits} fits with CIs and metrics {m.group(1).strip()}",
                        float(m.group(2)),
                        f"scipy L-BFGS-B loop, {b.group(1).strip()}" if b else "scipy loop",
                        float(b.group(2)) if b else None, "baseline: fit only, no sandwich"))


def collect_bt(result, out: Outcome, quick: bool):
    summ = result["summary"]
    core_name = next(k for k in summ if "plain BT core" in k)
    core = summ[core_name]
    pkg_s = core["median_ms"] / 1e3
    for name, r in summ.items():
        if name.startswith("oscar_jax"):  # package variants are not alternatives
            continue
        if "median_ms" not in r:
            out.rows.append(Row("bt", core_name, pkg_s, name, None, r["note"]))
            continue
        first = "" if math.isnan(r["first_s"]) else f"; first call {r['first_s']:.2f} s"
        out.rows.append(Row("bt", core_name, pkg_s, name, r["median_ms"] / 1e3,
                            f"objective {r['objective']:.6f} (ours {core['objective']:.6f}), "
                            f"max |Δs| {r['max_ds']:.0e}{first}"))
    duels = result.get("duels", {})
    for ours, theirs, goal in (("ours core", "evalica core", 1.0), ("ours public", "evalica public", 10.0)):
        if ours in duels and theirs in duels:
            a, b = duels[ours], duels[theirs]
            out.goals.append((f"plain BT, {ours} vs {theirs} on {result['n_records']:,} records (interleaved)",
                              f"≥ {goal:.0f}×", f"{b[1] / a[1]:.1f}× CPU, {b[0] / a[0]:.1f}× wall "
                              f"({1e3 * a[1]:.3f} vs {1e3 * b[1]:.3f} CPU-ms)", min(b[1] / a[1], b[0] / a[0]) >= goal))


def collect_scaling(result, out: Outcome, quick: bool):
    rows = [r for r in result["rows"] if "error" not in r]
    for r in rows:
        if r.get("memory_only"):
            out.rows.append(Row("scaling", f"OSCAR C={r['n_cand']} K={r['n_judge']} N={r['n_records']:,} compiled fit, "
                                "memory", r["fit_s"], note=f"{r.get('bytes_over_raw', float('nan')):.0f} bytes per "
                                f"record over the raw columns; peak RSS {r['peak_run_mb']:.0f} MB"))
            continue
        bases = [(m, r[m]) for m in ("lbfgsb", "trust-exact") if r.get(m)]
        name, b = min(bases, key=lambda x: x[1]["wall_s"]) if bases else (None, None)
        out.rows.append(Row("scaling", f"OSCAR C={r['n_cand']} K={r['n_judge']} N={r['n_records']:,} compiled, default "
                            f"settings (first call {r['first_s']:.1f} s)", r["fit_s"],
                            f"scipy {name} on the same cells" if b else "no baseline at this size",
                            b["wall_s"] if b else None,
                            f"{r['n_iter']} Newton evaluations; B.3 {'pass' if r['ok'] else 'FAIL'}; CPU "
                            f"{1e3 * r['fit_cpu_s']:.1f} ms vs {1e3 * b['cpu_s']:.1f} ms" if b else ""))
    for r in result["rows"]:
        if "error" in r:
            out.rows.append(Row("scaling", f"C={r['n_cand']} N={r['n_records']:,}", None, note=r["error"]))
    for n in (100_000, 1_000_000):
        for r in (r for r in rows if r["n_records"] == n and not r.get("memory_only")):
            bases = [r[m] for m in ("lbfgsb", "trust-exact") if r.get(m)]
            if bases:
                cpu = min(b["cpu_s"] for b in bases) / r["fit_cpu_s"]
                out.goals.append((f"default OSCAR fit at {n:,} records (C={r['n_cand']}) vs the fair scipy baseline",
                                  "≥ 5× (CPU)", f"{cpu:.1f}× CPU, {min(b['wall_s'] for b in bases) / r['fit_s']:.1f}× wall",
                                  cpu >= 5))
    for r in (r for r in rows if r["n_records"] >= 1_000_000 and "ident_cpu_s" in r):
        ratio = r["ident_cpu_s"] / r["fit_cpu_s"]
        out.goals.append((f"identification check at {r['n_records']:,} records (C={r['n_cand']}) ÷ the fit's CPU",
                          "≤ 0.5×, peak not raised", f"{ratio:.2f}×; peak {r['peak_ident_mb']:.0f} vs the fit's "
                          f"{r['peak_run_mb']:.0f} MB", ratio <= 0.5 and r["peak_ident_mb"] <= r["peak_run_mb"]))
    if quick and not any(r["n_records"] >= 1_000_000 for r in rows):
        out.goals.append(("default OSCAR fit at 10⁶ records vs the fair scipy baseline", "≥ 5×", "not run (--quick)", None))


def collect_bayes(text: str, out: Outcome, quick: bool):
    """bench_bayes's table: the point fit and NUTS, steady state (compiled)."""
    rows = re.findall(r"^\| ([^|]+?) \| ([\d.]+) \| ([\d.]+) \| ([^|]*)\| ([^|]*)\| ([^|]*)\| ([^|]*)\|", text, re.M)
    point = next((r for r in rows if r[0].startswith("point fit")), None)
    if point is None:
        raise ValueError("could not find the point-fit row in bayes_bench.md")
    for r in rows:
        if r is point:
            continue
        out.rows.append(Row("bayes", f"{r[0]} (NUTS; first call {float(r[1]):.0f} s)", float(r[2]),
                            "oscar_jax point fit + sandwich (reference, not an alternative)", float(point[2]),
                            f"min ESS (bulk, tail) {r[3].strip()}, ESS/s {r[4].strip()}, max R-hat {r[5].strip()}, "
                            f"divergences {r[6].strip()}"))


def collect_generic(result, out: Outcome, quick: bool):
    if isinstance(result, dict) and isinstance(result.get("run_all"), list):
        for r in result["run_all"]:
            out.rows.append(Row(out.task, r.get("package", out.task), r.get("package_s"), r.get("alternative", "–"),
                                r.get("alternative_s"), r.get("note", "")))
    else:
        out.rows.append(Row(out.task, f"`{out.task}` benchmark, wall time of its main()", out.wall_s,
                            note="its own table lists the comparison"))


def collect_cli(result, out: Outcome, quick: bool):
    collect_generic(result, out, quick)
    out.goals.extend(result.get("goals", []) if isinstance(result, dict) else [])


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    name: str
    module: str
    argv: Callable[[bool, Path], list]    # (quick, out_dir) -> argv
    collect: Callable                      # (result or text, Outcome, quick)
    result_file: Callable[[bool, Path], Path] | None = None  # parsed when main() returns no numbers


TASKS = (
    Task("bt", "benchmarks.bench_bt",
         lambda q, d: (["--quick"] if q else []) + ["--out", str(d / "bt.md")], collect_bt),
    Task("fit", "benchmarks.bench_fit",
         lambda q, d: (["--quick"] if q else []) + ["--out", str(d / "bench_fit.md")], collect_fit),
    Task("bootstrap", "benchmarks.bench_bootstrap",
         lambda q, d: (["speed"] + (["--replicates", "20", "--loop-subset", "5", "--scipy-subset", "2"] if q else [])
                       + ["--output", str(d / "bootstrap.md")]),  # an absolute name lands outside results/
         collect_bootstrap, lambda q, d: d / "bootstrap.md"),
    Task("simulation", "benchmarks.bench_simulation",
         lambda q, d: (["--quick"] if q else []) + ["--out", str(d)], collect_simulation,
         lambda q, d: d / "simulation.md"),
    # bench_bayes has no output option: its full run writes results/bayes_bench.md, the quick one prints only.
    Task("bayes", "benchmarks.bench_bayes", lambda q, d: ["--quick"] if q else [], collect_bayes,
         lambda q, d: None if q else RESULTS / "bayes_bench.md"),
    Task("scaling", "benchmarks.bench_scaling",
         lambda q, d: (["--quick"] if q else []) + ["--out-dir", str(d)], collect_scaling),
    # Whole `oscar` processes (each a fresh subprocess, cold and warm compile cache).
    Task("cli", "benchmarks.bench_cli",
         lambda q, d: (["--quick"] if q else []) + ["--out", str(d / "cli.md")], collect_cli),
    Task("processes", "benchmarks.bench_processes", lambda q, d: ["--quick"] if q else [], collect_generic),
    Task("svi", "benchmarks.bench_svi",
         lambda q, d: ["--quick"] if q else ["--out", str(d / "svi.md")], collect_generic),
)


def run_task(task: Task, quick: bool, out_dir: Path) -> Outcome:
    out = Outcome(task.name, "ok")
    try:
        module = importlib.import_module(task.module)
    except ModuleNotFoundError as err:
        if err.name == task.module:
            out.status, out.message = "not available", f"{task.module} does not exist"
            return out
        out.status, out.message = "failed", f"import failed: {err}"
        return out
    main = getattr(module, "main", None)
    if not callable(main):
        out.status, out.message = "not available", f"{task.module} has no main(argv)"
        return out
    argv = task.argv(quick, out_dir)
    print(f"\n[run_all] {task.name}: {task.module}.main({argv})", flush=True)
    t0 = time.perf_counter()
    try:
        result = main(argv)
    except SystemExit as err:  # argparse errors, "data absent" exits
        out.wall_s = time.perf_counter() - t0
        if err.code not in (0, None):
            out.status, out.message = "failed", f"exited with {err.code}"
            return out
        result = None
    except Exception as err:  # one broken benchmark must not stop the others
        out.wall_s = time.perf_counter() - t0
        out.status, out.message = "failed", f"{type(err).__name__}: {err}"
        traceback.print_exc()
        return out
    out.wall_s = time.perf_counter() - t0
    try:
        path = task.result_file(quick, out_dir) if task.result_file is not None else None
        if path is not None:
            out.files.append(path)
            task.collect(path.read_text(encoding="utf-8"), out, quick)
        elif task.result_file is not None:  # this mode writes no table: report the wall time
            collect_generic(result, out, quick)
        else:
            task.collect(result, out, quick)
    except Exception as err:
        out.message = f"ran in {out.wall_s:.0f} s but its numbers could not be collected ({type(err).__name__}: {err})"
        out.rows.append(Row(task.name, f"`{task.name}` benchmark, wall time of its main()", out.wall_s,
                            note="see its own results file"))
    return out


# ----------------------------------------------------------------------------- environment
def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    import numpy as np

    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{cfg.get('name')} {cfg.get('version', '')}".strip()
    except Exception:
        return "unknown"


def environment(load_start: float) -> list[str]:
    import jax

    cores = os.cpu_count() or 1
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores
    threads = ", ".join(f"{v}={os.environ.get(v, '') or 'unset'}" for v in THREAD_VARS)
    return [
        "* Packages: " + ", ".join(f"{p} {_version(p)}" for p in PACKAGES) + f"; python {platform.python_version()}",
        f"* CPU: {_cpu_model()}, {cores} logical cores ({usable} usable), {platform.system()} {platform.release()}",
        f"* JAX: backend {jax.default_backend()}, devices {[str(d) for d in jax.devices()]}, x64 "
        f"{jax.config.jax_enable_x64}",
        f"* Threads: {threads}; numpy BLAS {_blas()}; XLA CPU uses its own thread pool over all usable cores",
        f"* Load average (1 min): {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end",
    ]


# ----------------------------------------------------------------------------- report
def _s(x) -> str:
    if x is None:
        return "–"
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def markdown(outcomes, quick: bool, started: str, wall: float, load_start: float) -> str:
    cores = os.cpu_count() or 1
    lines = ["# oscar_jax benchmark results", "",
             f"Run {started}, {'--quick (tiny settings, not the goal sizes)' if quick else 'full settings'}, "
             f"{wall / 60:.1f} min in one process (bench_scaling's sizes each in a fresh subprocess, for peak RSS).",
             ""]
    if load_start > 0.5 * cores:
        lines += [f"**Taken under load** (load average {load_start:.1f} on {cores} cores at start): other jobs "
                  "shared the CPU, so every time is inflated and noisy. Final numbers must be taken on a quiet "
                  "machine (`python benchmarks/run_all.py`).", ""]
    lines += ["## Environment", "", *environment(load_start), "", "## Goals (issue 8)", "",
              "| goal | target | reached | met |", "|---|---|---|---|"]
    goals = [g for o in outcomes for g in o.goals]
    for goal, target, reached, met in goals:
        lines.append(f"| {goal} | {target} | {reached} | {'yes' if met else 'n/a' if met is None else 'NO'} |")
    missing = {"bt": "plain BT vs evalica", "fit": "10k-record fit vs scipy", "bootstrap": "500-replicate bootstrap",
               "scaling": "10⁶-record fit"}
    for o in outcomes:
        if o.task in missing and not o.goals:
            lines.append(f"| {missing[o.task]} | – | {o.status}{': ' + o.message if o.message else ''} | n/a |")
    lines += ["", "## All comparisons (same run)", "",
              "ratio = alternative's time ÷ the package's (> 1: oscar_jax faster). Times are steady state "
              "(compiled) unless the row says otherwise; compilation is reported separately.", "",
              "| task | oscar_jax | time | alternative | time | ratio | objective, checks, notes |",
              "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        for r in o.rows:
            ratio = "–" if r.ratio is None else f"{r.ratio:.1f}×" if r.ratio >= 10 else f"{r.ratio:.2f}×"
            lines.append(f"| {r.task} | {r.package} | {_s(r.package_s)} | {r.alternative} | {_s(r.alternative_s)} | "
                         f"{ratio} | {r.note} |")
    lines += ["", "## Tasks", "", "| task | status | wall (s) | notes |", "|---|---|---|---|"]
    for o in outcomes:
        files = ", ".join(f"`{Path(f).name}`" for f in o.files)
        lines.append(f"| {o.task} | {o.status} | {o.wall_s:.0f} | {o.message}{' ' + files if files else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS),
                        help="comma-separated subset of: " + ", ".join(t.name for t in TASKS))
    parser.add_argument("--quick", action="store_true", help="tiny settings; outputs in --out-dir (temp by default)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="where the benchmarks write their own tables (default results/; --quick: a temp folder)")
    parser.add_argument("--out", type=Path, default=None, help="RESULTS.md path (default results/RESULTS.md; "
                        "with --quick: inside --out-dir)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    known = {t.name: t for t in TASKS}
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown task(s) {unknown}; choose from {sorted(known)}")
    out_dir = args.out_dir or (Path(tempfile.mkdtemp(prefix="oscar_bench_")) if args.quick else RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = args.out or ((out_dir if args.quick else RESULTS) / "RESULTS.md")

    import oscar_jax  # noqa: F401  (x64 on before any benchmark builds arrays)

    load_start = os.getloadavg()[0]
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.perf_counter()
    outcomes = [run_task(known[n], args.quick, out_dir) for n in names]
    text = markdown(outcomes, args.quick, started, time.perf_counter() - t0, load_start)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text, encoding="utf-8")
    print("\n" + text)
    print(f"written to {out_path}")
    return {"outcomes": outcomes, "path": out_path, "text": text}


if __name__ == "__main__":
    main()
