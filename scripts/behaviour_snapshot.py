"""Record, or compare, the JSON the CLI prints for fixed inputs: the safety net of refactors.

    python scripts/behaviour_snapshot.py record DIR      # one JSON file per command
    python scripts/behaviour_snapshot.py compare OLD NEW # every number equal to 1e-12

A refactor that claims "behaviour unchanged" records before and after and compares them:
numbers must agree to ``--tol`` (absolute, or relative above 1), strings, keys and list
lengths exactly. Fields that measure the machine (seconds, versions, paths) are skipped.
The inputs are the repository's test files and the built-in simulator, so this runs on
any checkout; the Bayesian run is short and compared draw for draw.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARENA = str(ROOT / "oscar_jax" / "io" / "examples" / "arena_battles.csv")
OSCAR = str(ROOT / "tests" / "data" / "eco_oscar.csv")

COMMANDS = {
    "fit_oscar": ["fit", OSCAR, "--model", "oscar", "--format", "json"],
    "fit_jp_elo": ["fit", ARENA, "--model", "j+p", "--scale", "elo", "--format", "json"],
    "fit_bt": ["fit", ARENA, "--model", "bt", "--format", "json"],
    "bootstrap": ["bootstrap", OSCAR, "--model", "oscar", "--replicates", "40", "--seed", "3",
                  "--format", "json"],
    "compare": ["compare", OSCAR, "--models", "j,j+p,oscar", "--folds", "3", "--seed", "1",
                "--format", "json"],
    "simulate": ["simulate", "--reps", "3", "--c", "0.5", "--rho", "0.0", "--seed", "2",
                 "--format", "json"],
    "bayes": ["bayes", OSCAR, "--model", "j+p", "--chains", "1", "--warmup", "60", "--draws", "40",
              "--seed", "5", "--format", "json", "--no-plots"],
}

# Measured, not computed: they may differ between two runs of the same code.
SKIP = ("seconds", "_s_", "timing", "elapsed", "wall", "time_s", "version", "argv", "command", "path", "created")


def record(out: Path, only=None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name, argv in COMMANDS.items():
        if only and name not in only:
            continue
        proc = subprocess.run([sys.executable, "-m", "oscar_jax.cli.main", *argv], env=env,
                              capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: exit {proc.returncode}\n{proc.stderr}")
        json.loads(proc.stdout)  # must be JSON
        (out / f"{name}.json").write_text(proc.stdout)
        print(f"recorded {name}")


def _diff(a, b, where, tol, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if any(s in key.lower() for s in SKIP):
                continue
            if key not in a or key not in b:
                out.append(f"{where}.{key}: only in {'new' if key in b else 'old'}")
            else:
                _diff(a[key], b[key], f"{where}.{key}", tol, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{where}[{i}]", tol, out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) and math.isnan(b):
            return
        if not abs(a - b) <= tol * max(1.0, abs(a), abs(b)):
            out.append(f"{where}: {a!r} != {b!r}")
    elif a != b:
        out.append(f"{where}: {a!r} != {b!r}")


def compare(old: Path, new: Path, tol: float, only=None) -> int:
    problems = []
    for name in COMMANDS:
        if only and name not in only:
            continue
        a = json.loads((old / f"{name}.json").read_text())
        b = json.loads((new / f"{name}.json").read_text())
        found = []
        _diff(a, b, name, tol, found)
        problems += found
        print(f"{name}: {'same' if not found else f'{len(found)} differences'}")
    for line in problems[:50]:
        print("  " + line)
    return 1 if problems else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    r = sub.add_parser("record")
    r.add_argument("dir", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--tol", type=float, default=1e-12)
    for p in (r, c):
        p.add_argument("--only", type=lambda v: v.split(","), default=None,
                       help=f"comma-separated subset of: {','.join(COMMANDS)}")
    args = parser.parse_args(argv)
    if args.action == "record":
        record(args.dir, args.only)
        return 0
    return compare(args.old, args.new, args.tol, args.only)


if __name__ == "__main__":
    sys.exit(main())
