"""The command line as users wait for it: whole ``oscar`` processes, cold and warm cache.

Each measurement is a fresh process, timed from the outside (interpreter start to exit),
interleaved with the two references it is compared to in the same round:

* ``python -c "import oscar_jax"``: the floor every command pays (Python, JAX, pandas);
* ``benchmarks/scipy_script.py``: a plain numpy/scipy script that loads the same file and
  fits J+P (what a user without oscar_jax runs).

Commands: ``oscar fit DATA --model oscar --format json`` and ``--format table``,
``oscar bootstrap DATA --replicates 500``, ``oscar compare DATA --models j,j+p --folds
3``. *Cold* runs use an empty compile cache (``OSCAR_JAX_CACHE_DIR`` → a fresh folder);
*warm* runs reuse the programs the cold runs stored (their caches merged into one). Every command runs through
``benchmarks/cli_probe.py``, which also counts XLA compilations and traces per
invocation: the number that does not depend on the machine's load.

Goals (issue 16), warm unless noted: fit ≤ import + 0.5 s; bootstrap 500 ≤ import + 2 s;
compare j,j+p 3 folds ≤ import + 2 s; cold fit ≤ import + 3 s.

``--versus`` (issue 36) times whole processes against the strongest fair alternatives, one
round after another, every command once per round (A B C … A B C …), each process's CPU
time from the operating system (``os.wait4``: user + system of the finished child) beside
its wall time; best of N and median; the load average recorded:

* ``oscar --help``, ``oscar fit --help``, ``oscar fit missing.csv`` and a file with a bad
  label (both exit 2): the light start;
* warm ``oscar fit DATA --model oscar --format json`` against ``benchmarks/scipy_script.py``
  (numpy/scipy: load the same file, fit the same OSCAR model on cells by L-BFGS-B to the
  B.3 tolerance; no intervals, no checks);
* warm ``oscar fit CSV --model bt --format csv`` against evalica's command line
  (``evalica -i CSV pairwise bradley-terry``) on the same file (left, right, winner: written
  from DATA into a temporary folder);
* warm ``oscar bootstrap DATA --replicates 500``; cold ``oscar fit`` (an empty compile cache
  per run) beside ``python -c "import numpy, pandas, jax"`` (the stack a fit loads);
* the small Section 7 sweep, warm and cold, against ``benchmarks/scipy_sweep.py`` (numpy
  generator and the fair baseline's fits for the same settings, fits only); with
  ``--full-study`` also the main + controls study (``oscar simulate --controls``) against
  the same script for that study.

Usage::

    python benchmarks/bench_cli.py --versus --rounds 5  # the fair comparisons above
    python benchmarks/bench_cli.py                     # 3 datasets, 3 rounds (≈ 5 min quiet)
    python benchmarks/bench_cli.py --quick --data FILE # one file, fit only, 1 round
    python benchmarks/bench_cli.py --quick --data FILE --commands "fit json"   # one command
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from oscar_jax.io.data import shared_data_dir  # noqa: E402

DATASETS = {
    "MT-Bench": "judge_results_10k_mtbench.json",
    "UltraFeedback": "judge_results_10k_ultrafeedback.json",
    "Chatbot Arena": "judge_results_10k_chatbot_arena.json",
}
PROBE = ROOT / "benchmarks" / "cli_probe.py"
SCIPY = ROOT / "benchmarks" / "scipy_script.py"
SCIPY_SWEEP = ROOT / "benchmarks" / "scipy_sweep.py"
GOALS = {"fit json": 0.5, "fit table": 0.5, "bootstrap": 2.0, "compare": 2.0}  # warm, seconds over import
COLD_GOAL = 3.0


def commands(data: str, replicates: int, quick: bool, only: tuple[str, ...] = ()) -> dict[str, list[str]]:
    cmds = {"fit json": ["fit", data, "--model", "oscar", "--format", "json"],
            "fit table": ["fit", data, "--model", "oscar", "--format", "table"]}
    if not quick:
        cmds["bootstrap"] = ["bootstrap", data, "--replicates", str(replicates)]
        cmds["compare"] = ["compare", data, "--models", "j,j+p", "--folds", "3"]
    return {c: a for c, a in cmds.items() if not only or c in only}


def _env(cache: Path) -> dict:
    env = dict(os.environ)
    # A user's interpreter reads the package's bytecode (pip writes it at install; an
    # editable install writes it on first import); a shell with PYTHONDONTWRITEBYTECODE
    # would recompile every module from source in every process (≈ 0.1–0.2 s here).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # This process imported oscar_jax, which points JAX's cache at the default folder through
    # JAX_COMPILATION_CACHE_DIR; a child that inherits it keeps that folder ("the user's own
    # cache") and ignores OSCAR_JAX_CACHE_DIR, so a "cold" run would be warm.
    for var in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
        env.pop(var, None)
    env["OSCAR_JAX_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _timed(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _probe(args: list[str], env: dict, stats_dir: Path) -> tuple[float, dict]:
    stats = stats_dir / f"probe-{time.monotonic_ns()}.json"
    wall = _timed([sys.executable, str(PROBE), str(stats)] + args, env)
    return wall, json.loads(stats.read_text(encoding="utf-8"))


def run(files: dict[str, Path], rounds: int, replicates: int, quick: bool, work: Path,
        only: tuple[str, ...] = ()) -> dict:
    py = sys.executable
    subprocess.run([py, "-m", "compileall", "-q", str(ROOT / "oscar_jax")], check=True)  # as pip install does
    rows = []
    for name, path in files.items():
        cmds = commands(str(path), replicates, quick, only)
        cache = work / f"cache-{name.replace(' ', '_')}"
        env = _env(cache)
        result = {c: {"warm": [], "import": []} for c in cmds}
        # Cold: an empty cache for each command (each compiles what it needs from nothing).
        for cmd, args in cmds.items():
            cold = work / f"cold-{name.replace(' ', '_')}-{cmd.replace(' ', '_')}"
            cold_env = _env(cold)
            t_imp = _timed([py, "-c", "import oscar_jax"], cold_env)
            wall, stats = _probe(args, cold_env, work)
            result[cmd].update(cold=wall, cold_import=t_imp, cold_stats=stats)
            # The cold run left every program this command needs in its cache: merged into the
            # shared one they fill it as a further untimed run of the command would, without
            # compiling everything a second time.
            shutil.copytree(cold, cache, dirs_exist_ok=True)
        scipy_s = []
        for _ in range(rounds):  # interleaved: each round times the floor, the script and every command
            t_imp = _timed([py, "-c", "import oscar_jax"], env)
            if path.suffix == ".json":  # the scipy script reads the Xu et al. files only
                scipy_s.append(_timed([py, str(SCIPY), str(path)], env))
            for cmd, args in cmds.items():
                wall, stats = _probe(args, env, work)
                result[cmd]["warm"].append(wall)
                result[cmd]["import"].append(t_imp)
                result[cmd]["warm_stats"] = stats
        for cmd, r in result.items():
            warm, imp = statistics.median(r["warm"]), statistics.median(r["import"])
            rows.append({
                "dataset": name, "command": cmd, "argv": "oscar " + " ".join(cmds[cmd]).replace(str(path), path.name),
                "import_s": imp, "warm_s": warm, "warm_over_import_s": warm - imp, "warm_ratio": warm / imp,
                "cold_s": r["cold"], "cold_import_s": r["cold_import"], "cold_over_import_s": r["cold"] - r["cold_import"],
                "scipy_s": statistics.median(scipy_s) if scipy_s else None,
                "compilations_cold": r["cold_stats"]["compilations"], "compilations_warm": r["warm_stats"]["compilations"],
                "traces_warm": r["warm_stats"]["traces"], "cache_hits_warm": r["warm_stats"]["cache_hits"],
                "run_s_in_process": r["warm_stats"]["run_s"],
            })
    return {"rows": rows}


def goals(rows: list[dict]) -> list[tuple]:
    out = []
    for cmd, limit in GOALS.items():
        sel = [r for r in rows if r["command"] == cmd]
        if sel:
            worst = max(sel, key=lambda r: r["warm_over_import_s"])
            out.append((f"`oscar {cmd}` warm, ≤ import + {limit:g} s", f"≤ {limit:g} s over import",
                        ", ".join(f"{r['dataset']} {r['warm_over_import_s']:+.2f} s" for r in sel),
                        worst["warm_over_import_s"] <= limit))
    sel = [r for r in rows if r["command"] == "fit json"]
    if sel:
        worst = max(r["cold_over_import_s"] for r in sel)
        out.append((f"`oscar fit` cold (empty cache), ≤ import + {COLD_GOAL:g} s", f"≤ {COLD_GOAL:g} s over import",
                    ", ".join(f"{r['dataset']} {r['cold_over_import_s']:+.2f} s" for r in sel), worst <= COLD_GOAL))
    return out


def markdown(result: dict, load: tuple, rounds: int, wall: float) -> str:
    rows = result["rows"]
    lines = [
        "# oscar CLI wall clock (bench_cli.py)", "",
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {wall:.0f} s; {os.cpu_count()} logical cores; "
        f"**load average (1 min) {load[0]:.1f} at start, {load[1]:.1f} at end** "
        "(other work on the machine slows every column alike; compare ratios and differences within a row, and "
        "the compilation counts, which do not depend on load).", "",
        f"Fresh processes timed from outside, medians of {rounds} interleaved rounds. `import` = "
        "`python -c \"import oscar_jax\"` in the same round; `scipy script` = benchmarks/scipy_script.py "
        "(numpy/scipy only: load the file, fit J+P by L-BFGS-B). Cold = empty compile cache. "
        "Every process reads the modules' bytecode (compiled once before the first round, as pip "
        "install does).", "",
        "| dataset | command | warm s | import s | warm − import | warm ÷ import | cold s | cold − import | "
        "scipy script s | XLA compilations cold / warm | traces warm |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | `{r['argv']}` | {r['warm_s']:.2f} | {r['import_s']:.2f} | "
            f"{r['warm_over_import_s']:+.2f} | {r['warm_ratio']:.2f}× | {r['cold_s']:.2f} | "
            f"{r['cold_over_import_s']:+.2f} | {'–' if r['scipy_s'] is None else f"{r['scipy_s']:.2f}"} | {r['compilations_cold']} / "
            f"{r['compilations_warm']} | {r['traces_warm']} |")
    lines += ["", "## Goals (issue 16)", "", "| goal | target | reached | met |", "|---|---|---|---|"]
    for g, target, reached, met in goals(rows):
        lines.append(f"| {g} | {target} | {reached} | {'yes' if met else 'no'} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- versus (issue 36)
def _rusage_run(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the finished child, exit status) of one whole process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def _evalica_csv(src: Path, dest: Path) -> Path:
    """The Xu et al. file as evalica's CLI reads it: left, right, winner (left/right/tie)."""
    verdict = {"a": "left", "b": "right", "c": "tie"}
    rows = json.loads(src.read_text(encoding="utf-8"))
    lines = ["left,right,winner"]
    for r in rows:
        v = verdict.get(str(r.get("judge_preferred_model", "")).strip().lower())
        if v is not None:
            lines.append(f"{r['model_a']},{r['model_b']},{v}")
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def versus_commands(files: dict[str, Path], work: Path, full_study: bool = False) -> dict[str, tuple[list[str], str]]:
    """label → (argv, cache: 'warm' or 'cold'); the oscar console script is the installed one."""
    py, oscar = sys.executable, [sys.executable, "-c", "import sys; from oscar_jax.cli.main import main; "
                                                     "sys.exit(main())"]
    evalica = shutil.which("evalica") or str(Path(py).with_name("evalica"))
    bad = work / "label.csv"
    bad.write_text("model_a,model_b,winner\na,b,draw\n", encoding="utf-8")
    cmds = {"oscar --help": (oscar + ["--help"], "warm"),
            "oscar fit --help": (oscar + ["fit", "--help"], "warm"),
            "oscar fit missing.csv (exit 2)": (oscar + ["fit", str(work / "missing.csv")], "warm"),
            "oscar fit label.csv, a bad label (exit 2)": (oscar + ["fit", str(bad)], "warm"),
            "python -c 'import numpy, pandas, jax'": ([py, "-c", "import numpy, pandas, jax"], "warm")}
    sweep = oscar + ["simulate", "--n", "1000,2500", "--reps", "20", "--methods", "j,oscar", "--format", "json"]
    cmds[f"Small sweep: {SWEEP}"] = (sweep, "warm")
    cmds[f"Small sweep: cold {SWEEP}"] = (sweep, "cold")
    cmds[f"Small sweep: {SCIPY_SWEEP_LABEL}"] = ([py, str(SCIPY_SWEEP), "--n", "1000,2500", "--reps", "20"], "warm")
    if full_study:  # the main + controls study: ~70 s a round
        study = oscar + ["simulate", "--controls", "--format", "json"]
        cmds[f"Full study: {FULL}"] = (study, "warm")
        cmds[f"Full study: cold {FULL}"] = (study, "cold")
        cmds[f"Full study: {SCIPY_FULL_LABEL}"] = ([py, str(SCIPY_SWEEP), "--n", "1000,2500,5000,10000", "--reps", "100",
                                                   "--methods", "j,j+p,j+l,j+f,oscar", "--controls"], "warm")
    for name, path in files.items():
        csv = _evalica_csv(path, work / (path.stem + ".csv"))
        cmds[f"{name}: oscar fit --model oscar --format json"] = (
            oscar + ["fit", str(path), "--model", "oscar", "--format", "json"], "warm")
        cmds[f"{name}: scipy script, same model"] = ([py, str(SCIPY), str(path)], "warm")
        cmds[f"{name}: oscar fit --model bt --format csv"] = (
            oscar + ["fit", str(csv), "--model", "bt", "--format", "csv"], "warm")
        cmds[f"{name}: evalica CLI, Bradley-Terry"] = ([evalica, "-i", str(csv), "pairwise", "bradley-terry"], "warm")
        cmds[f"{name}: oscar bootstrap --replicates 500"] = (oscar + ["bootstrap", str(path), "--replicates", "500"],
                                                             "warm")
        cmds[f"{name}: cold oscar fit --model oscar --format json"] = (
            oscar + ["fit", str(path), "--model", "oscar", "--format", "json"], "cold")
    return cmds


def versus(files: dict[str, Path], rounds: int, work: Path, only: tuple[str, ...] = (),
           full_study: bool = False) -> list[dict]:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "oscar_jax")], check=True)
    cmds = {label: c for label, c in versus_commands(files, work, full_study).items()
            if not only or any(o in label for o in only)}
    warm_env = _env(work / "cache")
    for argv, kind in cmds.values():  # fill the warm cache (untimed)
        if kind == "warm":
            subprocess.run(argv, env=warm_env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times: dict[str, list[tuple[float, float, int, float]]] = {c: [] for c in cmds}
    for r in range(rounds):
        for label, (argv, kind) in cmds.items():
            env = warm_env if kind == "warm" else _env(work / f"cold-{r}-{len(times[label])}-{abs(hash(label))}")
            wall, cpu, code = _rusage_run(argv, env, work)
            times[label].append((wall, cpu, code, os.getloadavg()[0]))
    rows = []
    for label, runs in times.items():
        rows.append({"command": label, "wall_min": min(t[0] for t in runs),
                     "wall_med": statistics.median(t[0] for t in runs), "cpu_min": min(t[1] for t in runs),
                     "cpu_med": statistics.median(t[1] for t in runs), "exit": sorted({t[2] for t in runs}),
                     "load": (min(t[3] for t in runs), max(t[3] for t in runs)), "runs": len(runs)})
    return rows


def first_output(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, float, int]:
    """(seconds to the first byte on stdout or stderr, wall s, CPU s, exit) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first = proc.stdout.read(1) and time.perf_counter() - t0
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return float(first or "nan"), time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, proc.returncode


def demo_rows(rounds: int, work: Path) -> list[str]:
    """Cold ``oscar demo`` (an empty compile cache each run): when the user first sees a word."""
    argv = [sys.executable, "-c", "import sys; from oscar_jax.cli.main import main; sys.exit(main())", "demo"]
    runs = [first_output(argv, _env(work / f"demo-{r}"), work) + (os.getloadavg()[0],) for r in range(rounds)]
    return ["", "## Cold `oscar demo`: time to the first output", "",
            "| run | first output (s) | exit after (s) | CPU s | exit | load |", "|---|---|---|---|---|---|",
            *(f"| {i + 1} | {f:.2f} | {w:.1f} | {c:.1f} | {e} | {ld:.1f} |" for i, (f, w, c, e, ld) in enumerate(runs))]


SWEEP = "oscar simulate --n 1000,2500 --reps 20 --methods j,oscar"
SCIPY_SWEEP_LABEL = "scipy sweep script, same settings, fits only"
FULL = "oscar simulate --controls (main + controls, 2,600 fits)"
SCIPY_FULL_LABEL = "scipy sweep script, same study, fits only"
VERSUS_PAIRS = (("oscar fit --model oscar --format json", "scipy script, same model", 1.5),
                ("oscar fit --model bt --format csv", "evalica CLI, Bradley-Terry", 1.0),
                (SWEEP, SCIPY_SWEEP_LABEL, 0.5),
                (f"cold {SWEEP}", SCIPY_SWEEP_LABEL, 0.5),
                (FULL, SCIPY_FULL_LABEL, 3.0),
                (f"cold {FULL}", SCIPY_FULL_LABEL, 1.0))


def versus_markdown(rows: list[dict], rounds: int, load: tuple, wall: float) -> str:
    by = {r["command"]: r for r in rows}
    lines = ["# Whole processes against fair alternatives (bench_cli.py --versus, issue 36)", "",
             f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {wall:.0f} s; {os.cpu_count()} logical cores; "
             f"**load average (1 min) {load[0]:.1f} at start, {load[1]:.1f} at end**. {rounds} rounds, every command "
             "once per round in the order below (interleaved); CPU = user + system of the finished process "
             "(`os.wait4`), wall from outside; best of the rounds (min) and median. Warm = a compile cache that "
             "holds the command's programs; cold = an empty one for every run.", "",
             "| command | CPU s, min / median | wall s, min / median | exit | load during |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['command']} | {r['cpu_min']:.2f} / {r['cpu_med']:.2f} | {r['wall_min']:.2f} / "
                     f"{r['wall_med']:.2f} | {','.join(map(str, r['exit']))} | {r['load'][0]:.1f}–{r['load'][1]:.1f} |")
    lines += ["", "## Ratios (alternative ÷ oscar: above 1 means oscar is faster)", "",
              "| dataset | oscar command | alternative | CPU, best ÷ best | CPU, median ÷ median | wall, best ÷ best "
              "| goal | met (CPU, best) |", "|---|---|---|---|---|---|---|---|"]
    names = sorted({r["command"].split(": ")[0] for r in rows if ": " in r["command"]})
    for name in names:
        for ours, theirs, goal in VERSUS_PAIRS:
            a, b = by.get(f"{name}: {ours}"), by.get(f"{name}: {theirs}")
            if a and b:
                ratio = b["cpu_min"] / a["cpu_min"]
                lines.append(f"| {name} | `{ours}` | {theirs} | {ratio:.2f}× | {b['cpu_med'] / a['cpu_med']:.2f}× | "
                             f"{b['wall_min'] / a['wall_min']:.2f}× | ≥ {goal:g}× | {'yes' if ratio >= goal else 'no'} |")
        cold, warm = by.get(f"{name}: cold oscar fit --model oscar --format json"), \
            by.get(f"{name}: oscar fit --model oscar --format json")
        stack = by.get("python -c 'import numpy, pandas, jax'")
        if cold and warm and stack:
            lines.append(f"| {name} | cold `oscar fit` | — | cold − warm: {cold['cpu_min'] - warm['cpu_min']:.2f} CPU-s, "
                         f"{cold['wall_min'] - warm['wall_min']:.2f} s wall | cold − import of numpy, pandas, jax: "
                         f"{cold['wall_min'] - stack['wall_min']:.2f} s wall | — | ≤ 1.5 s wall over import, ≤ 3 CPU-s "
                         f"compiling | {'yes' if cold['wall_min'] - stack['wall_min'] <= 1.5 and cold['cpu_min'] - warm['cpu_min'] <= 3 else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fit commands only, one round")
    parser.add_argument("--data", type=Path, action="append", default=None,
                        help="data file(s) instead of the three Xu et al. files (repeatable)")
    parser.add_argument("--data-dir", type=Path, default=shared_data_dir())
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3; quick 1)")
    parser.add_argument("--replicates", type=int, default=500)
    parser.add_argument("--commands", default="", help="comma-separated subset of the commands (e.g. 'fit json')")
    parser.add_argument("--out", type=Path, default=None, help="default results/cli.md (--versus: cli_versus.md)")
    parser.add_argument("--versus", action="store_true", help="whole processes against the fair alternatives")
    parser.add_argument("--demo", action="store_true", help="with --versus: also time cold `oscar demo` to its first output")
    parser.add_argument("--full-study", action="store_true",
                        help="with --versus: also the main + controls study against the scipy sweep (~70 s a round)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = ROOT / "benchmarks" / "results" / ("cli_versus.md" if args.versus else "cli.md")
    rounds = args.rounds or (1 if args.quick else 3)
    only = tuple(c.strip() for c in args.commands.split(",") if c.strip())
    unknown = set(only) - set(commands("DATA", args.replicates, False))
    if unknown and not args.versus:  # (with --versus: substrings of the commands' labels)
        parser.error(f"unknown --commands {sorted(unknown)}; choose from {sorted(commands('DATA', 0, False))}")
    if args.data:
        files = {p.name: p for p in args.data}
    else:
        files = {k: args.data_dir / "xu2026" / v for k, v in DATASETS.items()}
        missing = [str(p) for p in files.values() if not p.exists()]
        if missing:
            print(f"bench_cli: data absent ({', '.join(missing)}); set OSCAR_DATA_DIR", file=sys.stderr)
            return {"rows": [], "run_all": [], "goals": []}
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    if args.versus:
        with tempfile.TemporaryDirectory(prefix="oscar_bench_vs_") as tmp:
            rows = versus(files, args.rounds or 5, Path(tmp), only, args.full_study)
            extra = demo_rows(args.rounds or 5, Path(tmp)) if args.demo else []
        text = versus_markdown(rows, args.rounds or 5, (load0, os.getloadavg()[0]), time.perf_counter() - t0)
        text += "\n".join(extra) + ("\n" if extra else "")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(text)
        return {"rows": rows}
    with tempfile.TemporaryDirectory(prefix="oscar_bench_cli_") as tmp:
        result = run(files, rounds, args.replicates, args.quick, Path(tmp), only)
    load1 = os.getloadavg()[0]
    text = markdown(result, (load0, load1), rounds, time.perf_counter() - t0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    result["load"] = (load0, load1)
    result["goals"] = goals(result["rows"])
    result["run_all"] = [{
        "package": f"`{r['argv']}` warm ({r['compilations_warm']} XLA compilations; cold "
                   f"{r['cold_s']:.2f} s, {r['compilations_cold']})",
        "package_s": r["warm_s"], "alternative": "plain scipy script: load + J+P fit", "alternative_s": r["scipy_s"],
        "note": f"import oscar_jax {r['import_s']:.2f} s; warm − import {r['warm_over_import_s']:+.2f} s; "
                f"load {load0:.1f}–{load1:.1f}"} for r in result["rows"]]
    return result


if __name__ == "__main__":
    main()
