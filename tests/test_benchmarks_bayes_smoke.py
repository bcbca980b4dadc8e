"""Smoke tests of the Bayesian, SVI and audit benchmarks: they run end to end on tiny inputs
and their outputs parse (nothing is timed here; the other benchmarks: test_benchmarks_smoke.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_audit, bench_bayes, run_all  # noqa: E402
from benchmarks.studies import bayes_coverage  # noqa: E402


def test_bench_bayes_quick(capsys):
    assert bench_bayes.main(["--quick"]) == 0
    text = capsys.readouterr().out
    parsed = run_all.Outcome("bayes", "ok")
    run_all.collect_bayes(text, parsed, True)
    assert parsed.rows


def test_bench_audit_quick(tmp_path):
    out = tmp_path / "audit.md"
    bench_audit.main(["--quick", "--no-bayes", "--out", str(out)])
    text = out.read_text(encoding="utf-8")
    assert "quick smoke run" in text and "ttest_runs" in text


def test_bayes_coverage_study_quick(tmp_path):
    import pandas as pd

    bayes_coverage.main(["--quick", "--out", str(tmp_path / "coverage.csv")])
    frame = pd.read_csv(tmp_path / "bayes_coverage_quick.csv")
    # one replicate: both point intervals and both Bayesian models (+ the prompt-conditional q)
    assert set(frame.method) == {"point_sandwich", "point_model", "bayes_plain", "bayes_prompt",
                                 "bayes_prompt_conditional"}, frame.method
    assert frame.coverage.between(0, 1).all() and (frame.mean_width > 0).all()
    assert (frame[frame.method == "bayes_prompt"].sigma_mean > 0).all()


def test_bench_svi_quick_compares_with_nuts():
    from benchmarks import bench_svi

    out = bench_svi.main(["--quick"])
    assert out["run_all"][0]["package_s"] > 0
    for target in ("q", "kappa", "D"):
        c = out["compare"][target]
        # 300 records, 2 × 100 NUTS draws, 500 SVI steps: noisy, but a guide with a wrong
        # location or scale lands several sd away or with no overlap at all
        assert c["max_dmean_over_sd"] < 1.5 and 0.3 < c["width_ratio"] < 2.0 and c["coverage_ratio"] > 0.4, c
