"""Bayesian OSCAR on MT-Bench (shared data): agreement with the point fit and with its sandwich."""

import numpy as np
import pytest

import oscar_jax as oj
from oscar_jax.bayes import fit_bayes

from helpers import REFERENCE_JUDGE, shared_data


# ----------------------------------------------------------------------------- shared data
# The posterior mean and the penalized estimate (the posterior mode) differ by the
# posterior's skew: on MT-Bench the overall score scale is pinned by the reference judge's
# ~500 records, and the measured gap is ≤ 0.4 posterior sd for s. Near-random judges
# (γ̂ ≈ 0.05–0.08) have a long prior-dominated left tail in log γ, so their posterior mean
# γ lies below γ̂ by up to ~0.9 posterior sd, a small absolute gap (GAMMA_ATOL).
S_SD_TOL = 0.6
GAMMA_SD_TOL = 1.2
GAMMA_ATOL = 0.05


@pytest.mark.data
@pytest.mark.slow
def test_mtbench_posterior_is_close_to_point_fit_and_converges():
    path = shared_data("mtbench")
    design = oj.fit.__globals__["as_design"](path, reference_judge=REFERENCE_JUDGE)
    point = oj.fit(design, "oscar")
    # the plain model: its scores are on the point fit's scale (the prompt effect's are prompt-conditional)
    post = fit_bayes(design, "oscar", prompt_effect=False)  # 4 chains × (1000 + 1000); warns if poor
    diag = post.diagnostics
    assert diag["max_rhat"] < 1.01 and diag["divergences"] == 0, diag
    s = post.draws("s").reshape(-1, design.n_cand)
    gap_s = np.abs(s.mean(0) - point.scores) / s.std(0)
    assert gap_s.max() < S_SD_TOL, gap_s
    g = post.draws("gamma").reshape(-1, design.n_judge)
    free = np.arange(design.n_judge) != design.reference
    gap_g = np.abs(g.mean(0) - point.gamma)[free]
    assert np.all((gap_g < GAMMA_SD_TOL * g.std(0)[free]) | (gap_g < GAMMA_ATOL)), gap_g
    # same leader as the point fit
    assert post.leaderboard().candidate[0] == point.leaderboard().candidate[0]




@pytest.mark.data
@pytest.mark.slow
def test_mtbench_prompt_candidate_interval_has_the_sandwich_width():
    """Issue 19: on MT-Bench the prompt × candidate posterior's 95% interval for gpt-4's q against
    the field is within ±25% of the prompt-cluster sandwich's width (the plain model and the old
    slot shift gave about 0.45–0.5), and gpt-4 leads.

    A short run keeps this in the suite: 2 chains × (300 + 200) cost about 40% of the former
    4 × (300 + 300) (measured 2026-12-04 under load: 284 CPU s; ratio 1.11, 0 divergences,
    P(gpt-4 best) 0.92; 4 × (300 + 300) gave 0.99, the defaults 0.95 and P(best) 0.946 with
    ESS 776). Its ESS is small (≈ 10–100), so P(best) is checked at ≥ 0.8, about 3 of its
    Monte Carlo standard errors (≈ 0.03) below the defaults' value."""
    path = shared_data("mtbench")
    from oscar_jax.fit import as_design

    design = as_design(path)
    point = oj.fit(design, "oscar", warn=False)
    sw = point.leaderboard("sandwich").set_index("candidate")
    post = fit_bayes(design, "oscar", chains=2, warmup=300, draws=200, seed=0, warn=False, show_progress=False)
    assert post.prompt_effect == "candidate"  # the default on MT-Bench
    lb = post.leaderboard().set_index("candidate")
    ratio = (lb.q_field_hi - lb.q_field_lo)["gpt-4"] / (sw.q_field_hi - sw.q_field_lo)["gpt-4"]
    assert 0.75 <= ratio <= 1.25, ratio
    assert post.diagnostics["divergences"] == 0
    assert lb.index[0] == "gpt-4" and post.p_best["gpt-4"] > 0.8
