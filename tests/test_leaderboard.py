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
from oscar_jax.report.leaderboard import arena_leaderboard, arena_text, fmt_pm
from oscar_jax.infer.sandwich import targets
from oscar_jax.results.boards import ELO_SLOPE, as_draws, parse_anchor, rank_ub
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
# Closed-form identities evaluated in float64 on O(1) numbers: rounding only.
EXACT = 1e-9


def score_function(layout):
    """θ ↦ x(θ), the average-judge scores, as JAX traces it (the boards' host Jacobians are checked against it)."""
    return lambda theta: targets(theta, layout).x


@pytest.fixture(scope="module")
def result():
    return oj.fit(ARENA_EXAMPLE, "j+p")


def test_elo_is_affine_in_average_judge_logit_and_gives_q(result):
    board = arena_leaderboard(result, scale="elo").set_index("candidate")
    logit = arena_leaderboard(result, scale="logit").set_index("candidate").loc[board.index]
    names = list(result.design.candidates)
    x = result.gamma_bar * result.scores
    elo = board.loc[names, "score"].to_numpy()
    np.testing.assert_allclose(elo, 1000.0 + 400.0 / math.log(10.0) * x, rtol=0, atol=EXACT)
    # Arena's reading of ratings: P(i beats j) = 1 / (1 + 10^((R_j − R_i)/400)) = q_ij.
    q = 1.0 / (1.0 + 10.0 ** ((elo[None, :] - elo[:, None]) / 400.0))
    np.testing.assert_allclose(q, result.win_prob, rtol=0, atol=EXACT)
    # Unanchored, the Elo interval is the logit interval mapped by the same affine map.
    np.testing.assert_allclose(board.score_hi - board.score, ELO_SLOPE * (logit.score_hi - logit.score), atol=EXACT)


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
    anchor = board.loc["gpt-4-0314"]
    assert anchor.score == pytest.approx(1114.0, abs=EXACT)
    assert anchor.score_hi - anchor.score == 0.0 and anchor.score - anchor.score_lo == 0.0
    # Points move by a constant; intervals do not: the anchor's variance lands on the others.
    shift = board.score - plain.loc[board.index, "score"]
    np.testing.assert_allclose(shift, shift.iloc[0], atol=EXACT)
    others = [n for n in names if n != "gpt-4-0314"]
    width = (board.loc[others, "score_hi"] - board.loc[others, "score_lo"]).to_numpy()
    plain_width = (plain.loc[others, "score_hi"] - plain.loc[others, "score_lo"]).to_numpy()
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
    assert board.rank_ub.tolist() == rank_ub(board.score_lo, board.score_hi).tolist()
    z = norm.ppf(0.95)
    np.testing.assert_allclose(board.score_hi - board.score, z * board.se_logit, atol=EXACT)
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
    for side, sign in (("score_lo", -1.0), ("score_hi", 1.0)):
        err = np.abs(board[side].to_numpy() - (x + sign * 1.959964 * se)) / se
        assert np.all(err < 0.15), (side, err)
    assert board.attrs["n_draws"] == 4000
    # Shifted draws move the interval, never the point estimate (the full-data fit).
    shifted = arena_leaderboard(result, ci="bootstrap", scale="logit", draws=draws + 0.5).set_index("candidate")
    np.testing.assert_allclose(shifted.loc[names, "score"], x, atol=EXACT)
    assert np.any(np.abs(shifted.loc[names, "score_lo"].to_numpy() - board.score_lo.to_numpy()) > 0.01)
    with pytest.raises(OscarInputError, match=r"draws must have shape"):
        arena_leaderboard(result, ci="bayes", draws=draws[:, :2])
    with pytest.raises(OscarInputError, match=r"needs draws="):
        arena_leaderboard(result, ci="bootstrap")


def test_a_fit_with_bootstrap_draws_is_the_bootstrap_s_board(result):
    """One path: the fit's tables with a bootstrap's draws (``oscar fit --ci bootstrap``) give the
    bootstrap's own intervals, bit for bit, on every scale; the point estimates stay the fit's."""
    boot = oj.bootstrap(result.design, result.spec, replicates=20, seed=1, full=result)
    for scale, anchor in (("logit", None), ("elo", "gpt-4-0314=1114"), ("winrate", "gpt-4-0314")):
        via_fit = result.leaderboard(scale=scale, anchor=anchor, draws=boot).set_index("candidate")
        own = boot.leaderboard(scale=scale, anchor=anchor).set_index("candidate").loc[via_fit.index]
        cols = ["score", "score_lo", "score_hi", "rank_ub", "s", "s_lo", "s_hi", "q_field", "q_field_lo", "q_field_hi"]
        np.testing.assert_array_equal(via_fit[cols].to_numpy(), own[cols].to_numpy())
        assert via_fit.attrs["ci"] == own.attrs["ci"] == "bootstrap" and via_fit.attrs["n_draws"] == 20
    wm = result.win_matrix(draws=boot)
    np.testing.assert_array_equal(wm[["q", "q_lo", "q_hi"]].to_numpy(), boot.win_matrix()[["q", "q_lo", "q_hi"]].to_numpy())
    assert wm.se_logit.isna().all()  # draw intervals have no delta-method SE
    np.testing.assert_array_equal(result.judges(draws=boot)[["kappa_lo", "kappa_hi"]].to_numpy(),
                                  boot.judges()[["kappa_lo", "kappa_hi"]].to_numpy())


def test_judge_intervals_are_wald_on_the_coefficients(result):
    table = result.judges()
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
    draws = boot.theta_draws()
    assert draws.theta.shape == (int(point_ok.sum()), result.layout.n_theta)
    assert draws.n_failed == 6 - int(point_ok.sum()) and draws.kind == "percentile" and draws.source == "bootstrap"
    np.testing.assert_array_equal(draws.theta, np.asarray(core.theta)[point_ok])
    np.testing.assert_array_equal(draws.targets.x, np.asarray(boot.batch.targets.x)[point_ok])
    with pytest.raises(OscarInputError, match="draws must have shape"):
        as_draws(np.zeros((3, 2)), result.layout)


def test_a_board_asked_for_again_is_the_same_and_a_copy(result):
    # A fit makes each (interval, level, scale, anchor) board once (oscar fit shows one board as
    # its table, JSON and advice): asked again it is equal, including its attrs, and a caller's
    # change to one copy reaches neither the fit nor the next copy; another scale or anchor is
    # another board.
    name = result.design.candidates[0]
    first = result.leaderboard(scale="elo", anchor=(name, 1000.0))
    again = result.leaderboard(scale="elo", anchor=[name, 1000.0])
    assert first.equals(again) and first.attrs == again.attrs and first is not again
    first.loc[:, "score"] = np.nan
    first.attrs["scale"] = "changed"
    third = result.leaderboard(scale="elo", anchor=(name, 1000.0))
    assert third.equals(again) and third.attrs == again.attrs
    assert not result.leaderboard(scale="elo", anchor=(name, 1200.0)).equals(third)
    assert not result.leaderboard().equals(third)
