"""Benchmark: the whole Section 7 study (main setting + Table G2 controls) in one run.

JAX: :func:`oscar_jax.sweep.sweep` — one compiled, vmapped batch per (shape, method)
that fits, computes both covariances, the delta-method intervals and every metric.
Baseline: a per-replicate Python loop over ``benchmarks/baseline_scipy.py`` (L-BFGS-B on
the same objective, zero start as in B.3, fit only: no sandwich, no metrics) on a subset
of replicates per (N, method), extrapolated to the full study.

Writes ``benchmarks/results/simulation.md`` (timings and the comparison with the paper),
``simulation_summary.csv``, ``simulation_per_replicate.csv``, ``simulation_timings.csv``
and the Figure 3/4 PNGs. ``--quick`` runs a tiny smoke version.

    python benchmarks/bench_simulation.py            # full: 4 N × 100 × 5 methods + controls
    python benchmarks/bench_simulation.py --quick --out /tmp/bench
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pandas as pd

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.baseline_scipy import ScipyFit  # noqa: E402
from oscar_jax.simulate import TABLE_G1, simulate_jit  # noqa: E402
from oscar_jax.model.spec import parse_model  # noqa: E402
from oscar_jax.sweep import (  # noqa: E402
    DEFAULT_METHODS,
    DEFAULT_NS,
    TABLE_G2_CONTROLS,
    Setting,
    compare_with_paper,
    replicate_keys,
    sweep,
)

RESULTS = Path(__file__).resolve().parent / "results"
CONTROL_METHODS = ("j", "oscar")  # what Table G2 reports


def study(ns, control_n, methods):
    main = [Setting(n, 1.0, 0.6) for n in ns]
    controls = [Setting(control_n, c, r) for c, r in TABLE_G2_CONTROLS]
    restrict = {m: main + (controls if m in CONTROL_METHODS else []) for m in methods}
    return main + controls, restrict


def scipy_baseline(settings, restrict, methods, seed, per_cell, reps, jax_rep):
    """Time ScipyFit on ``per_cell`` replicates of each (N, method); extrapolate to ``reps``.

    Controls have the shapes of the main setting at their N, so their per-fit time is
    taken from that N. Returns per-(N, method) rows and the extrapolated (wall, CPU)
    seconds of the whole study. CPU time is reported too because the cores are shared:
    the baseline is single-threaded, so its CPU time is what it would take alone.
    """
    rows = []
    ns = sorted({s.n for s in settings})
    for n in ns:
        g = n // TABLE_G1.n_judge
        keys = replicate_keys(seed, n, 0, per_cell)
        for method in methods:
            spec = parse_model(method)
            walls, cpus, gaps = [], [], []
            for r in range(per_cell):  # the baseline's way: one replicate at a time
                data = jax.tree_util.tree_map(np.asarray, simulate_jit(keys[r], g, TABLE_G1))
                arr = data.arrays
                t0, c0 = time.perf_counter(), time.process_time()
                prob = ScipyFit(arr.a, arr.b, arr.k, data.y, arr.z[:, 0], arr.z[:, 1], TABLE_G1.n_cand,
                                TABLE_G1.n_judge, 0, terms=spec.terms, learn_gamma=spec.learn_gamma)
                res = prob.fit(starts=1)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
                ours = jax_rep[(jax_rep.n == n) & (jax_rep.c == 1.0) & (jax_rep.rho == 0.6)
                               & (jax_rep.method == spec.name) & (jax_rep.rep == r)].objective
                if len(ours):
                    gaps.append(float(res.fun - ours.iloc[0]))
            rows.append({"n": n, "method": spec.name, "fits_timed": per_cell, "s_per_fit": float(np.mean(walls)),
                         "cpu_s_per_fit": float(np.mean(cpus)),
                         "objective_gap_max": float(np.max(gaps)) if gaps else float("nan")})
    per_fit = pd.DataFrame(rows).set_index(["n", "method"])
    wall = cpu = 0.0
    for s in settings:
        for method in methods:
            if s in restrict[method]:
                row = per_fit.loc[(s.n, parse_model(method).name)]
                wall += reps * row.s_per_fit
                cpu += reps * row.cpu_s_per_fit
    return per_fit.reset_index(), wall, cpu


def profile(out: Path, n: int = 10000, batch: int = 10) -> str:
    """Where the time of one (setting, method) batch goes: generation, fit, sandwich, rest.

    Each stage is its own jitted, vmapped program over the same ``batch`` replicates;
    compile and steady-state times are separate (best of 3, after block_until_ready).
    """
    from functools import partial

    import jax.numpy as jnp

    from oscar_jax.sweep import programs as sw
    from oscar_jax.infer.fit_core import fit_core
    from oscar_jax.infer.sandwich import covariances
    from oscar_jax.simulate import truth_of

    g = n // TABLE_G1.n_judge
    truth = truth_of(TABLE_G1)
    omega = jnp.ones(g)
    keys = replicate_keys(0, n, 0, batch)
    rows = []

    def stage(method, name, fn, *args):
        c0, w0 = time.process_time(), time.perf_counter()
        exe = jax.jit(fn).lower(*args).compile()
        comp_cpu, comp_wall = time.process_time() - c0, time.perf_counter() - w0
        out_ = jax.block_until_ready(exe(*args))
        best_w = best_c = float("inf")
        for _ in range(3):
            c0, w0 = time.process_time(), time.perf_counter()
            out_ = jax.block_until_ready(exe(*args))
            best_w, best_c = min(best_w, time.perf_counter() - w0), min(best_c, time.process_time() - c0)
        rows.append({"method": method, "stage": name, "compile_cpu_s": comp_cpu, "compile_wall_s": comp_wall,
                     "ms_per_fit_wall": 1e3 * best_w / batch, "ms_per_fit_cpu": 1e3 * best_c / batch})
        return out_

    data = stage("–", "simulate (vmapped generator)",
                 partial(sw.simulate_batch, controls=(TABLE_G1.c, TABLE_G1.rho), n_prompts=g, n_prompts_pad=g,
                         params=TABLE_G1), keys)
    for method in ("j", "oscar"):
        spec = parse_model(method)
        lay = TABLE_G1.layout(spec)
        start = jnp.zeros((1, lay.n_theta))
        fit = stage(spec.name, "fit_core (B.2 + solver + B.3 checks)",
                    jax.vmap(lambda a: fit_core(a, omega, start, layout=lay, n_clusters=g)), data)
        stage(spec.name, "sandwich.covariances (cluster + model)",
              jax.vmap(lambda f, a: covariances(f.theta, f.mask, f.hess, f.info, a, omega, layout=lay,
                                                n_clusters=g, ridge=0.05)), fit, data)
        stage(spec.name, "whole evaluate (fit + covariances + delta SEs + metrics)",
              partial(sw.evaluate_batch, layout=lay, n_clusters=g, max_iter=100), data, omega,
              truth.s, truth.kappa, truth.q, jnp.float64(0.05), jnp.float64(15.0), jnp.float64(1e-10))
    frame = pd.DataFrame(rows)
    text = "\n".join([
        f"# Simulation profile: N = {n}, batch of {batch} replicates",
        "",
        f"1-min load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared).",
        "",
        markdown_table(frame, ["method", "stage", "compile_cpu_s", "compile_wall_s", "ms_per_fit_wall",
                               "ms_per_fit_cpu"], ["", "", ".1f", ".1f", ".1f", ".1f"]),
        "",
    ])
    (out / "simulation_profile.md").write_text(text, encoding="utf-8")
    return text


def markdown_table(frame, columns, formats):
    head = "| " + " | ".join(columns) + " |"
    sep = "|" + "---|" * len(columns)
    lines = [head, sep]
    for row in frame.itertuples(index=False):
        cells = []
        for col, fmt in zip(columns, formats):
            v = getattr(row, col)
            cells.append(format(v, fmt) if fmt and isinstance(v, (int, float, np.number)) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scipy-reps", type=int, default=2, help="baseline fits timed per (N, method)")
    parser.add_argument("--pad-ratio", type=float, default=2.5)
    parser.add_argument("--no-compile-ahead", action="store_true")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (N = 250, 500; 3 replicates)")
    parser.add_argument("--profile", action="store_true",
                        help="only time the stages of one batch (N = 10000) and write simulation_profile.md")
    parser.add_argument("--compilation-cache", default=None, metavar="DIR",
                        help="persistent XLA cache (a second run then skips compilation)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.compilation_cache:
        jax.config.update("jax_compilation_cache_dir", args.compilation_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if args.profile:
        print(profile(out, n=500 if args.quick else 10000, batch=3 if args.quick else 10))
        return 0

    ns, control_n, reps = (DEFAULT_NS, 2500, args.reps)
    if args.quick:
        ns, control_n, reps = ((250, 500), 500, 3)
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    settings, restrict = study(ns, control_n, methods)

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = sweep(reps=reps, methods=methods, seed=args.seed, settings=settings, method_settings=restrict,
                pad_ratio=args.pad_ratio, compile_ahead=not args.no_compile_ahead)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    rep = res.per_replicate()
    fits = len(rep)
    tim = res.timings
    compile_s = tim.compile_s.sum() + tim.drop_duplicates(["n", "c", "rho"]).simulate_compile_s.sum()

    load1 = os.getloadavg()[0]
    base_rows, base_wall, base_cpu = scipy_baseline(settings, restrict, methods, args.seed, args.scipy_reps, reps, rep)

    res.table().to_csv(out / "simulation_summary.csv", index=False)
    rep.to_csv(out / "simulation_per_replicate.csv", index=False)
    tim.to_csv(out / "simulation_timings.csv", index=False)
    res.plot(out)
    published = json.loads((Path(__file__).resolve().parent.parent / "paper_repro" / "published.json").read_text())
    paper = compare_with_paper(res, published["section7"]["rows"])

    per_method = tim.groupby("method", sort=False).agg(fits=("fits", "sum"), compile_s=("compile_s", "sum"),
                                                         run_s=("run_s", "sum")).reset_index()
    per_method["fits_per_s"] = per_method.fits / per_method.run_s
    lines = [
        "# Simulation benchmark (Section 7 study)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, "
        f"JAX {jax.__version__} on {jax.default_backend()}; 1-min load average {load0:.1f} at the start and "
        f"{load1:.1f} at the end of the sweep (other jobs share the cores, so wall times are upper bounds; "
        "process CPU time is what the run itself used).",
        f"Study: N ∈ {list(ns)} × {reps} replicates × {len(methods)} methods (c = 1, ρ = 0.6), plus the "
        f"Table G2 controls at N = {control_n} with J and OSCAR: **{fits} fits**, each with both "
        "covariances, delta-method intervals and all metrics. pad_ratio = "
        f"{args.pad_ratio:g}, compile ahead = {not args.no_compile_ahead}.",
        "",
        "| | wall s | CPU s | fits/s (wall) |",
        "|---|---|---|---|",
        f"| oscar_jax sweep, whole study (compilation {compile_s:.0f} s wall of it, in a background thread) | "
        f"{wall:.1f} | {cpu:.1f} | {fits / wall:.1f} |",
        f"| scipy L-BFGS-B loop, extrapolated from {args.scipy_reps} fits per (N, method), fit only | "
        f"{base_wall:.1f} | {base_cpu:.1f} | {fits / base_wall:.2f} |",
        "",
        f"Speed-up of the whole study: {base_wall / wall:.1f}× in wall time, {base_cpu / cpu:.1f}× in CPU time "
        "(the sweep also computes both sandwiches, intervals and metrics; the baseline only fits).",
        "",
        "Per method (run = execution after compilation, summed over its chunk calls, which ran side by side "
        "on host threads: the runs overlap, so they add up to more than the wall time):",
        "",
        markdown_table(per_method, ["method", "fits", "compile_s", "run_s", "fits_per_s"], ["", "d", ".1f", ".1f", ".1f"]),
        "",
        "Baseline per fit (objective_gap = scipy objective − ours on the same replicate; > 0: scipy stopped higher):",
        "",
        markdown_table(base_rows, ["n", "method", "fits_timed", "s_per_fit", "cpu_s_per_fit", "objective_gap_max"],
                       ["d", "", "d", ".3f", ".3f", ".2e"]),
        "",
        "Failed B.3 checks (replicates left out of the aggregates):",
        "",
        markdown_table(res.failures()[["n", "c", "rho", "method", "n_failed", "failed_stationary", "failed_identified",
                                       "failed_curvature_ok", "failed_at_bound", "failed_clusters_ok",
                                       "failed_connected"]],
                       ["n", "c", "rho", "method", "n_failed", "failed_stationary", "failed_identified",
                        "failed_curvature_ok", "failed_at_bound", "failed_clusters_ok", "failed_connected"],
                       ["d", "g", "g", "", "d", "d", "d", "d", "d", "d", "d"]),
        "",
        "## Ours against the paper",
        "",
        "z = (ours − paper)/SE of the difference of two Monte Carlo studies: our MC SE × √(1 + reps/100) "
        "(the paper ran 100 replicates); top-1 as a rate per 100 with both studies' binomial SEs "
        "(`oscar_jax.sweep.compare_with_paper`).",
        "",
        markdown_table(paper, ["quantity", "method", "ours", "mcse", "paper", "z", "consistent"],
                       ["", "", "", "", "", "+.2f", ""]) if len(paper) else "(no comparable settings run)",
        "",
        "## Summary (mean (MC SE); coverage in %)",
        "",
        res.to_markdown(),
        "",
    ]
    (out / "simulation.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
