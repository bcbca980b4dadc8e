"""Issues 36 and 37's unmet goals against the floors under them, measured in one run.

Part 1 (issue 37: the compiled fit, default settings, ≥ 5× the fair scipy fit): the fit is
a number of evaluations of (f, ∇f, ∇²f) over the records plus the rest (B.2's selection,
the starts, the Newton solves, the information, the checks). Every evaluation costs at
least what a low-precision one costs at θ̂ (the early steps run in float32, the last two
in float64), so evaluations × that cost is a floor under the fit; it is set against the
budget the goal leaves (the scipy fit's CPU ÷ 5), both timed here, best of N interleaved.

Part 2 (issue 36: whole processes, interleaved rounds, CPU of each finished child from
the operating system, wall from outside; every child with ``OPENBLAS_NUM_THREADS=1``, as
``bench_cli.py`` gives them): the commands of the unmet goals beside their baselines and
beside the imports each command cannot avoid — a process that runs a JAX program imports
numpy and JAX; one that reads a file with pandas imports numpy and pandas — and the
loading of the small sweep's stored executables (in a fresh process). A floor above the
goal's budget means no change to what this package does after its imports can meet it.

    python benchmarks/studies/floors.py                      # writes benchmarks/results/floors.md
    python benchmarks/studies/floors.py --records 100000 --rounds 3 --out /tmp/floors.md
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy and scipy load it, as in bench_scaling.py

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
FIT_GOAL, WARM_FIT_GOAL, SWEEP_GOAL, BAD_LABEL_S = 5.0, 1.5, 0.5, 0.3
SWEEP_ARGS = ["--n", "1000,2500", "--reps", "20", "--methods", "j,oscar"]


def _best_cpu_ms(fns: dict, repeats: int) -> dict:
    """Best CPU milliseconds of each callable, the callables interleaved round by round."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            c0 = time.process_time()
            fn()
            best[name] = min(best[name], 1e3 * (time.process_time() - c0))
    return best


def fit_floor(n_records: int, n_cand: int = 50, n_judge: int = 20, seed: int = 0, repeats: int = 10) -> dict:
    """Part 1 at ``n_records`` records (continuous lengths: one cell per record, grouped by (a, b, k))."""
    import jax
    import numpy as np

    from benchmarks.baseline_scipy import CellObjective, fit_cells
    from benchmarks.bench_scaling import design_of, raw_columns
    from oscar_jax.fit import fit
    from oscar_jax.infer.derivatives import grouped_cells
    from oscar_jax.infer.fit_core import penalized_vgh
    from oscar_jax.model.problem import prepare

    design = design_of(raw_columns(n_cand, n_judge, n_records, seed), n_cand, n_judge)
    problem = prepare(design, "oscar")
    arr, layout, spec = design.arrays, problem.layout, problem.effective_spec
    res = fit(problem, warn=False)
    theta = jax.numpy.asarray(res.core.theta)
    cells = grouped_cells(arr, arr.stats)
    low, full = (jax.jit(penalized_vgh(arr, cells, layout, spec.ridge, low=flag)) for flag in (True, False))
    z, st = np.asarray(arr.z), np.asarray(arr.stats)
    obj = CellObjective(np.asarray(arr.a), np.asarray(arr.b), np.asarray(arr.k), z[:, 0], z[:, 1], st[:, 0], st[:, 1],
                        n_cand, n_judge, design.reference, terms=spec.terms, learn_gamma=spec.learn_gamma,
                        ridge=spec.ridge, v_bound=spec.v_bound)
    fns = {"fit": lambda: fit(problem, warn=False).core.theta,
           "scipy": lambda: fit_cells(obj, method="lbfgsb"),
           "low": lambda: jax.block_until_ready(low(theta)),
           "full": lambda: jax.block_until_ready(full(theta))}
    for fn in fns.values():
        fn()  # compiled (and, for scipy, its arrays touched) before any timing
    best = _best_cpu_ms(fns, repeats)
    evaluations = int(res.core.n_iter)  # of the start kept; a second start runs only when the first did not settle
    starts_run = int(np.sum(np.isfinite(np.asarray(res.core.start_objectives))))
    return {"n": n_records, "grouped": arr.group_cell is not None, "evaluations": evaluations,
            "starts_run": starts_run, "fit_ms": best["fit"], "scipy_ms": best["scipy"], "low_ms": best["low"],
            "full_ms": best["full"]}


def _children_env(cache: Path) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OSCAR_JAX_CACHE_DIR=str(cache))
    for var in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(argv, env) -> tuple[float, float, int]:
    """(CPU s, wall s, exit status) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - t0, os.waitstatus_to_exitcode(status)


def _sweep_work(cache: Path, env: dict) -> dict:
    """In a fresh process with the numeric stack imported: CPU seconds to load every stored
    executable in ``cache``, and of the whole small sweep's call (loads, generating, fitting,
    tables) on that warm cache."""
    code = ("import time, pathlib, sys\n"
            "import numpy, pandas, jax\n"
            "from oscar_jax.runtime import executables as ex\n"
            "from oscar_jax.sweep import sweep\n"
            "jax.devices(); ex._initialize_lapack()\n"
            "c = time.process_time()\n"
            "loaded = [ex.load_executable(p) for p in sorted(pathlib.Path(sys.argv[1]).glob('compiled/*.xla'))]\n"
            "assert loaded and all(x is not None for x in loaded)\n"
            "loads = time.process_time() - c\n"
            "c = time.process_time()\n"
            "sweep(ns=[1000, 2500], reps=20, methods=['j', 'oscar'], show_progress=False)\n"
            "print(len(loaded), loads, time.process_time() - c)\n")
    out = subprocess.run([sys.executable, "-c", code, str(cache)], env=env, capture_output=True, text=True, check=True,
                         cwd=ROOT)
    n, loads, call = out.stdout.split()[-3:]
    return {"sweep_programs": int(n), "loads_s": float(loads), "sweep_call_s": float(call)}


def processes(data: Path, rounds: int) -> dict:
    """Part 2: every command once per round, interleaved; best and median CPU and wall."""
    py = sys.executable
    oscar = shutil.which("oscar", path=str(Path(sys.executable).parent)) or "oscar"
    out = {"load_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bad = tmp / "label.csv"
        bad.write_text("model_a,model_b,winner\na,b,draw\n", encoding="utf-8")
        warm_env = _children_env(tmp / "cache")
        sweep_env = _children_env(tmp / "sweep-cache")  # the sweep's executables alone, to time their loading
        cmds = {
            "python -c pass": ([py, "-c", "pass"], warm_env),
            "import numpy, pandas": ([py, "-c", "import numpy, pandas"], warm_env),
            "import numpy, jax": ([py, "-c", "import numpy, jax"], warm_env),
            "import numpy, pandas, jax": ([py, "-c", "import numpy, pandas, jax"], warm_env),
            "scipy script, same model": ([py, str(ROOT / "benchmarks" / "scipy_script.py"), str(data)], warm_env),
            "warm oscar fit --model oscar": ([oscar, "fit", str(data), "--model", "oscar", "--format", "json"], warm_env),
            "oscar fit, a bad label (exit 2)": ([oscar, "fit", str(bad)], warm_env),
            "scipy sweep": ([py, str(ROOT / "benchmarks" / "scipy_sweep.py"), *SWEEP_ARGS], warm_env),
            "warm oscar simulate": ([oscar, "simulate", *SWEEP_ARGS], sweep_env),
            "cold oscar simulate": ([oscar, "simulate", *SWEEP_ARGS], None),
        }
        for name in ("warm oscar fit --model oscar", "warm oscar simulate"):  # fill the warm caches, untimed
            _run(*cmds[name])
        runs = {name: [] for name in cmds}
        for r in range(rounds):
            for name, (argv, env) in cmds.items():
                if env is None:  # cold: an empty cache every run
                    env = _children_env(tmp / f"cold-{r}")
                cpu, wall, code = _run(argv, env)
                runs[name].append((cpu, wall, code))
        out.update(_sweep_work(tmp / "sweep-cache", sweep_env))
    for name, rows in runs.items():
        cpu, wall = [x[0] for x in rows], [x[1] for x in rows]
        out[name] = {"cpu": min(cpu), "cpu_med": statistics.median(cpu), "wall": min(wall),
                     "wall_med": statistics.median(wall), "codes": sorted({x[2] for x in rows})}
    out["load_end"] = os.getloadavg()[0]
    return out


def _ratio(budget: float, value: float) -> str:
    return f"{budget / value:.2f}×" if value > 0 else "–"


def report(fits: list[dict], procs: dict | None, cores: int, load: tuple[float, float]) -> str:
    lines = [
        "# Floors under issues 36 and 37's unmet goals (`benchmarks/studies/floors.py`)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, {cores} usable cores; "
        f"1-min load average {load[0]:.1f} at start, {load[1]:.1f} at end. CPU milliseconds or seconds, best of "
        "the interleaved runs.",
    ]
    if fits:
        lines += [
            "",
            f"## Issue 37: the compiled fit against the fair scipy fit (goal ≥ {FIT_GOAL:g}×)",
            "",
            "C = 50, K = 20, OSCAR with a continuous length (one cell per record). `fit` = `fit(problem)` with "
            "its defaults; `scipy` = the fair baseline (`baseline_scipy.fit_cells`: same cells and objective, "
            "analytic gradient, L-BFGS-B from zero, stopped by the B.3 test); `low`, `full` = one evaluation "
            "of (f, ∇f, ∇²f) at θ̂ in the early steps' mixed precision and in float64. Floor = evaluations × "
            "the cheaper of the two: every evaluation costs at least that, before the rest of the fit.",
            "",
            "| records | evaluations | low ms | full ms | floor ms | fit ms | scipy ms | budget ms (scipy ÷ "
            f"{FIT_GOAL:g}) | ratio reached | ratio the floor allows |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in fits:
            floor = r["evaluations"] * min(r["low_ms"], r["full_ms"])
            budget = r["scipy_ms"] / FIT_GOAL
            lines.append(f"| {r['n']:,} | {r['evaluations']} | {r['low_ms']:.2f} | {r['full_ms']:.2f} | {floor:.1f} | "
                         f"{r['fit_ms']:.1f} | {r['scipy_ms']:.1f} | {budget:.1f} | {_ratio(r['scipy_ms'], r['fit_ms'])} | "
                         f"{_ratio(r['scipy_ms'], floor)} |")
    if procs:
        c = {k: v for k, v in procs.items() if isinstance(v, dict)}
        script, sweep = c["scipy script, same model"]["cpu"], c["scipy sweep"]["cpu"]
        warm_sweep, cold_sweep = c["warm oscar simulate"]["cpu"], c["cold oscar simulate"]["cpu"]
        sweep_floor = c["import numpy, jax"]["cpu"] + procs["sweep_call_s"]
        rows = [
            (f"warm `oscar fit` ≥ {WARM_FIT_GOAL:g}× the same-model scipy script (CPU)", script / WARM_FIT_GOAL,
             c["warm oscar fit --model oscar"]["cpu"], c["import numpy, jax"]["cpu"], "`import numpy, jax`"),
            (f"a bad label's error ≤ {BAD_LABEL_S:g} s (wall)", BAD_LABEL_S, c["oscar fit, a bad label (exit 2)"]["wall"],
             c["import numpy, pandas"]["wall"], "`import numpy, pandas`, wall (the frame library the readers and checks run on)"),
            (f"warm small sweep ≥ {SWEEP_GOAL:g}× the scipy sweep (CPU)", sweep / SWEEP_GOAL, warm_sweep, sweep_floor,
             f"`import numpy, jax` + the sweep's call in a process that has imported them ({procs['sweep_call_s']:.2f} s,"
             f" of which loading its {procs['sweep_programs']} executables {procs['loads_s']:.2f} s)"),
            (f"cold small sweep ≥ {SWEEP_GOAL:g}× the scipy sweep (CPU)", sweep / SWEEP_GOAL, cold_sweep,
             c["import numpy, jax"]["cpu"] + (cold_sweep - warm_sweep) / max(procs["sweep_programs"], 1),
             "`import numpy, jax` + compiling one of its programs ((cold − warm) ÷ programs)"),
        ]
        lines += [
            "",
            "## Issue 36: whole processes",
            "",
            f"Load average {procs['load_start']:.1f} at the start of these rounds, {procs['load_end']:.1f} at the end.",
            "",
            "| command | CPU s best | CPU s median | wall s best | wall s median | exit |",
            "|---|---|---|---|---|---|",
        ]
        for name, v in c.items():
            lines.append(f"| {name} | {v['cpu']:.3f} | {v['cpu_med']:.3f} | {v['wall']:.3f} | {v['wall_med']:.3f} | "
                         f"{','.join(map(str, v['codes']))} |")
        lines += [
            "",
            "| goal | budget s | reached s | floor s | the floor is | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for goal, budget, reached, floor, what in rows:
            verdict = ("met" if reached <= budget else
                       "out of reach: the floor alone exceeds the budget" if floor > budget else
                       f"not met; {budget - floor:.2f} s between the floor and the budget")
            lines.append(f"| {goal} | {budget:.3f} | {reached:.3f} | {floor:.3f} | {what} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", default="100000,1000000", help="part 1 sizes ('' to skip)")
    parser.add_argument("--repeats", type=int, default=10, help="part 1: interleaved repeats")
    parser.add_argument("--rounds", type=int, default=5, help="part 2: interleaved rounds (0 to skip)")
    parser.add_argument("--data", type=Path, default=None, help="part 2's file (default: MT-Bench from the shared data)")
    parser.add_argument("--out", type=Path, default=RESULTS / "floors.md")
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    cores = len(os.sched_getaffinity(0))
    procs = None
    if args.rounds > 0:  # first: the in-process part's threads and memory do not load its children
        from oscar_jax.io.data import shared_data_dir

        data = args.data or shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json"
        procs = processes(data, args.rounds)
    fits = [fit_floor(int(float(n)), repeats=args.repeats) for n in args.records.split(",") if n]
    text = report(fits, procs, cores, (load0, os.getloadavg()[0]))
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
