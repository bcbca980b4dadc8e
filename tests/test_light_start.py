"""A light start (issue 36 part 2): what a user meets first does not start the numeric stack.

``import oscar_jax``, ``oscar --help``, ``oscar CMD --help``, argument errors and bad
input must not import JAX, NumPyro, ArviZ, matplotlib or scipy: on a loaded 2-core
machine each of those imports cost seconds before the user saw a word. Each probe runs
in a fresh interpreter, where import order is the point; one interpreter runs a list of
cases in turn and reports after each, so the first case that loads the stack is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ARENA_EXAMPLE

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("jax", "numpyro", "arviz", "matplotlib", "scipy")

PROBE = r"""
import contextlib, io, json, sys
HEAVY = {heavy!r}
report = []

def loaded():
    return sorted(h for h in HEAVY if h in sys.modules)

import oscar_jax as oj
oj.__version__, oj.OscarInputError, oj.OscarNoteWarning, dir(oj)
report.append(("import oscar_jax", None, loaded()))
from oscar_jax.cli.main import main
for argv in {cases!r}:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    report.append((" ".join(argv), rc, loaded()))
print(json.dumps(report))
"""


def _probe(cases, tmp_path, heavy=HEAVY):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = PROBE.format(heavy=heavy, cases=cases)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    (folder / "label.csv").write_text("model_a,model_b,winner\na,b,draw\n", encoding="utf-8")
    (folder / "columns.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    return folder


def test_help_argument_errors_and_bad_input_leave_the_numeric_stack_unloaded(tmp_path, bad_files):
    from oscar_jax.cli.main import COMMANDS

    data = str(ARENA_EXAMPLE)
    cases = [["--help"], ["--version"], ["nonsense"], ["fit"],
             *([name, "--help"] for name in COMMANDS),
             ["fit", data, "--scale", "nonsense"],                      # argparse
             ["fit", str(tmp_path / "missing.csv")],                    # no such file
             ["fit", str(bad_files / "label.csv")],                     # a bad label, named by row
             ["fit", str(bad_files / "columns.csv")],                   # no known schema
             ["fit", data, "--model", "nonsense"],                      # bad model string
             ["fit", data, "--filter", "language=English"],             # a filter on an absent column
             ["fit", data, "--ci-prob", "2"],
             ["fit", data, "--out", data],                              # --out is a file
             ["report", data, "-o", "page.pdf"],
             ["bootstrap", str(bad_files / "label.csv")],
             ["bayes", str(bad_files / "label.csv")],
             ["compare", str(bad_files / "label.csv")],
             ["human", str(bad_files / "label.csv"), "--votes", data],
             ["plan", data],                                            # no --budget
             ["plan", str(bad_files / "label.csv"), "--budget", "10"],
             ["plan", data, "--budget", "0"],
             ["plan", data, "--budget", "10", "--target", "nonsense"],
             ["plan", data, "--budget", "10", "--model", "davidson+plf"],
             ["plan", data, "--budget", "10", "--judges", "gpt=free"],
             ["plan", data, "--budget", "10", "--out", "next.txt"],
             ["plan", data, "--budget", "10", "--prompts", str(tmp_path / "missing.jsonl")],
             ["plan", data, "--budget", "10", "--prompts", str(bad_files / "columns.csv")]]
    report = _probe(cases, tmp_path)
    heavy = [(case, modules) for case, _, modules in report if modules]
    assert heavy == []
    codes = {case: rc for case, rc, _ in report[1:]}
    assert codes["--help"] == 0 and codes["fit --help"] == 0 and codes["--version"] == 0
    assert [c for c, rc in codes.items() if "--help" not in c and c != "--version" and rc != 2] == []


def test_the_probe_sees_the_numeric_stack_when_it_loads(tmp_path):
    # Negative control: a fit that runs a compiled program imports JAX, and the probe reports it.
    report = _probe([["fit", str(ARENA_EXAMPLE), "--model", "j", "--format", "json"]], tmp_path)
    assert report[-1][1] == 0 and "jax" in report[-1][2]


def test_a_plain_bt_fit_and_its_reports_leave_the_numeric_stack_unloaded(tmp_path):
    # Plain BT fits and reports in host numpy (infer/plain_bt.py): importing JAX would be half
    # of `oscar fit --model bt`'s CPU time, and evalica's CLI's whole budget.
    data = str(ARENA_EXAMPLE)
    cases = [["fit", data, "--model", "bt"], ["fit", data, "--model", "bt", "--format", "json"],
             ["fit", data, "--model", "bt", "--format", "csv"], ["fit", data, "--model", "bt", "--scale", "elo"],
             ["fit", data, "--model", "bt", "--scale", "elo", "--anchor", "gpt-4-0314=1114"],
             ["fit", data, "--model", "bt", "--scale", "winrate", "--anchor", "gpt-4-0314"],
             ["fit", data, "--model", "bt", "--out", str(tmp_path / "out")]]
    report = _probe(cases, tmp_path)
    assert [(case, rc, modules) for case, rc, modules in report[1:] if rc != 0 or modules] == []
    assert (tmp_path / "out").is_dir() and any((tmp_path / "out").iterdir())


def test_help_argument_errors_and_a_bad_path_load_not_even_numpy_or_pandas(tmp_path):
    # pandas alone is ~0.4 CPU-s on a loaded host: `oscar CMD --help`, an argparse error and a
    # data path that does not exist or has an unknown suffix answer before it loads.
    from oscar_jax.cli.main import COMMANDS

    (tmp_path / "notes.txt").write_text("a,b\n", encoding="utf-8")
    data = str(ARENA_EXAMPLE)
    cases = [*([name, "--help"] for name in COMMANDS), ["fit", data, "--scale", "nonsense"],
             ["fit", str(tmp_path / "missing.csv")], ["bootstrap", str(tmp_path / "missing.json")],
             ["compare", str(tmp_path / "notes.txt")], ["audit", str(tmp_path / "missing.csv")]]
    report = _probe(cases, tmp_path, heavy=("numpy", "pandas", *HEAVY))
    assert [(case, modules) for case, _, modules in report if modules] == []
    codes = {case: rc for case, rc, _ in report[1:]}
    assert [c for c, rc in codes.items() if rc != (0 if "--help" in c else 2)] == []


def test_the_light_schema_names_are_the_registered_ones():
    from oscar_jax.io.schemas import SCHEMAS
    from oscar_jax.runtime.validate import SCHEMA_NAMES

    assert tuple(SCHEMAS) == SCHEMA_NAMES



def test_a_sweep_prints_its_tables_without_pandas(tmp_path):
    # `oscar simulate` makes its tables as rows in numpy (sweep/tables.py): pandas beside JAX
    # was 0.23–0.27 CPU-s of a ~1.2 CPU-s warm sweep. CSV output writes through pandas, which
    # the probe then sees (the negative control).
    sweep = ["simulate", "--n", "50", "--reps", "3", "--methods", "j", "--no-compile-ahead"]
    cases = [sweep, [*sweep, "--format", "json"], [*sweep, "--format", "markdown"], [*sweep, "--format", "csv"]]
    report = _probe(cases, tmp_path, heavy=("pandas",))
    assert [(case, rc, modules) for case, rc, modules in report[1:-1] if rc != 0 or modules] == []
    assert report[-1][1] == 0 and report[-1][2] == ["pandas"]
