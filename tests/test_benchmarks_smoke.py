"""Smoke tests: the issue-8 benchmarks run end to end on tiny inputs (nothing is timed here).

They check that the scripts keep working and that run_all collects what they produce —
never how fast anything is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_bt, bench_scaling, run_all  # noqa: E402

pytest.importorskip("evalica")


def test_bench_bt_quick(tmp_path):
    out = bench_bt.main(["--quick", "--repeats", "1", "--out", str(tmp_path / "bt.md")])
    text = (tmp_path / "bt.md").read_text(encoding="utf-8")
    assert "evalica" in text and "fast path" in text
    rows = [r for r in out["rows"] if "s" in r]
    assert len(rows) >= 4
    # Every method minimises the same objective: their optima agree to the solvers' tolerances.
    ours = rows[1]["objective"]
    assert all(abs(r["objective"] - ours) < 1e-4 * abs(ours) for r in rows)


def test_bench_scaling_quick(tmp_path):
    out = bench_scaling.main(["--quick", "--records", "400", "--candidates", "", "--model", "bt",
                              "--repeats", "1", "--out-dir", str(tmp_path)])
    kinds = sorted(r["kind"] for r in out["rows"])
    assert kinds == ["oscar", "scipy"], out["rows"]
    assert all("error" not in r for r in out["rows"]), out["rows"]
    for name in ("scaling.md", "scaling.csv", "scaling.png"):
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
        run_all.collect_bootstrap(boot.read_text(encoding="utf-8"), out, False)
        assert len(out.rows) == 2 and out.goals
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
