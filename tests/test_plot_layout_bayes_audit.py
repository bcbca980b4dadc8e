"""The Bayes and audit plots render without overlapping text at 3, 10 and 25 items (issue 18)."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from test_plot_layout import SIZES, check, drawn, names  # noqa: F401  (drawn is a fixture)

from oscar_jax.audit.plot import plot_effects
from oscar_jax.bayes._io import plot_forest, plot_judges


def _bayes_stub(n):
    rng = np.random.default_rng(n)
    q = np.sort(rng.uniform(0.2, 0.8, n))[::-1]
    kappa = rng.uniform(0.2, 1.5, n)
    lb = pd.DataFrame({"candidate": names(n), "q_field": q, "q_field_lo": q - 0.05, "q_field_hi": q + 0.05})
    jt = pd.DataFrame({"judge": names(n, "judge"), "kappa": kappa, "kappa_lo": kappa * 0.8, "kappa_hi": kappa * 1.2,
                       "reference": np.arange(n) == 0})
    return types.SimpleNamespace(leaderboard=lambda ci=None, ci_prob=None: lb, judges=lambda ci=None, ci_prob=None: jt,
                                 interval_level=lambda ci=None, ci_prob=None: 0.95, ci_kind="eti",
                                 prompt_effect="candidate", effective_spec=types.SimpleNamespace(name="OSCAR"))


@pytest.mark.parametrize("n", SIZES)
def test_bayes_forest(drawn, tmp_path, n):  # noqa: F811
    plot_forest(_bayes_stub(n), tmp_path / "forest_q.png")
    check(drawn, n + 3)


@pytest.mark.parametrize("n", SIZES)
def test_bayes_judges(drawn, tmp_path, n):  # noqa: F811
    plot_judges(_bayes_stub(n), tmp_path / "judges_kappa.png")
    check(drawn, n + 3)


@pytest.mark.parametrize("n", SIZES)
def test_audit_effects(drawn, tmp_path, n):  # noqa: F811
    rng = np.random.default_rng(n)
    conds = [f"Retailer {chr(65 + i % 26)}{i}" for i in range(1, n + 1)]
    rows = []
    for metric in ("bad_dr", "mean_prel"):
        for method in ("ttest_runs", "bootstrap_items"):
            for c in conds:
                est = rng.normal(0, 0.02)
                rows.append({"metric": metric, "method": method, "condition": c, "estimate": est,
                             "lo": est - 0.01, "hi": est + 0.01, "baseline": "Retailer A"})
    result = types.SimpleNamespace(effects_frame=pd.DataFrame(rows), reference="Retailer A", ci_prob=0.95,
                                   data=types.SimpleNamespace(attribute="advertiser"))
    plot_effects(result, tmp_path / "effects.png", methods=("ttest_runs", "bootstrap_items"))
    check(drawn, n + 3)
