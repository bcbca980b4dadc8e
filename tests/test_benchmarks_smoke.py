"""Smoke tests: the issue-8 benchmarks run end to end on tiny inputs (nothing is timed here).

(The Bayesian, SVI and audit benchmarks are in test_benchmarks_bayes_smoke.py.)

They check that the scripts keep working and that run_all collects what they produce —
never how fast anything is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import (  # noqa: E402
    bench_bootstrap,
    bench_bt,
    bench_fit,
    bench_scaling,
    bench_simulation,
    run_all,
)
from helpers import ARENA_EXAMPLE, shared_data  # noqa: E402

pytest.importorskip("evalica")


def test_bench_bt_quick(tmp_path):
    out = bench_bt.main(["--quick", "--repeats", "1", "--out", str(tmp_path / "bt.md")])
    text = (tmp_path / "bt.md").read_text(encoding="utf-8")
    assert "evalica" in text and "plain BT core" in text and "Head to head" in text
    assert {"ours core", "ours public", "evalica core", "evalica public"} <= set(out["duels"])
    rows = [r for r in out["rows"] if "s" in r]
    assert len(rows) >= 4
    # Every method minimises the same objective: their optima agree to the solvers' tolerances.
    ours = rows[1]["objective"]
    assert all(abs(r["objective"] - ours) < 1e-4 * abs(ours) for r in rows)


def test_bench_scaling_quick(tmp_path):
    out = bench_scaling.main(["--quick", "--records", "400,40000", "--candidates", "", "--memory", "",
                              "--repeats", "1", "--out-dir", str(tmp_path)])
    rows = out["rows"]
    assert all("error" not in r for r in rows), rows
    assert [r["grouped"] for r in rows] == [False, True]  # the second size takes the grouped pass
    for r in rows:
        # the baselines minimise the same objective: they stop at the B.3 tolerance, oscar_jax far below it
        assert abs(r["lbfgsb"]["objective_minus_ours"]) < 1e-6 * abs(r["objective"])
        assert r["lbfgsb"]["grad_inf_per_n"] <= 1e-7 and r["grad_inf_per_n"] <= 1e-7
    for name in ("scaling.md", "scaling.csv"):
        assert (tmp_path / name).stat().st_size > 0


def test_run_all_collects_and_reports_missing(tmp_path):
    ghost = run_all.Task("ghost", "benchmarks.no_such_benchmark", lambda q, d: [], run_all.collect_generic)
    assert run_all.run_task(ghost, True, tmp_path).status == "not available"
    no_main = run_all.Task("nomain", "benchmarks.baseline_scipy", lambda q, d: [], run_all.collect_generic)
    assert run_all.run_task(no_main, True, tmp_path).status == "not available"

    res = run_all.main(["--quick", "--tasks", "bt", "--out-dir", str(tmp_path)])
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert res["outcomes"][0].status == "ok", res["outcomes"][0].message
    assert "## Goals" in text and "evalica" in text and "OPENBLAS_NUM_THREADS" in text


def test_collectors_parse_the_other_benchmarks_tables():
    boot = (ROOT / "benchmarks" / "results" / "bootstrap.md")
    if boot.exists():
        out = run_all.Outcome("bootstrap", "ok")
        text = boot.read_text(encoding="utf-8")
        run_all.collect_bootstrap(text, out, False)
        # one comparison row per alternative the table has: (a1), (a2), (b), (c), (d) against (a)
        alternatives = sum(f"| ({k}) " in text for k in ("a1", "a2", "b", "c", "d"))
        assert alternatives >= 2 and len(out.rows) == alternatives and out.goals
    sim = "\n".join([
        "Study: N ∈ [250] × 3 replicates × 1 methods (c = 1, ρ = 0.6), plus: **12 fits**, each with ...",
        "| oscar_jax sweep, whole study (incl. compilation 30 s) | 45.2 | 0.3 |",
        "| scipy L-BFGS-B loop, extrapolated from 2 fits per (N, method), fit only | 90.5 | 0.13 |",
    ])
    newer = sim.replace("(incl. compilation 30 s) | 45.2 |", "(compilation 30 s wall of it) | 45.2 | 20.1 |")
    for text in (sim, newer):
        out = run_all.Outcome("simulation", "ok")
        run_all.collect_simulation(text, out, True)
        assert out.rows[0].package_s == 45.2 and out.rows[0].alternative_s == 90.5

    bayes = "\n".join([
        "| estimator | first call (s) | steady (s) | min bulk ESS | ESS/s (steady) | max R-hat | divergences |",
        "|---|---|---|---|---|---|---|",
        "| point fit (damped Newton + sandwich) | 20.10 | 0.045 | – | – | – | – |",
        "| Bayesian OSCAR | 95.3 | 40.2 | 812 | 20.2 | 1.0040 | 0 |",
    ])
    out = run_all.Outcome("bayes", "ok")
    run_all.collect_bayes(bayes, out, False)
    assert out.rows[0].package_s == 40.2 and out.rows[0].alternative_s == 0.045


def test_bench_fit_quick(tmp_path):
    shared_data("mtbench")  # skips with a message when the shared data are absent
    bench_fit.main(["--quick", "--repeats", "1", "--out", str(tmp_path / "fit.md")])
    text = (tmp_path / "fit.md").read_text(encoding="utf-8")
    assert "| MT-Bench | OSCAR |" in text and "pass" in text


def test_bench_bootstrap_speed_on_simulated_data(tmp_path):
    import oscar_jax as oj

    data = tmp_path / "sim.csv"
    oj.simulate_frame(seed=0, n_prompts=60).to_csv(data, index=False)
    out = tmp_path / "bootstrap.md"
    bench_bootstrap.main(["speed", "--data", str(data), "--reference-judge", "judge0", "--replicates", "6",
                          "--chunk-size", "3", "--loop-subset", "3", "--scipy-subset", "2", "--repeats", "1",
                          "--output", str(out)])
    text = out.read_text(encoding="utf-8")
    for row in ("| (a) ", "| (a1) ", "| (a2) ", "| (b) ", "| (c) ", "| (d) "):
        assert row in text
    assert "max |θ_a − θ_a1| = 0.0e+00" in text  # the threads change no bit
    parsed = run_all.Outcome("bootstrap", "ok")
    run_all.collect_bootstrap(text, parsed, True)
    assert len(parsed.rows) == 5 and "fair scipy loop" in parsed.goals[0][0]


def test_bench_simulation_quick(tmp_path):
    # Two methods of five: J+P is fitted at the main setting only, OSCAR at the controls too
    # (both branches of the study's restriction), with half the sweep's compiled programs.
    bench_simulation.main(["--quick", "--methods", "j+p,oscar", "--out", str(tmp_path)])
    text = (tmp_path / "simulation.md").read_text(encoding="utf-8")
    parsed = run_all.Outcome("simulation", "ok")
    run_all.collect_simulation(text, parsed, True)
    assert parsed.rows and parsed.rows[0].package_s > 0


def test_bench_cli_quick_counts_compilations(tmp_path, monkeypatch):
    # Whole `oscar fit` processes on a small shipped file, cold and warm cache (nothing timed here).
    # One command keeps the subprocesses to four; test_cli_compilations counts both formats.
    from benchmarks import bench_cli
    from helpers import FAST_COMPILE

    monkeypatch.setenv("XLA_FLAGS", (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE).strip())  # the subprocesses'

    data = ARENA_EXAMPLE
    out = bench_cli.main(["--quick", "--data", str(data), "--commands", "fit json", "--out", str(tmp_path / "cli.md")])
    text = (tmp_path / "cli.md").read_text(encoding="utf-8")
    assert "load average" in text and "## Goals" in text
    rows = out["rows"]
    assert {r["command"] for r in rows} == {"fit json"}
    assert "`oscar fit` cold (empty cache)" in text  # the cold goal is reported from the one fit row
    for r in rows:
        # six programs per fitted model; this small file also fits the smaller model for the advice
        assert 1 <= r["compilations_cold"] <= 12
        assert r["compilations_warm"] == 0  # warm: every program's stored executable loaded (runtime/executables.py)
    assert len(out["run_all"]) == len(rows) and out["goals"]


def test_bench_processes_agreement_metric():
    from benchmarks.bench_processes import max_abs_difference

    a = '{"x": 1.0, "rows": [{"q": 0.25}, {"q": 0.5}], "name": "m", "ok": true}'
    assert max_abs_difference(a, a) == 0.0
    assert max_abs_difference(a, a.replace("0.25", "0.2500001")) == pytest.approx(1e-7)
    assert max_abs_difference(a, a.replace('"x": 1.0, ', "")) == float("inf")  # a number went missing


def test_floors_study_arithmetic():
    """The floors table: the fit's floor is evaluations × the cheaper evaluation, set against
    scipy ÷ 5; a process goal is "out of reach" only where its floor exceeds its budget."""
    from benchmarks.studies import floors

    fits = [dict(n=100_000, grouped=True, evaluations=9, starts_run=1, fit_ms=27.0, scipy_ms=85.0, low_ms=2.5,
                 full_ms=3.0)]  # floor 9 × 2.5 = 22.5 ms against a budget of 17 ms
    proc = {name: dict(cpu=cpu, cpu_med=cpu, wall=wall, wall_med=wall, codes=[0]) for name, cpu, wall in (
        ("python -c pass", 0.02, 0.02), ("import numpy, pandas", 0.28, 0.28), ("import numpy, jax", 0.48, 0.48),
        ("import numpy, pandas, jax", 0.70, 0.70), ("scipy script, same model", 0.30, 0.30),
        ("warm oscar fit --model oscar", 0.90, 0.90), ("oscar fit, a bad label (exit 2)", 0.31, 0.31),
        ("scipy sweep", 0.50, 0.50), ("warm oscar simulate", 0.98, 0.90), ("cold oscar simulate", 10.98, 7.0))}
    procs = dict(proc, load_start=0.5, load_end=0.5, sweep_programs=5, loads_s=0.2, sweep_call_s=0.45)
    text = floors.report(fits, procs, cores=2, load=(0.5, 0.5))
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in text.splitlines() if line.startswith("| ")}
    assert rows["100,000"][4] == "22.5" and rows["100,000"][7] == "17.0"
    assert rows["100,000"][8:] == ["3.15×", "3.78×"]
    verdict = {k: r[-1] for k, r in rows.items() if k.startswith(("warm `oscar fit`", "a bad", "warm small", "cold small"))}
    assert verdict["warm `oscar fit` ≥ 1.5× the same-model scipy script (CPU)"].startswith("out of reach")  # 0.48 > 0.2
    assert verdict["a bad label's error ≤ 0.3 s (wall)"].startswith("not met; 0.02 s")       # 0.28 under 0.3
    assert verdict["warm small sweep ≥ 0.5× the scipy sweep (CPU)"] == "met"                  # 0.98 ≤ 1.0
    # cold: 0.48 + (10.98 − 0.98) ÷ 5 programs = 2.48 > 1.0
    assert verdict["cold small sweep ≥ 0.5× the scipy sweep (CPU)"].startswith("out of reach")


def test_bench_io_quick(tmp_path, capsys):
    import json

    from benchmarks import bench_io

    assert bench_io.main(["--baseline", str(ROOT), "--sizes", "500", "--formats", "csv", "--rounds", "1",
                          "--no-warmup", "--data-dir", str(tmp_path), "--json", str(tmp_path / "io.json")]) == 0
    runs = json.loads((tmp_path / "io.json").read_text())["500-csv"]
    assert {side: len(v) for side, v in runs.items()} == {"base": 1, "new": 1}
    assert all(r["n_records"] == 500 and r["n_judge"] == 20 for v in runs.values() for r in v)
    assert "| 500 | csv | after (this branch)" in capsys.readouterr().out
