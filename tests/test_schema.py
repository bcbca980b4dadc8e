"""One result schema: fit, bootstrap and Bayes results use one key per quantity, and no aliases.

Before issue 34 each result built its tables and JSON by hand: ``oscar fit`` candidates
carried ``candidate`` and ``name``, ``score`` and an identical ``logit``; ``oscar
bootstrap`` called the candidate ``name`` and both the score and κ interval ``lo``/``hi``;
``oscar bayes`` had ``mean``, ``s_mean``, ``kappa_mean``; the fit checks were
``diagnostics`` in one command and ``full_fit_checks`` in another. Each of those fails
the checks below.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest

import oscar_jax as oj
from oscar_jax.results.jsonable import to_json
from oscar_jax.results.schema import is_column

MODEL = "j+p"  # γ̄ ≠ 1, so x = γ̄·s and s are different numbers
ROW_KINDS = {"candidates": "candidates", "judges": "judges", "win_prob": "pairs", "rank_distribution": "ranks",
             "judge_comparisons": "judge_pairs"}
ALIASES = {"name", "lo", "hi", "plus", "minus", "logit", "logit_lo", "logit_hi", "elo", "elo_lo", "elo_hi", "mean",
           "sd", "s_mean", "kappa_mean", "gamma_mean", "D_mean", "rank_mean"}
ROOT = {"model", "fitted_model", "estimator", "estimand", "n_records", "n_prompts", "reference_judge", "ci", "ci_prob",
        "scale", "candidates", "judges", "win_prob", "checks", "notes"}
OLD_ROOT = {"diagnostics", "full_fit_checks", "leaderboard", "method", "ci_kind", "rank_probabilities"}


@pytest.fixture(scope="module")
def results():
    design = oj.simulate_design(seed=11, n_prompts=60)
    fit = oj.fit(design, MODEL, warn=False)
    boot = oj.bootstrap(design, MODEL, replicates=25, seed=2, full=fit, warn=False)
    from oscar_jax.bayes import BayesWarning, fit_bayes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)
        post = fit_bayes(design, MODEL, chains=2, warmup=80, draws=60, seed=3, prompt_effect=True, max_tree_depth=5)
    return {"fit": fit, "bootstrap": boot, "bayes": post}


@pytest.fixture(scope="module")
def payloads(results):
    return {k: json.loads(to_json(r.to_dict())) for k, r in results.items()}


def test_every_key_is_registered_and_none_is_an_alias(payloads):
    for name, payload in payloads.items():
        assert ROOT <= set(payload), (name, ROOT - set(payload))
        assert not OLD_ROOT & set(payload), (name, OLD_ROOT & set(payload))
        for section, kind in ROW_KINDS.items():
            for row in payload.get(section, []):
                unknown = [k for k in row if not is_column(kind, k)]
                assert unknown == [], (name, section, unknown)
                assert not ALIASES & set(row), (name, section, ALIASES & set(row))


def test_no_two_keys_of_a_table_hold_the_same_numbers(payloads):
    """An alias shows as two columns with equal values in every row (the old ``logit`` beside ``score``)."""
    for name, payload in payloads.items():
        for section in ROW_KINDS:
            rows = payload.get(section, [])
            if not rows:
                continue
            cols = {k: [r[k] for r in rows] for k in rows[0]
                    if all(isinstance(r[k], float) for r in rows) and len({r[k] for r in rows}) > 1}
            for a, b in itertools.combinations(sorted(cols), 2):
                assert cols[a] != cols[b], (name, section, a, b)


def test_the_same_key_is_the_same_quantity(results, payloads):
    """The bootstrap's point estimates are its full-data fit's, under the same keys; the posterior's
    score, s and κ are on the fit's scale (its intervals cover the fit's point)."""
    fit, boot = payloads["fit"], payloads["bootstrap"]
    by = {k: {r["candidate"]: r for r in p["candidates"]} for k, p in payloads.items()}
    for c, row in by["fit"].items():
        for key in ("score", "s", "q_field", "votes", "rank"):
            assert by["bootstrap"][c][key] == row[key], (c, key)
    for a, b in zip(fit["judges"], boot["judges"]):
        for key in ("judge", "n", "reference", "gamma", "kappa", "beta_pos", "D"):
            assert a[key] == b[key], key
    for a, b in zip(fit["win_prob"], boot["win_prob"]):
        assert (a["a"], a["b"], a["q"]) == (b["a"], b["b"], b["q"])
    assert fit["scale"].keys() == boot["scale"].keys() == payloads["bayes"]["scale"].keys()
    for c, row in by["bayes"].items():  # where the penalized fit is: measured ≤ 0.86 posterior sd apart
        assert abs(row["score"] - by["fit"][c]["score"]) < 3 * row["score_sd"], c
    # the posterior's score is its s times γ̄ draw by draw: same key, same relation as the fit's
    post = results["bayes"]
    x, s = post.population("x"), post.population("s")
    np.testing.assert_allclose(x, post.draws("gamma").mean(axis=-1)[..., None] * s, rtol=1e-12, atol=1e-12)


def test_probabilities_carry_their_monte_carlo_error_and_model(payloads):
    post = payloads["bayes"]
    assert "prompt × candidate effect" in post["estimand"]["model"] and "NUTS" in post["estimand"]["model"]
    for cand in post["candidates"]:
        assert cand["p_best_mcse"] is not None and cand["p_best_mcse"] >= 0
        if cand["p_best"] in (0.0, 1.0):
            assert cand["p_best_mcse"] == 0.0  # a share that never varies has no Monte Carlo error
    for row in post["win_prob"]:
        assert 0 <= row["q_mcse"] < row["q_sd"]
    for row in post["rank_distribution"]:
        assert all(row[f"p_rank_{r}_mcse"] is not None for r in range(1, len(post["candidates"]) + 1))
    assert all(r["p_kappa_greater_mcse"] is not None for r in post["judge_comparisons"])
