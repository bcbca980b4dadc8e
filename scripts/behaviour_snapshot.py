"""Record, or compare, the JSON the CLI prints for fixed inputs: the safety net of refactors.

    python scripts/behaviour_snapshot.py record DIR      # one JSON file per command
    python scripts/behaviour_snapshot.py compare OLD NEW # every number equal to 1e-12
    python scripts/behaviour_snapshot.py compare OLD NEW --renames scripts/renames_0.2.0.json

A refactor that claims "behaviour unchanged" records before and after and compares them:
numbers must agree to ``--tol`` (absolute, or relative above 1), strings, keys and list
lengths exactly. Fields that measure the machine (seconds, versions, paths) are skipped.
The inputs are the repository's test files and the built-in simulator, so this runs on
any checkout; the Bayesian run is short and compared draw for draw. ``--renames`` maps an
older release's keys to the current ones before comparing (``scripts/renames_0.2.0.json``:
the 0.2.0 schema of CHANGELOG.md), so that a rename is not mistaken for a change of number.
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


def _renamed(obj, renames: dict):
    """``obj`` with the keys of an older schema renamed (``root`` and per-row sections) and its aliases dropped."""
    if not isinstance(obj, dict):
        return obj
    out = {renames["root"].get(k, k): v for k, v in obj.items()}
    if isinstance(out.get("rank_distribution"), dict):  # {candidate: [P(rank = 1), …]} → rows
        out["rank_distribution"] = [{"candidate": c, **{f"p_rank_{r}": p for r, p in enumerate(ps, 1)}}
                                    for c, ps in out["rank_distribution"].items()]
    for section, names in renames["rows"].items():
        if section in out:
            dropped = renames["dropped"].get(section, [])
            out[section] = [{names.get(k, k): v for k, v in row.items()
                             if k not in dropped or (k in names and names[k] not in row)} for row in out[section]]
    return out


def compare(old: Path, new: Path, tol: float, only=None, renames: Path | None = None) -> int:
    problems = []
    mapping = json.loads(renames.read_text()) if renames else None
    for name in COMMANDS:
        if only and name not in only:
            continue
        a = json.loads((old / f"{name}.json").read_text())
        if mapping:
            a = _renamed(a, mapping)
        b = json.loads((new / f"{name}.json").read_text())
        found = []
        _diff(a, b, name, tol, found)
        added = [f for f in found if mapping and f.endswith("only in new")]  # the new schema's additions
        found = [f for f in found if f not in added]
        problems += found
        print(f"{name}: {'same' if not found else f'{len(found)} differences'}"
              + (f" ({len(added)} keys added)" if added else ""))
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
    c.add_argument("--renames", type=Path, default=None, help="JSON map of an older schema's keys to today's")
    for p in (r, c):
        p.add_argument("--only", type=lambda v: v.split(","), default=None,
                       help=f"comma-separated subset of: {','.join(COMMANDS)}")
    args = parser.parse_args(argv)
    if args.action == "record":
        record(args.dir, args.only)
        return 0
    return compare(args.old, args.new, args.tol, args.only, args.renames)


if __name__ == "__main__":
    sys.exit(main())
