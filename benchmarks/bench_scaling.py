"""Scaling: the compiled OSCAR fit against the fair scipy baseline, 10⁴ … 10⁷ records, and its memory.

Simulated Arena-style data (Appendix G generator, ``simulate_jit``; C candidates, K = 20
judges, a continuous length, so no two records share a cell). Each size runs in a fresh
subprocess (peak RSS — Linux VmHWM — is a process-lifetime maximum, reset here before the
timed run):

* the package: ``fit`` with its default settings (what ``oj.fit(design)`` runs),
  compiled once, then timed;
* the fair baseline (``baseline_scipy.py``): scipy L-BFGS-B on the same cells (= records),
  analytic gradient, ridge 0.05, one zero start, stopped as soon as the B.3 stationarity
  test ‖∇‖∞ ≤ 1e-7·N holds (oscar_jax iterates to 1e-12·N); and the exact-Hessian
  trust-region variant (``trust-exact``) up to ``--trust-max`` records;
* interleaved: round r times the package, then each baseline; the best of the rounds is
  reported for each, CPU and wall, with the load average at the start and end.

Memory (``--memory``, default 10⁷ records with C = 100; a first process compiles into the
persistent cache, a second one, measured, loads the program as a user's next run would):
RSS after import, after the raw columns (a, b, k, prompt: int32; L, F, y: float64), after
the design's arrays, after the first call; the peak of the next run; bytes per record over
the raw columns = (peak − RSS with the raw columns) / N.

Writes ``benchmarks/results/scaling.md`` and ``scaling.csv``.

Usage: python benchmarks/bench_scaling.py [--quick] [--records 1e4,1e5,1e6] [--candidates 100,500]
       [--memory 1e7] [--repeats 5]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as in bench_bootstrap.py (tiny dense algebra)

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_RECORDS = (10_000, 100_000, 1_000_000)
DEFAULT_CANDIDATES = (10, 200)
QUICK_RECORDS = (2_000, 40_000)
GOAL_RATIO = 5.0  # issue 37: default fit ≥ 5× the fair baseline at 10⁵ and 10⁶
GOAL_BYTES = 100  # issue 37: ≤ 100 bytes per record over the raw columns at 10⁷
GOAL_IDENT = 0.5  # issue 37: identification ≤ 0.5× the fit's CPU at 10⁶ and 10⁷


def _rss_mb() -> float:
    """Current resident set size (MB), from /proc (Linux); NaN elsewhere."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return float("nan")


def _peak_mb() -> float:
    """Peak RSS of this process (MB).

    Linux: VmHWM, the high-water mark of this process' own address space. Not
    ``getrusage``: its ru_maxrss survives fork + exec, so a worker started from a big
    parent (run_all after other benchmarks: 1.1 GB) reports the parent's peak.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2 ** 20 if sys.platform == "darwin" else 2 ** 10)  # bytes on macOS, KiB on Linux


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def sim_params(n_cand: int, n_judge: int, seed: int = 0):
    """Generating parameters for C candidates and K judges (judge 0 = reference, γ = 1)."""
    import numpy as np

    from oscar_jax.simulate import SimParams

    rng = np.random.default_rng(seed)
    log_gamma = rng.normal(0.0, 0.25, n_judge)
    log_gamma[0] = 0.0
    return SimParams(
        s=tuple(np.linspace(-1.5, 1.5, n_cand).tolist()),
        log_gamma=tuple(log_gamma.tolist()),
        beta_pos=tuple(rng.uniform(-0.8, 0.8, n_judge).tolist()),
        beta_len=tuple(rng.uniform(0.2, 0.5, n_judge).tolist()),
        beta_fam=tuple(rng.uniform(-0.2, 0.2, n_judge).tolist()),
        judge_family=tuple(k % 3 for k in range(n_judge)),
    )


def raw_columns(n_cand: int, n_judge: int, n_records: int, seed: int):
    """The simulated records as the raw columns a user's file would give (numpy)."""
    import jax
    import numpy as np

    from oscar_jax.simulate import simulate_jit

    sim = simulate_jit(jax.random.PRNGKey(seed), n_records // n_judge, sim_params(n_cand, n_judge, seed))
    arr = sim.arrays
    cols = {"a": np.asarray(arr.a), "b": np.asarray(arr.b), "k": np.asarray(arr.k),
            "prompt": np.asarray(sim.prompt), "L": np.asarray(arr.z[:, 0]), "F": np.asarray(arr.z[:, 1]),
            "y": np.asarray(sim.y)}
    del sim, arr
    gc.collect()
    return cols


def design_of(cols: dict, n_cand: int, n_judge: int):
    """A Design of the raw columns, one cell per record (what ``build_design`` makes of them)."""
    import jax
    import numpy as np

    from oscar_jax.model.design import Design, with_groups
    from oscar_jax.simulate import record_arrays

    n = len(cols["y"])
    put = jax.device_put
    stats = np.column_stack([np.ones(n), cols["y"], np.zeros(n)])
    arrays = record_arrays(put(cols["a"]), put(cols["b"]), put(cols["k"]),
                           put(np.column_stack([cols["L"], cols["F"]])), put(stats), put(cols["prompt"]))
    arrays = with_groups(arrays, n_cand, n_judge)
    names = tuple(f"cand{i}" for i in range(n_cand))
    judges = tuple(f"judge{k}" for k in range(n_judge))
    return Design(arrays=arrays, candidates=names, judges=judges, prompts=tuple(range(int(cols["prompt"].max()) + 1)),
                  reference=0, covariates=(), has_length=True, length_scale=1.0,
                  candidate_family=names, judge_family=judges, n_records=n, record_cell=np.arange(n),
                  record_cluster=cols["prompt"], family_nonzero=True)


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


# ----------------------------------------------------------------------------- worker
def worker(job: dict) -> dict:
    """One size in this (fresh) process."""
    sys.path.insert(0, str(ROOT))
    out = dict(job, load_start=os.getloadavg()[0], rss_start_mb=_rss_mb())
    import numpy as np

    from benchmarks.baseline_scipy import CellObjective, fit_cells
    from oscar_jax.fit import fit
    from oscar_jax.model.problem import prepare

    c, k, n = job["n_cand"], job["n_judge"], job["n_records"]
    out["rss_import_mb"] = _rss_mb()
    cols = raw_columns(c, k, n, job["seed"])
    out["raw_mb"] = sum(v.nbytes for v in cols.values()) / 2 ** 20
    out["rss_raw_mb"] = _rss_mb()
    design, out["design_s"], _ = _timed(lambda: design_of(cols, c, k))
    out["rss_design_mb"] = _rss_mb()
    problem = prepare(design, job["model"])
    out.update(n_theta=problem.layout.n_theta, grouped=design.arrays.group_cell is not None,
               n_groups=int(design.arrays.group_cell.shape[0]) if design.arrays.group_cell is not None else None)
    res, out["first_s"], out["first_cpu_s"] = _timed(lambda: fit(problem, warn=False))
    gc.collect()
    out["rss_compiled_mb"] = _rss_mb()
    out["peak_reset"] = _reset_peak()
    res, _, _ = _timed(lambda: fit(problem, warn=False))
    out["peak_run_mb"] = _peak_mb()
    core = res.core
    out.update(objective=float(core.objective), n_iter=int(core.n_iter), ok=bool(core.ok),
               starts_run=len(res.checks()["start_objectives"]),
               grad_inf_per_n=float(core.grad_inf) / n, failed_checks="; ".join(res.failed_checks()))
    _identification(res, out)
    if job.get("memory_only"):
        _, out["fit_s"], out["fit_cpu_s"] = _timed(lambda: fit(problem, warn=False))
        out["load_end"] = os.getloadavg()[0]
        return out

    spec = problem.effective_spec
    arr = design.arrays
    z, st = np.asarray(arr.z), np.asarray(arr.stats)

    def scipy(method):
        obj = CellObjective(np.asarray(arr.a), np.asarray(arr.b), np.asarray(arr.k), z[:, 0], z[:, 1], st[:, 0],
                            st[:, 1], c, k, design.reference, terms=spec.terms, learn_gamma=spec.learn_gamma,
                            ridge=spec.ridge, v_bound=spec.v_bound)
        return obj, fit_cells(obj, method=method)

    methods = ["lbfgsb"] + (["trust-exact"] if n <= job["trust_max"] else [])
    best = {name: [math.inf, math.inf] for name in ["oscar_jax"] + methods}
    scipy_out = {}
    for _ in range(job["repeats"]):
        _, wall, cpu = _timed(lambda: fit(problem, warn=False))
        best["oscar_jax"] = [min(best["oscar_jax"][0], wall), min(best["oscar_jax"][1], cpu)]
        for m in methods:
            scipy_out[m], wall, cpu = _timed(lambda m=m: scipy(m))
            best[m] = [min(best[m][0], wall), min(best[m][1], cpu)]
    out["fit_s"], out["fit_cpu_s"] = best["oscar_jax"]
    s_ours = np.asarray(res.scores)
    for m in methods:
        obj, r = scipy_out[m]
        s_base = obj.unpack(r.x)[0]
        out[m] = {"wall_s": best[m][0], "cpu_s": best[m][1], "nit": int(r.nit), "nfev": int(getattr(r, "nfev", -1)),
                  "success": bool(r.success), "objective": float(r.fun),
                  "objective_minus_ours": float(r.fun) - out["objective"],
                  "max_abs_ds": float(np.max(np.abs(s_base - s_ours))),
                  "grad_inf_per_n": obj.projected_grad_inf(r.x) / n}
    out["load_end"] = os.getloadavg()[0]
    return out


def _identification(res, out: dict) -> None:
    """The identification check of ``res`` (what every ``oscar fit`` runs), compiled by a first
    call on a copy of the result, then timed with the peak reset before it: CPU, wall, and
    whether it raised the fit's peak."""
    import dataclasses

    from oscar_jax.infer.identification import identify

    ident, out["ident_first_s"], _ = _timed(lambda: identify(dataclasses.replace(res)))
    gc.collect()
    out["rss_ident_start_mb"] = _rss_mb()
    _reset_peak()
    best = [math.inf, math.inf]
    for _ in range(2):
        ident, wall, cpu = _timed(lambda: identify(res))
        best = [min(best[0], wall), min(best[1], cpu)]
    out["ident_s"], out["ident_cpu_s"] = best
    out["peak_ident_mb"] = _peak_mb()
    out["ident_method"], out["ident_separated"] = ident.method, bool(ident.separated)


def run_job(job: dict, timeout: float) -> dict:
    """Run one worker in a fresh interpreter (so its peak RSS is its own)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**job, "error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("WORKER ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {**job, "error": f"exit {proc.returncode}: {tail[0][:200]}"}
    res = json.loads(lines[-1][len("WORKER "):])
    res["process_wall_s"] = time.perf_counter() - t0
    return res


# ----------------------------------------------------------------------------- report
def _fmt(x, spec, missing="–"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    return format(x, spec)


def _ratio(base: dict | None, ours: float, key: str):
    return None if not base else base[key] / ours


def markdown(rows, args, machine: str) -> str:
    lines = [
        "# bench_scaling: the compiled OSCAR fit against the fair scipy baseline, and its memory",
        "",
        f"Machine: {machine}.",
        f"Model {args.model.upper()} on simulated Arena-style data (Appendix G generator, K = {args.judges} judges, "
        "judge 0 the reference, a continuous length: one cell per record). `oscar_jax` = `fit(problem)` "
        "with its default settings (the zero start; the N(0, 0.08²) start only when the first does not settle, on "
        "a grouped design), B.3 checks included, compiled (first call timed apart). Baselines "
        "(`benchmarks/baseline_scipy.py`): scipy on the same cells, the same objective (ridge 0.05, B.2 column "
        "selection), one zero start, stopped as soon as ‖∇‖∞ ≤ 1e-7·N (B.3) — L-BFGS-B with the analytic gradient "
        "(`ftol` 0), and `trust-exact` with the exact Hessian. Interleaved rounds; best of "
        f"{args.repeats} for each; CPU = process CPU seconds (all threads), wall = elapsed.",
        "",
        "| C | N records | groups | dim θ | oscar_jax CPU ms | wall ms | L-BFGS-B CPU ms | wall ms | iters | "
        "trust-exact CPU ms | wall ms | iters | CPU ratio (best baseline ÷ ours) | wall ratio | first call s | "
        "Newton evals | starts run | B.3 | scipy − ours objective | max abs Δs | load start → end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("memory_only"):
            continue
        if "error" in r:
            lines.append(f"| {r['n_cand']} | {r['n_records']:,} | {r['error']} |" + " |" * 18)
            continue
        lb, te = r.get("lbfgsb"), r.get("trust-exact")
        bases = [b for b in (lb, te) if b]
        cpu_best = min(b["cpu_s"] for b in bases) if bases else None
        wall_best = min(b["wall_s"] for b in bases) if bases else None
        gap = min((b["objective_minus_ours"] for b in bases), default=None)
        ds = max((b["max_abs_ds"] for b in bases), default=None)
        lines.append(
            f"| {r['n_cand']} | {r['n_records']:,} | {_fmt(r.get('n_groups'), ',', 'cells')} | {r['n_theta']} | "
            f"{1e3 * r['fit_cpu_s']:.1f} | {1e3 * r['fit_s']:.1f} | "
            f"{_fmt(lb and 1e3 * lb['cpu_s'], '.1f')} | {_fmt(lb and 1e3 * lb['wall_s'], '.1f')} | "
            f"{_fmt(lb and lb['nit'], 'd')} | {_fmt(te and 1e3 * te['cpu_s'], '.1f')} | "
            f"{_fmt(te and 1e3 * te['wall_s'], '.1f')} | {_fmt(te and te['nit'], 'd')} | "
            f"{_fmt(cpu_best and cpu_best / r['fit_cpu_s'], '.1f')}× | {_fmt(wall_best and wall_best / r['fit_s'], '.1f')}× | "
            f"{r['first_s']:.1f} | {r['n_iter']} | {r['starts_run']} | {'pass' if r['ok'] else 'FAIL'} | "
            f"{_fmt(gap, '.1e')} | {_fmt(ds, '.1e')} | {r['load_start']:.1f} → {r['load_end']:.1f} |")
    lines += ["", "Memory (fresh process per size; MB): RSS after import, with the raw columns, with the design, "
              "after compiling; the timed run's peak (VmHWM reset before it); bytes per record over the raw "
              "columns = (peak − RSS with the raw columns) / N; over the design = (peak − RSS with the design) / N.",
              "", "| C | N records | import | raw columns (bytes) | with raw | with design | compiled | run peak | "
              "B/record over raw | B/record over design | fit CPU s | fit wall s | identification CPU s | wall s | "
              "÷ fit CPU | RSS before identification | identification peak | verdict |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            continue
        over_raw = (r["peak_run_mb"] - r["rss_raw_mb"]) * 2 ** 20 / r["n_records"]
        over_design = (r["peak_run_mb"] - r["rss_design_mb"]) * 2 ** 20 / r["n_records"]
        r["bytes_over_raw"], r["bytes_over_design"] = over_raw, over_design
        lines.append(f"| {r['n_cand']} | {r['n_records']:,} | {r['rss_import_mb']:.0f} | {r['raw_mb']:.0f} | "
                     f"{r['rss_raw_mb']:.0f} | {r['rss_design_mb']:.0f} | {r['rss_compiled_mb']:.0f} | "
                     f"{r['peak_run_mb']:.0f} | {over_raw:.0f} | {over_design:.0f} | {r['fit_cpu_s']:.2f} | "
                     f"{r['fit_s']:.2f} | {r['ident_cpu_s']:.2f} | {r['ident_s']:.2f} | "
                     f"{r['ident_cpu_s'] / r['fit_cpu_s']:.2f} | {r['rss_ident_start_mb']:.0f} | {r['peak_ident_mb']:.0f} | "
                     f"{r['ident_method']}"
                     f"{', separated' if r['ident_separated'] else ''} |")
    lines += ["", "Goals (issue 37):"]
    for n in (100_000, 1_000_000):
        hit = [r for r in rows if r["n_records"] == n and "error" not in r and not r.get("memory_only")
               and (r.get("lbfgsb") or r.get("trust-exact"))]
        for r in hit:
            cpu = min(b["cpu_s"] for b in (r.get("lbfgsb"), r.get("trust-exact")) if b) / r["fit_cpu_s"]
            wall = min(b["wall_s"] for b in (r.get("lbfgsb"), r.get("trust-exact")) if b) / r["fit_s"]
            lines.append(f"* {n:,} records (C = {r['n_cand']}): default fit {cpu:.1f}× (CPU), {wall:.1f}× (wall) the "
                         f"best fair baseline — goal ≥ {GOAL_RATIO:.0f}× {'met' if min(cpu, wall) >= GOAL_RATIO else 'NOT met'}.")
    for r in rows:
        if r["n_records"] >= 1_000_000 and "error" not in r:
            ratio = r["ident_cpu_s"] / r["fit_cpu_s"]
            raised = r["peak_ident_mb"] > r["peak_run_mb"]
            lines.append(f"* {r['n_records']:,} records (C = {r['n_cand']}): identification {r['ident_cpu_s']:.2f} CPU-s = "
                         f"{ratio:.2f}× the fit's, peak {r['peak_ident_mb']:.0f} MB against the fit's "
                         f"{r['peak_run_mb']:.0f} MB — goal ≤ {GOAL_IDENT}× without raising the peak "
                         f"{'met' if ratio <= GOAL_IDENT and not raised else 'NOT met'}.")
    for r in rows:
        if r.get("memory_only") and "error" not in r:
            met = r["bytes_over_raw"] <= GOAL_BYTES
            lines.append(f"* {r['n_records']:,} records (C = {r['n_cand']}): {r['bytes_over_raw']:.0f} bytes per record "
                         f"over the raw columns — goal ≤ {GOAL_BYTES} {'met' if met else 'NOT met'}; fit "
                         f"{r['fit_cpu_s']:.1f} CPU-s, {r['fit_s']:.1f} s wall.")
    errors = [r for r in rows if "error" in r]
    if errors:
        lines.append(f"{len(errors)} job(s) failed: " + "; ".join(f"C={r['n_cand']} N={r['n_records']}: {r['error']}"
                                                               for r in errors))
    return "\n".join(lines) + "\n"


def machine_line() -> str:
    import jax

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at start; python {platform.python_version()}, jax {jax.__version__} "
            f"({jax.default_backend()}); OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
            f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '') or 'default'}")


def _ints(text: str):
    return tuple(int(float(x)) for x in text.split(",") if x.strip())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--records", type=_ints, default=None, help="comma-separated N (default 1e4,1e5,1e6)")
    parser.add_argument("--candidates", type=_ints, default=None,
                        help="C for extra rows at --sweep-records (default 10,200; '' for none)")
    parser.add_argument("--base-candidates", type=int, default=50)
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--sweep-records", type=int, default=100_000)
    parser.add_argument("--memory", type=_ints, default=None, help="N of the memory rows (default 1e7; '' for none)")
    parser.add_argument("--memory-candidates", type=int, default=100)
    parser.add_argument("--trust-max", type=int, default=1_000_000, help="run trust-exact up to this N")
    parser.add_argument("--model", default="oscar")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 5, 3 at N ≥ 1e6)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per-size subprocess limit (s)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.worker:
        print("WORKER " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0
    if args.quick:
        records = args.records or QUICK_RECORDS
        cands = args.candidates if args.candidates is not None else ()
        memory = args.memory if args.memory is not None else ()
        args.base_candidates, args.judges = min(args.base_candidates, 8), min(args.judges, 4)
        args.repeats = args.repeats or 1
    else:
        records = args.records or DEFAULT_RECORDS
        cands = args.candidates if args.candidates is not None else DEFAULT_CANDIDATES
        memory = args.memory if args.memory is not None else (10_000_000,)
    machine = machine_line()
    jobs = [dict(n_cand=args.base_candidates, n_records=n) for n in records]
    jobs += [dict(n_cand=c, n_records=args.sweep_records) for c in cands if c != args.base_candidates]
    jobs += [dict(n_cand=args.memory_candidates, n_records=n, memory_only=True) for n in memory]
    rows = []
    for job in jobs:
        n = (job["n_records"] // args.judges) * args.judges  # whole prompts: N = K · G
        reps = args.repeats or (3 if n >= 1_000_000 else 5)
        job.update(n_records=n, n_judge=args.judges, model=args.model, seed=args.seed, repeats=reps,
                   trust_max=args.trust_max)
        t0 = time.perf_counter()
        if job.get("memory_only"):  # a first process compiles (persistent cache): the measured one loads
            warm = run_job(job, args.timeout)
        res = run_job(job, args.timeout)
        if job.get("memory_only"):
            res["first_process_first_s"] = warm.get("first_s")
        rows.append(res)
        msg = res.get("error") or (f"ours {1e3 * res['fit_cpu_s']:.1f} CPU-ms, peak {res['peak_run_mb']:.0f} MB"
                                   + (f", L-BFGS-B {1e3 * res['lbfgsb']['cpu_s']:.1f} CPU-ms" if "lbfgsb" in res
                                      else ""))
        print(f"[scaling] C={job['n_cand']} N={n:,}: {msg} ({time.perf_counter() - t0:.0f} s)", flush=True)
    text = markdown(rows, args, machine)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    pd.json_normalize(rows).to_csv(args.out_dir / "scaling.csv", index=False)
    (args.out_dir / "scaling.md").write_text(text, encoding="utf-8")
    print(text)
    return {"rows": rows, "text": text}


if __name__ == "__main__":
    main()
