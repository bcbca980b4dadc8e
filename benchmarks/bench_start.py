"""How long the commands a user meets first take: whole processes, this checkout against another.

``import oscar_jax``, ``oscar --help``, ``oscar fit --help``, a bad input file and a warm
``oscar fit`` run as fresh processes, this checkout (A) and ``--baseline DIR`` (B, e.g. an
exported older commit: ``git archive REV | tar -x -C DIR``) interleaved A B A B after one
untimed warm-up run each, each with its own compile cache. CPU time is the child process's
user + system time (``getrusage``), wall time from the outside; medians, with the load
average before and after. It also lists which of JAX, NumPyro, ArviZ, matplotlib and scipy
each light command imports (none should: ``tests/test_light_start.py``).

Usage::

    python benchmarks/bench_start.py --baseline /tmp/base --rounds 7 [--data FILE]
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("jax", "numpyro", "arviz", "matplotlib", "scipy")


def commands(data: str | None, missing: str) -> dict[str, list[str]]:
    cli = ["-m", "oscar_jax.cli.main"]
    cmds = {"python -c 'import oscar_jax'": ["-c", "import oscar_jax"],
            "oscar --help": [*cli, "--help"],
            "oscar fit --help": [*cli, "fit", "--help"],
            "oscar fit missing.csv (exit 2)": [*cli, "fit", missing]}
    if data:
        cmds[f"warm oscar fit {Path(data).name} --model oscar --format json"] = [
            *cli, "fit", data, "--model", "oscar", "--format", "json"]
    return cmds


# Python puts the working folder first on sys.path: every process runs from an empty one, so
# each side imports the checkout its PYTHONPATH names.
_CWD = tempfile.mkdtemp(prefix="oscar_bench_start_cwd_")


def _env(root: Path, cache: Path) -> dict:
    env = dict(os.environ, OSCAR_JAX_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(args: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=_CWD, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports(args: list[str], env: dict) -> list[str]:
    """The heavy packages a command imports (run in-process after the command, via runpy)."""
    code = ("import runpy, sys\nsys.argv = ['oscar', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('oscar_jax.cli.main', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            f"print([h for h in {HEAVY!r} if h in sys.modules], file=sys.stderr)")
    if args[0] == "-c":
        code = args[1] + f"\nimport sys\nprint([h for h in {HEAVY!r} if h in sys.modules], file=sys.stderr)"
        argv = []
    else:
        argv = args[2:]
    out = subprocess.run([sys.executable, "-c", code, *argv], env=env, cwd=_CWD, capture_output=True, text=True)
    return ast.literal_eval(out.stderr.strip().splitlines()[-1]) if out.stderr.strip() else []


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare with (B)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", default=None, help="a data file for the warm fit (default: none)")
    args = parser.parse_args(argv)
    sides = {"A": ROOT, **({"B": args.baseline} if args.baseline else {})}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="oscar_bench_start_") as tmp:
        envs = {k: _env(root, Path(tmp) / k) for k, root in sides.items()}
        cmds = commands(args.data, str(Path(tmp) / "missing.csv"))
        times = {(c, k): [] for c in cmds for k in sides}
        for a in cmds.values():
            for k in sides:
                _timed(a, envs[k])  # warm-up: bytecode, compile cache
        for _ in range(args.rounds):
            for c, a in cmds.items():
                for k in sides:
                    times[c, k].append(_timed(a, envs[k]))
        heavy = {c: heavy_imports(a, envs["A"]) for c, a in cmds.items()}
    load1 = os.getloadavg()
    med = {key: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for key, v in times.items()}
    cells = ["command", "A: wall / CPU (s)", *(["B: wall / CPU (s)", "A ÷ B, CPU (wall)"] if "B" in sides else []),
             "heavy modules imported (A)"]
    lines = [f"load {load0[0]:.1f} at start, {load1[0]:.1f} at end; medians of {args.rounds} interleaved rounds; "
             f"A = {ROOT}" + (f", B = {args.baseline}" if "B" in sides else ""), "",
             "| " + " | ".join(cells) + " |", "|---" * len(cells) + "|"]
    for c in cmds:
        wa, ca = med[c, "A"]
        row = f"| `{c}` | {wa:.3f} / {ca:.3f} |"
        if "B" in sides:
            wb, cb = med[c, "B"]
            row += f" {wb:.3f} / {cb:.3f} | {ca / cb:.3f} ({wa / wb:.3f}) |"
        lines.append(row + f" {', '.join(heavy[c]) or 'none'} |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
