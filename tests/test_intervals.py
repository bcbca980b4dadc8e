"""The one interval/rank/JSON toolkit (oscar_jax.results.intervals, oscar_jax.results.jsonable) and the tables' one signature."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.results.intervals import draw_ranks, interval_request, p_best, percentiles, rank_probabilities
from oscar_jax.results.jsonable import clean, finite_or_none, records, to_json
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("method", ["linear", "inverted_cdf"])
def test_percentiles_are_nan_ignoring_quantiles(method):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((301, 4, 3))
    lo, hi = percentiles(x, 0.9, method=method)
    alpha = 0.5 * (1.0 - 0.9)
    ref = np.nanquantile(x, [alpha, 1.0 - alpha], axis=0, method=method)
    assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1])
    x[:7, 0, 0] = np.nan   # failed draws are ignored …
    x[:, 1, 1] = np.nan    # … and a quantity without any draw stays NaN
    lo, hi = percentiles(x, 0.9, method=method)
    assert lo[0, 0] == np.nanquantile(x[:, 0, 0], alpha, method=method)
    assert np.isnan(lo[1, 1]) and np.isnan(hi[1, 1])
    lo, hi = percentiles(x[:0], 0.9)
    assert lo.shape == (4, 3) and np.isnan(lo).all() and np.isnan(hi).all()


def test_ranks_rank_probabilities_and_p_best():
    s = np.array([[3.0, 1.0, 2.0], [1.0, 3.0, 2.0], [2.0, 2.0, 0.0]])
    ranks = draw_ranks(s)
    np.testing.assert_array_equal(ranks, [[1, 3, 2], [3, 1, 2], [1, 2, 3]])  # ties: the first listed ranks higher
    probs = rank_probabilities(ranks)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0)
    np.testing.assert_allclose(probs[:, 0], p_best(ranks))
    assert np.isnan(rank_probabilities(ranks[:0])).all() and np.isnan(p_best(ranks[:0])).all()


def test_interval_request_takes_kind_level_and_the_old_positional_level():
    assert interval_request(None, None, kinds=("sandwich", "model"), default_prob=0.95) == ("sandwich", 0.95)
    assert interval_request("model", 0.8, kinds=("sandwich", "model"), default_prob=0.95) == ("model", 0.8)
    assert interval_request(0.9, None, kinds=("hdi",), default_prob=0.95) == ("hdi", 0.9)
    with pytest.raises(OscarInputError, match="must be one of"):
        interval_request("bootstrap", None, kinds=("sandwich", "model"), default_prob=0.95)
    with pytest.raises(OscarInputError, match="give one"):
        interval_request(0.9, 0.8, kinds=("hdi",), default_prob=0.95)
    with pytest.raises(OscarInputError, match="strictly between 0 and 1"):
        interval_request(None, 1.5, kinds=("hdi",), default_prob=0.95)


def test_json_values_are_strict():
    assert clean(np.float64("nan")) is None and clean(np.int64(3)) == 3 and clean(np.bool_(True)) is True
    assert finite_or_none(np.inf) is None and finite_or_none(np.float32(0.5)) == 0.5
    frame = pd.DataFrame({"a": ["x", "y"], "v": [1.5, np.nan], "n": np.array([1, 2])})
    assert records(frame) == [{"a": "x", "v": 1.5, "n": 1}, {"a": "y", "v": None, "n": 2}]
    assert json.loads(to_json({"x": [float("inf"), np.float64(2.0)], "p": DATA})) == {"x": [None, 2.0], "p": str(DATA)}


@pytest.fixture(scope="module")
def result():
    return oj.fit(ARENA_EXAMPLE, "j+p")


def test_fit_tables_take_the_level(result):
    at_90 = oj.fit(result.design, result.spec, ci_prob=0.9)
    for name in ("leaderboard", "judges"):
        pd.testing.assert_frame_equal(getattr(result, name)(ci_prob=0.9), getattr(at_90, name)())
        pd.testing.assert_frame_equal(getattr(result, name)("model"), getattr(result, name)(ci="model"))
    pd.testing.assert_frame_equal(result.win_matrix("model", ci_prob=0.9), at_90.win_matrix("model"))
    with pytest.raises(OscarInputError, match="must be one of"):
        result.leaderboard("bootstrap")


def test_bootstrap_tables_take_the_same_signature(result):
    boot = oj.bootstrap(result.design, result.spec, replicates=6, seed=0, full=result)
    at_80 = dataclasses.replace(boot, ci_prob=0.8)
    for name in ("leaderboard", "judges", "win_matrix"):
        pd.testing.assert_frame_equal(getattr(boot, name)(ci_prob=0.8), getattr(at_80, name)())
        pd.testing.assert_frame_equal(getattr(boot, name)("percentile"), getattr(boot, name)())
    with pytest.raises(OscarInputError, match="must be one of"):
        boot.leaderboard("sandwich")


@pytest.mark.parametrize("model", ["bt", "j", "oscar"])
def test_host_targets_and_their_ses_equal_the_compiled_ones(model):
    """A fit's targets and delta-method SEs run in host numpy (complex-step Jacobian through
    the one definition of the targets); they equal the compiled forward-mode ones to rounding.
    A judge left out of γ̄ (weight 0) must change the SEs: the weights reach the Jacobian."""
    import jax

    from oscar_jax.infer.sandwich import delta_se, host_target_se, host_targets, targets

    res = oj.fit(oj.simulate_design(seed=2, n_prompts=150), model, warn=False)
    theta, layout, cov = res.theta, res.layout, res.covariance("sandwich")
    weights = np.ones(layout.n_judge)
    weights[-1] = 0.0
    want = jax.jit(lambda t: targets(t, layout, weights))(theta)
    want_se = jax.jit(lambda t, c: delta_se(lambda th: targets(th, layout, weights), t, c))(theta, cov)
    got, got_se = host_targets(theta, layout, weights), host_target_se(theta, cov, layout, weights)
    for name in want._fields:
        w, g = np.asarray(getattr(want, name)), getattr(got, name)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=name)
        w, g = np.asarray(getattr(want_se, name)), getattr(got_se, name)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14, err_msg=name)
    if layout.structure.learn_gamma:  # weights matter only where the judges' γ differ
        even = host_target_se(theta, cov, layout, np.ones(layout.n_judge))
        assert np.max(np.abs(even.x - got_se.x)) > 1e-6 * np.max(got_se.x)
