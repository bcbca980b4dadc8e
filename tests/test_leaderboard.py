"""Arena-style leaderboards: Elo mapping, anchored intervals, Rank (UB), draw-based CIs."""

from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import oscar_jax as oj
from oscar_jax.report.leaderboard import (ELO_SLOPE, arena_leaderboard, arena_text, fmt_pm, judge_intervals, parse_anchor, rank_ub,
    score_function)
from oscar_jax.report.draw_sources import interval_source, theta_draws
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
# Closed-form identities evaluated in float64 on O(1) numbers: rounding only.
EXACT = 1e-9


@pytest.fixture(scope="module")
def result():
    return oj.fit(ARENA_EXAMPLE, "j+p")


def test_elo_is_affine_in_average_judge_logit_and_gives_q(result):
    board = arena_leaderboard(result, scale="elo").set_index("candidate")
    names = list(result.design.candidates)
    x = result.gamma_bar * result.scores
    elo = board.loc[names, "elo"].to_numpy()
    np.testing.assert_allclose(elo, 1000.0 + 400.0 / math.log(10.0) * x, rtol=0, atol=EXACT)
    # Arena's reading of ratings: P(i beats j) = 1 / (1 + 10^((R_j − R_i)/400)) = q_ij.
    q = 1.0 / (1.0 + 10.0 ** ((elo[None, :] - elo[:, None]) / 400.0))
    np.testing.assert_allclose(q, result.win_prob, rtol=0, atol=EXACT)
    assert board["score"].equals(board["elo"])
    # Unanchored, the Elo interval is the logit interval mapped by the same affine map.
    np.testing.assert_allclose(board.elo_hi - board.elo, ELO_SLOPE * (board.logit_hi - board.logit), atol=EXACT)


def test_anchoring_recomputes_the_contrast_variance(result):
    names = list(result.design.candidates)
    a = names.index("gpt-4-0314")
    cov = np.asarray(result.covariance("sandwich"))
    jac = np.asarray(jax.jacfwd(score_function(result.layout))(jnp.asarray(result.theta)))
    v = jac @ cov @ jac.T  # covariance of the unanchored scores x
    want = np.sqrt(np.maximum(np.diag(v) + v[a, a] - 2.0 * v[:, a], 0.0))
    board = arena_leaderboard(result, scale="elo", anchor="gpt-4-0314=1114").set_index("candidate")
    plain = arena_leaderboard(result, scale="elo").set_index("candidate")
    np.testing.assert_allclose(board.loc[names, "se_logit"].to_numpy(), want, rtol=1e-10, atol=EXACT)
    assert board.loc["gpt-4-0314", "elo"] == pytest.approx(1114.0, abs=EXACT)
    assert board.loc["gpt-4-0314", "plus"] == 0.0 and board.loc["gpt-4-0314", "minus"] == 0.0
    # Points move by a constant; intervals do not: the anchor's variance lands on the others.
    shift = board.elo - plain.loc[board.index, "elo"]
    np.testing.assert_allclose(shift, shift.iloc[0], atol=EXACT)
    others = [n for n in names if n != "gpt-4-0314"]
    width = (board.loc[others, "elo_hi"] - board.loc[others, "elo_lo"]).to_numpy()
    plain_width = (plain.loc[others, "elo_hi"] - plain.loc[others, "elo_lo"]).to_numpy()
    assert np.all(np.abs(width - plain_width) > 1.0)  # Elo points; a shift would leave them equal
    assert board.attrs["anchor"] == "gpt-4-0314" and board.attrs["anchor_value"] == 1114.0


def test_rank_ub_rule():
    lo, hi = np.array([3.0, 1.0, 0.0, -5.0]), np.array([5.0, 4.0, 2.0, -1.0])
    # #(lower bounds above my upper bound): none, none, one (3 > 2), all three.
    assert rank_ub(lo, hi).tolist() == [1, 1, 2, 4]


def test_board_columns_order_and_rank_ub(result):
    board = arena_leaderboard(result, scale="logit", ci="model", ci_prob=0.9)
    assert board.score.is_monotonic_decreasing
    assert board["rank"].tolist() == list(range(1, len(board) + 1))
    assert board.rank_ub.tolist() == rank_ub(board.lo, board.hi).tolist()
    z = norm.ppf(0.95)
    np.testing.assert_allclose(board.hi - board.score, z * board.se_logit, atol=EXACT)
    assert board.votes.tolist() == [result.design.counts["candidate_votes"][c] for c in board.candidate]
    text = arena_text(board)
    assert "90% CI (+x/−y)" in text and "Rank (UB)" in text and "model-based" in text
    assert "assumes independent records; too narrow under prompt dependence" in text


def test_text_has_arena_columns_and_pm_intervals(result):
    text = arena_text(arena_leaderboard(result, scale="elo", anchor="gpt-4-0314=1114"))
    header = text.splitlines()[2]
    for column in ("Rank (UB)", "Model", "Score", "95% CI (+x/−y)", "Votes"):
        assert column in header
    assert "(anchor)" in text and "anchored: gpt-4-0314 = 1114" in text
    assert fmt_pm(10.0, 8.5, 11.25) == "+1.2/−1.5"


def test_parse_anchor():
    assert parse_anchor("mixtral=1114") == ("mixtral", 1114.0)
    assert parse_anchor("mixtral") == ("mixtral", None)
    assert parse_anchor("org/model-v1=-0.5") == ("org/model-v1", -0.5)
    for bad, message in (("m=", "empty"), ("m=abc", "not a number"), ("=3", "NAME or NAME=VALUE")):
        with pytest.raises(OscarInputError, match=message):
            parse_anchor(bad)


def test_unknown_anchor_lists_candidates(result):
    with pytest.raises(OscarInputError, match=r"anchor candidate 'nobody' is not in the data; available: .*claude"):
        arena_leaderboard(result, anchor="nobody")


def test_draw_intervals_are_percentiles_around_the_full_data_fit(result):
    rng = np.random.default_rng(0)
    theta = result.theta
    u = result.layout.theta_blocks["u"]
    # Perturb only the score coordinates u: x = γ̄ s is then linear in the draws, so the
    # percentile interval of Gaussian draws must reproduce the Wald interval.
    cov_u = np.zeros((len(theta), len(theta)))
    cov_u[u, u] = np.asarray(result.covariance("sandwich"))[u, u]
    chol = np.linalg.cholesky(cov_u[u, u])
    draws = np.tile(theta, (4000, 1))
    draws[:, u] += rng.standard_normal((4000, chol.shape[0])) @ chol.T
    board = arena_leaderboard(result, ci="bootstrap", scale="logit", draws=draws).set_index("candidate")
    names = list(board.index)
    order = [result.design.candidates.index(n) for n in names]
    fn = score_function(result.layout)
    x = np.asarray(fn(jnp.asarray(theta)))[order]
    jac = np.asarray(jax.jacfwd(fn)(jnp.asarray(theta)))[order]
    se = np.sqrt(np.diag(jac @ cov_u @ jac.T))
    np.testing.assert_allclose(board.score, x, atol=EXACT)
    # Monte-Carlo error of a 2.5% quantile with B = 4000 is ≈ 0.04 σ; allow 0.15 σ.
    for side, sign in (("lo", -1.0), ("hi", 1.0)):
        err = np.abs(board[side].to_numpy() - (x + sign * 1.959964 * se)) / se
        assert np.all(err < 0.15), (side, err)
    assert board.attrs["n_draws"] == 4000
    # Shifted draws move the interval, never the point estimate (the full-data fit).
    shifted = arena_leaderboard(result, ci="bootstrap", scale="logit", draws=draws + 0.5).set_index("candidate")
    np.testing.assert_allclose(shifted.loc[names, "score"], x, atol=EXACT)
    assert np.any(np.abs(shifted.loc[names, "lo"].to_numpy() - board.lo.to_numpy()) > 0.01)
    with pytest.raises(OscarInputError, match=r"draws must have shape"):
        arena_leaderboard(result, ci="bayes", draws=draws[:, :2])
    with pytest.raises(OscarInputError, match=r"needs draws="):
        arena_leaderboard(result, ci="bootstrap")


def test_interval_sources_are_the_library_functions():
    import oscar_jax.bayes

    assert interval_source("bootstrap") is oj.bootstrap
    assert interval_source("bayes") is oscar_jax.bayes.fit_bayes
    with pytest.raises(OscarInputError, match=r"Requested ci 'sandwich' but it must be one of"):
        interval_source("sandwich")


def test_judge_intervals_are_wald_on_the_coefficients(result):
    table = judge_intervals(result)
    se = np.sqrt(np.diag(result.covariance("sandwich")))[result.layout.theta_blocks["pos"]]
    np.testing.assert_allclose(table.beta_pos_hi - table.beta_pos, result.z * se, atol=EXACT)
    assert table.beta_len_lo.isna().all()  # no lengths in the data: J+P has no length term


def test_draws_from_a_bootstrap_leave_out_failed_replicates(result):
    """θ draws of a BootstrapResult are its replicates that passed B.3; failures are counted."""
    import dataclasses

    boot = oj.bootstrap(result.design, result.spec, replicates=6, seed=0, full=result)
    core = boot.batch.core
    point_ok = np.asarray(core.point_ok, bool).copy()
    point_ok[2] = False
    boot = dataclasses.replace(boot, batch=dataclasses.replace(boot.batch, core=core._replace(point_ok=point_ok)))
    draws, failed = theta_draws(boot, result.layout, "bootstrap")
    assert draws.shape == (int(point_ok.sum()), result.layout.n_theta) and failed == 6 - int(point_ok.sum())
    np.testing.assert_array_equal(draws, np.asarray(core.theta)[point_ok])
    with pytest.raises(TypeError, match="BootstrapResult or a BayesResult"):
        theta_draws(np.zeros((3, result.layout.n_theta)), result.layout, "bootstrap")
