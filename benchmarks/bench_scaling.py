"""Scaling study: OSCAR fit time and peak memory from 10³ to 10⁶ records and up to 500 candidates.

Simulated data (Appendix G generator, ``simulate_jit``; one cell per record, N = judges ×
prompts, a continuous length covariate so no two records share a cell): by default 50
candidates and 20 judges for N = 10³ … 10⁶, then C = 10 … 500 candidates at N = 10⁵. The
design stays per record (indices + covariates), never a dense N × dim θ matrix, so an
iteration costs O(N · n_local²) with the cluster sums done by segment sums
(``derivatives.py``).

Each size runs in a fresh subprocess (peak RSS — Linux VmHWM — is a process-lifetime
maximum, and XLA memory is invisible to tracemalloc): simulate, compile
``core.fit_core_jit`` ahead of time (timed), run it once, then time the compiled fit
(median of repeats; two starts, B.3 checks) and the cluster sandwich. The scipy
L-BFGS-B baseline of the same objective runs in its own subprocess for N ≤ --scipy-max.

Writes ``benchmarks/results/scaling.md``, ``scaling.csv`` and ``scaling.png``.

Usage: python benchmarks/bench_scaling.py [--quick] [--records 1000,10000,...] [--candidates 10,100,...]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as in bench_bootstrap.py (tiny dense algebra)

import argparse  # noqa: E402
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
DEFAULT_RECORDS = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
DEFAULT_CANDIDATES = (10, 50, 100, 200, 500)
QUICK_RECORDS = (1_000, 4_000)
QUICK_CANDIDATES = (10,)


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


# ----------------------------------------------------------------------------- workers
def worker(spec_json: str) -> dict:
    """One size in this (fresh) process: returns timings, flags and memory."""
    job = json.loads(spec_json)
    sys.path.insert(0, str(ROOT))
    rss_start = _rss_mb()
    import jax
    import jax.numpy as jnp
    import numpy as np

    from oscar_jax.infer.starts import start_points
    from oscar_jax.infer.sandwich import covariances_jit
    from oscar_jax.model.params import Layout
    from oscar_jax.simulate import simulate_jit
    from oscar_jax.model.spec import parse_model

    c, k, n = job["n_cand"], job["n_judge"], job["n_records"]
    g = n // k
    params = sim_params(c, k, job["seed"])
    spec = parse_model(job["model"])
    layout = Layout(c, k, 0, 0, spec.structure())
    rss_import = _rss_mb()
    t0 = time.perf_counter()
    sim = jax.block_until_ready(simulate_jit(jax.random.PRNGKey(job["seed"]), g, params))
    out = {**job, "n_prompts": g, "n_theta": layout.n_theta, "simulate_s": time.perf_counter() - t0,
           "rss_start_mb": rss_start, "rss_import_mb": rss_import}

    if job["kind"] == "api":
        return _api_worker(job, out, params)
    if job["kind"] == "scipy":
        from benchmarks.baseline_scipy import ScipyFit

        arr = jax.tree_util.tree_map(np.asarray, sim.arrays)
        y = np.asarray(sim.y)
        out["rss_before_fit_mb"] = _rss_mb()
        t0, c0 = time.perf_counter(), time.process_time()
        prob = ScipyFit(arr.a, arr.b, arr.k, y, arr.z[:, 0], arr.z[:, 1], c, k, 0, terms=spec.terms,
                        learn_gamma=spec.learn_gamma, ridge=spec.ridge)
        res = prob.fit(starts=2, seed=job["seed"])
        out.update(fit_s=time.perf_counter() - t0, fit_cpu_s=time.process_time() - c0, objective=float(res.fun),
                   converged=bool(res.success),
                   n_iter=int(res.nit), peak_mb=_peak_mb())
        return out

    from oscar_jax.infer.fit_core import fit_core_jit

    starts = start_points(layout, 2, jax.random.PRNGKey(job["seed"] + 1))
    omega = jnp.ones(g)
    kw = dict(layout=layout, n_clusters=g, max_iter=100)
    dyn = dict(ridge=spec.ridge, v_bound=spec.v_bound)
    out["rss_before_fit_mb"] = _rss_mb()
    t0 = time.perf_counter()
    exe = fit_core_jit.lower(sim.arrays, omega, starts, **kw, **dyn).compile()
    out["compile_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    core = jax.block_until_ready(exe(sim.arrays, omega, starts, **dyn))
    out["first_run_s"] = time.perf_counter() - t0
    times, cpu = [], []
    for _ in range(job["repeats"]):
        t0, c0 = time.perf_counter(), time.process_time()
        core = jax.block_until_ready(exe(sim.arrays, omega, starts, **dyn))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out["fit_s"] = float(np.median(times))
    out["fit_min_s"] = float(np.min(times))
    # CPU seconds (all threads) are far less inflated than wall time when other jobs
    # share the cores; on a quiet 2-core machine wall ≈ CPU / (cores XLA kept busy).
    out["fit_cpu_s"] = float(np.median(cpu))
    out["peak_fit_mb"] = _peak_mb()
    if job.get("sandwich", True):
        args = (core.theta, core.mask, core.hess, core.info, sim.arrays, omega)
        ckw = dict(layout=layout, n_clusters=g, ridge=spec.ridge)
        t0 = time.perf_counter()
        jax.block_until_ready(covariances_jit(*args, **ckw))
        out["sandwich_first_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(covariances_jit(*args, **ckw))
        out["sandwich_s"] = time.perf_counter() - t0
    core = jax.tree_util.tree_map(np.asarray, core)
    flags = {"stationary": core.stationary, "identified": core.identified, "curvature": core.curvature_ok,
             "bounds": ~core.at_bound, "clusters (G > dim θ)": core.clusters_ok, "connected": core.connected}
    out["failed_checks"] = ", ".join(name for name, passed in flags.items() if not bool(passed))
    out.update(objective=float(core.objective), start_gap=float(np.ptp(core.start_objectives)),
               n_iter=int(core.n_iter), converged=bool(core.converged), ok=bool(core.ok),
               stationary=bool(core.stationary), grad_inf_per_n=float(core.grad_inf) / n,
               n_free=int(core.n_free), peak_mb=_peak_mb())
    return out


def _api_worker(job: dict, out: dict, params) -> dict:
    """What a user runs: ``oj.fit`` on a DataFrame with response lengths (design building included)."""
    import numpy as np

    import oscar_jax as oj
    from oscar_jax.model.problem import prepare
    from oscar_jax.simulate import family_map_of, simulate_frame

    t0 = time.perf_counter()
    frame = simulate_frame(seed=job["seed"], n_prompts=out["n_prompts"], params=params)
    fam = family_map_of(params)
    out["frame_s"] = time.perf_counter() - t0
    out["rss_before_fit_mb"] = _rss_mb()
    t0 = time.perf_counter()
    res = oj.fit(frame, job["model"], family_map=fam, warn=False)
    out["api_first_s"] = time.perf_counter() - t0
    times, cpu, prep = [], [], []
    for _ in range(job["repeats"]):
        t0, c0 = time.perf_counter(), time.process_time()
        res = oj.fit(frame, job["model"], family_map=fam, warn=False)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        t0 = time.perf_counter()
        prepare(frame, job["model"], family_map=fam)
        prep.append(time.perf_counter() - t0)
    core = res.core
    out.update(fit_s=float(np.median(times)), fit_cpu_s=float(np.median(cpu)), prepare_s=float(np.median(prep)),
               n_cells=res.design.n_cells, objective=float(core.objective), n_iter=int(core.n_iter),
               ok=bool(core.ok), peak_mb=_peak_mb())
    return out


def run_job(job: dict, timeout: float) -> dict:
    """Run one worker in a fresh interpreter (so its peak RSS is its own)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**job, "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("WORKER ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {**job, "error": f"exit {proc.returncode}: {tail[0][:200]}"}
    res = json.loads(lines[-1][len("WORKER "):])
    res["process_wall_s"] = wall
    return res


# ----------------------------------------------------------------------------- report
def _fmt(x, spec, missing="–"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return missing
    return format(x, spec)


def markdown(rows, args, machine: str) -> str:
    ours = [r for r in rows if r["kind"] == "oscar"]
    base = {(r["n_cand"], r["n_records"]): r for r in rows if r["kind"] == "scipy"}
    lines = [
        "# bench_scaling: OSCAR fit time and peak memory vs records and candidates",
        "",
        f"Machine: {machine}.",
        f"Model {args.model.upper()} on simulated data (Appendix G generator, judge 0 = reference, seed {args.seed}), "
        "one cell per record, two starts (zero and N(0, 0.08²)), λ = 0.05, solver tolerance ‖∇‖∞ ≤ 1e-12·N. "
        "Each row is a fresh process. `fit` = compiled `core.fit_core_jit` (median of repeats, B.3 checks "
        "included); `compile` = lower + XLA compile; `first` = the first execution after it; `with compile` = "
        "compile + first. `peak RSS` = the worker's lifetime maximum (VmHWM: Python + JAX + data + XLA buffers); "
        "`Δ RSS` = peak − RSS just before compiling the fit (the fit's own working memory, compilation "
        "included). scipy = L-BFGS-B baseline of the same objective on per-record arrays (two starts, one "
        "timing, its own process).",
        "",
        "| C | K | N records | dim θ | compile (s) | first (s) | fit (s) | fit CPU (s) | with compile (s) | "
        "sandwich (s) | Newton iters | objective | B.3 | peak RSS (MB) | Δ RSS (MB) | scipy (s) | scipy CPU (s) | "
        "scipy objective − ours | speed-up (wall) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in ours:
        key = (r["n_cand"], r["n_records"])
        if "error" in r:
            lines.append(f"| {r['n_cand']} | {r['n_judge']} | {r['n_records']:,} | – | {r['error']} |"
                         + " |" * 14)
            continue
        b = base.get(key, {})
        sp = b.get("fit_s")
        gap = b.get("objective", float("nan")) - r["objective"] if sp is not None else None
        speed = None if sp is None else sp / r["fit_s"]
        checks = "pass" if r["ok"] else f"FAIL: {r.get('failed_checks', '')}"
        lines.append(
            f"| {r['n_cand']} | {r['n_judge']} | {r['n_records']:,} | {r['n_theta']} | {r['compile_s']:.1f} | "
            f"{r['first_run_s']:.2f} | {r['fit_s']:.3f} | {_fmt(r.get('fit_cpu_s'), '.3f')} | "
            f"{r['compile_s'] + r['first_run_s']:.1f} | {_fmt(r.get('sandwich_s'), '.3f')} | {r['n_iter']} | "
            f"{r['objective']:.4f} | {checks} | {r['peak_mb']:.0f} | {r['peak_mb'] - r['rss_before_fit_mb']:.0f} | "
            f"{_fmt(sp, '.2f', 'not run')} | {_fmt(b.get('fit_cpu_s'), '.2f')} | {_fmt(gap, '.1e')} | "
            f"{_fmt(speed, '.2f' if speed is not None and speed < 10 else '.0f')}{'' if sp is None else '×'} |")
    api = [r for r in rows if r["kind"] == "api"]
    if api:
        lines += ["", "End to end: `oj.fit(frame, model, family_map=…)` on a DataFrame with response lengths "
                  "(`simulate_frame`; loading, design building, the compiled fit with two starts and B.3 checks; "
                  "median of repeats after a first call that compiles). `prepare` = loading + design building "
                  "alone. `Δ RSS` = peak − RSS with the frame built (before the first fit).", "",
                  "| C | K | N records | cells | first call (s) | oj.fit (s) | oj.fit CPU (s) | prepare (s) | "
                  "peak RSS (MB) | Δ RSS (MB) | scipy (s) | scipy ÷ oj.fit |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in api:
            if "error" in r:
                lines.append(f"| {r['n_cand']} | {r['n_judge']} | {r['n_records']:,} | {r['error']} |" + " |" * 8)
                continue
            sp = base.get((r["n_cand"], r["n_records"]), {}).get("fit_s")
            lines.append(
                f"| {r['n_cand']} | {r['n_judge']} | {r['n_records']:,} | {r['n_cells']:,} | {r['api_first_s']:.2f} | "
                f"{r['fit_s']:.3f} | {r['fit_cpu_s']:.3f} | {r['prepare_s']:.3f} | {r['peak_mb']:.0f} | "
                f"{r['peak_mb'] - r['rss_before_fit_mb']:.0f} | {_fmt(sp, '.2f', 'not run')} | "
                f"{_fmt(None if sp is None else sp / r['fit_s'], '.2f')} |")
    lines.append("")
    for r in ours:
        if "error" in r or r["n_records"] < 1_000_000:
            continue
        above = r["peak_mb"] - r["rss_import_mb"]
        if r["n_records"] < 10_000_000:  # issue 8: < 30 s; issue 16: ≤ 0.5 s, ≤ 300 MB above import
            goals = (f"issue 8 (< 30 s) {'met' if r['fit_s'] < 30 else 'NOT met'}; issue 16 (≤ 0.5 s, peak ≤ 300 MB "
                     f"above import) {'met' if r['fit_s'] <= 0.5 and above <= 300 else 'NOT met'}")
        else:  # issue 16: 10⁷ records in < 10 s within 8 GB
            goals = f"issue 16 (< 10 s within 8 GB) {'met' if r['fit_s'] < 10 and r['peak_mb'] <= 8192 else 'NOT met'}"
        lines.append(f"* {r['n_records']:,} records (C = {r['n_cand']}): fit {r['fit_s']:.2f} s compiled "
                     f"({r['fit_cpu_s']:.1f} CPU-s), {r['compile_s'] + r['first_run_s']:.1f} s including compilation, "
                     f"{r['n_iter']} Newton iterations, peak RSS {r['peak_mb']:.0f} MB ({above:.0f} MB above "
                     f"import) — {goals}.")
    errors = [r for r in rows if "error" in r]
    if errors:
        lines.append(f"{len(errors)} job(s) failed: " + "; ".join(
            f"{r['kind']} C={r['n_cand']} N={r['n_records']}: {r['error']}" for r in errors))
    lines += ["", "Plot: `scaling.png` (fit time and peak memory against N and against C)."]
    return "\n".join(lines) + "\n"


def plot(rows, path: Path, base_c: int, sweep_records: int) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if "error" not in r]
    if not ok:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for col, (xkey, label, sel) in enumerate((
            ("n_records", "records N", lambda r: r["n_cand"] == base_c),
            ("n_cand", "candidates C", lambda r: r["n_records"] == sweep_records))):
        for kind, style, color, name in (("oscar", "o-", "C0", "oscar_jax (compiled)"),
                                         ("scipy", "s--", "C2", "scipy L-BFGS-B")):
            pts = sorted(((r[xkey], r) for r in ok if r["kind"] == kind and sel(r)), key=lambda p: p[0])
            if not pts:
                continue
            xs = [p[0] for p in pts]
            axes[0, col].plot(xs, [p[1]["fit_s"] for p in pts], style, color=color, label=name)
            axes[1, col].plot(xs, [p[1]["peak_mb"] for p in pts], style, color=color, label=name)
            if kind == "oscar":
                axes[0, col].plot(xs, [p[1]["compile_s"] + p[1]["first_run_s"] for p in pts], "o:", color="C1",
                                  label="oscar_jax incl. compilation")
        for row in (0, 1):
            ax = axes[row, col]
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        axes[0, col].set_ylabel("fit time (s)")
        axes[1, col].set_ylabel("peak RSS (MB)")
    axes[0, 0].set_title(f"C = {base_c} candidates")
    axes[0, 1].set_title(f"N = {sweep_records:,} records")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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
    parser.add_argument("--records", type=_ints, default=None, help="comma-separated N (default 1e3 … 1e6)")
    parser.add_argument("--candidates", type=_ints, default=None, help="comma-separated C for the candidate sweep")
    parser.add_argument("--base-candidates", type=int, default=50)
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--sweep-records", type=int, default=100_000, help="N of the candidate sweep")
    parser.add_argument("--scipy-max", type=int, default=100_000, help="run the scipy baseline up to this N")
    parser.add_argument("--api-max", type=int, default=0,
                        help="also time oj.fit on a DataFrame (design building included) up to this N")
    parser.add_argument("--model", default="oscar")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=None, help="timed fits per size (default 5, 2 at N ≥ 3e5)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per-size subprocess limit (s)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.worker:
        print("WORKER " + json.dumps(worker(args.worker)), flush=True)
        return 0

    if args.quick:
        records = args.records or QUICK_RECORDS
        cands = args.candidates if args.candidates is not None else QUICK_CANDIDATES
        args.base_candidates, args.judges = min(args.base_candidates, 8), min(args.judges, 4)
        args.sweep_records = min(args.sweep_records, records[0])
        args.scipy_max = min(args.scipy_max, records[0])
    else:
        records = args.records or DEFAULT_RECORDS
        cands = args.candidates if args.candidates is not None else DEFAULT_CANDIDATES
    machine = machine_line()
    jobs = [(args.base_candidates, n) for n in records]
    jobs += [(c, args.sweep_records) for c in cands if (c, args.sweep_records) not in jobs]
    rows = []
    for c, n in jobs:
        n = (n // args.judges) * args.judges  # whole prompts: N = K · G
        reps = args.repeats or (2 if n >= 300_000 else 5)
        common = dict(n_cand=c, n_judge=args.judges, n_records=n, model=args.model, seed=args.seed)
        t0 = time.perf_counter()
        res = run_job({**common, "kind": "oscar", "repeats": reps}, args.timeout)
        rows.append(res)
        msg = res.get("error") or (f"fit {res['fit_s']:.3f} s, compile {res['compile_s']:.1f} s, "
                                   f"peak {res['peak_mb']:.0f} MB")
        print(f"[scaling] oscar C={c} N={n:,}: {msg} ({time.perf_counter() - t0:.0f} s)", flush=True)
        if n <= args.api_max:
            res = run_job({**common, "kind": "api", "repeats": min(reps, 3)}, args.timeout)
            rows.append(res)
            msg = res.get("error") or f"oj.fit {res['fit_s']:.2f} s (prepare {res['prepare_s']:.2f} s)"
            print(f"[scaling] api C={c} N={n:,}: {msg}", flush=True)
        if n <= args.scipy_max:
            res = run_job({**common, "kind": "scipy"}, args.timeout)
            rows.append(res)
            msg = res.get("error") or f"{res['fit_s']:.2f} s"
            print(f"[scaling] scipy C={c} N={n:,}: {msg}", flush=True)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    pd.DataFrame(rows).to_csv(args.out_dir / "scaling.csv", index=False)
    text = markdown(rows, args, machine)
    (args.out_dir / "scaling.md").write_text(text, encoding="utf-8")
    plot(rows, args.out_dir / "scaling.png", args.base_candidates, (args.sweep_records // args.judges) * args.judges)
    print(text)
    return {"rows": rows, "text": text}


if __name__ == "__main__":
    main()
