"""Bayesian OSCAR's sampler: determinism per seed, datasets vmapped, diagnostics, SBC."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import oscar_jax as oj
from oscar_jax.bayes import (BayesWarning, NutsSettings, Priors, fit_bayes, model_data, prior_scales,
                             sample_posterior_jit)
from oscar_jax.infer.derivatives import cell_probabilities
from oscar_jax.model.design import DesignArrays
from oscar_jax.model.params import Layout
from oscar_jax.infer.selection import column_mask
from oscar_jax.model.spec import Structure

from helpers import model_layout


@pytest.fixture(scope="module")
def sim_design():
    return oj.simulate_design(seed=3, n_prompts=60)


def test_same_seed_same_draws_other_seed_other_draws(sim_design):
    layout, spec = model_layout(sim_design, "j+p")
    mask = np.asarray(column_mask(sim_design.arrays, sim_design.arrays.stats, layout))
    data = model_data(sim_design.arrays, mask, Priors().resolved(spec.ridge), layout, prompt_effect=False)
    st = NutsSettings(chains=2, warmup=20, draws=10)
    run = lambda s: sample_posterior_jit(jax.random.PRNGKey(s), data, layout=layout, n_clusters=None, settings=st)  # noqa: E731
    a, b, c = run(7), run(7), run(8)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.theta, c.theta)
    assert a.theta.dtype == jnp.float64


def test_sample_many_is_sample_posterior_per_dataset(sim_design):
    from oscar_jax.bayes import sample_many

    layout, spec = model_layout(sim_design, "j+p")
    mask = np.asarray(column_mask(sim_design.arrays, sim_design.arrays.stats, layout))
    data = model_data(sim_design.arrays, mask, Priors().resolved(spec.ridge), layout, prompt_effect=False)
    st = NutsSettings(chains=2, warmup=20, draws=10)  # the program of the test above, traced once per module
    stats = np.stack([np.asarray(data.stats), 2.0 * np.asarray(data.stats)])  # a dataset and its doubled copy
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    many = sample_many(keys, data._replace(stats=stats), layout=layout, n_clusters=None, settings=st)
    for b in range(2):
        one = sample_posterior_jit(keys[b], data._replace(stats=stats[b]), layout=layout, n_clusters=None, settings=st)
        np.testing.assert_allclose(np.asarray(many.theta[b]), np.asarray(one.theta), rtol=1e-7, atol=1e-9)  # vmap rounds differently
    assert not np.allclose(many.theta[0], many.theta[1])


def test_poor_diagnostics_warn(sim_design):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the program of test_same_seed_same_draws_other_seed_other_draws, traced once per module:
        # show_progress=False, as sample_posterior_jit's default (progress is a static setting)
        post = fit_bayes(sim_design, "j+p", chains=2, warmup=20, draws=10, seed=7, prompt_effect=False,
                         show_progress=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, BayesWarning)]
    assert not post.diagnostics["ok"] and messages == [f"J+P posterior: {m}" for m in post.diagnostics["messages"]]
    assert any("effective sample size" in m for m in messages)


# ----------------------------------------------------------------------------- simulation-based calibration
# Talts et al. (2018): if data are drawn from the prior predictive and the sampler is
# right, the rank of the true value among L independent posterior draws is uniform on
# {0..L}. Tiny problem (4 candidates, 3 judges, J+P: 8 parameters, 36 cells of 8 records);
# 100 replications, ranks among 99 thinned draws in 10 bins of 10 ranks.
SBC_REPS = 100
SBC_DRAWS = 99
SBC_BINS = 10
# Family-wise 1% level, Bonferroni over the 8 parameters + 2 derived targets: with a
# fixed seed the test is deterministic; the level is the tolerance of the uniformity test.
SBC_ALPHA = 0.01


def _tiny_design(n_cand=4, n_judge=3):
    pairs = [(i, j) for i in range(n_cand) for j in range(n_cand) if i != j]
    a = np.tile([p[0] for p in pairs], n_judge)
    b = np.tile([p[1] for p in pairs], n_judge)
    k = np.repeat(np.arange(n_judge), len(pairs))
    n = len(a)
    return DesignArrays(a=jnp.asarray(a, jnp.int32), b=jnp.asarray(b, jnp.int32), k=jnp.asarray(k, jnp.int32),
                        z=jnp.zeros((n, 2)), stats=jnp.zeros((n, 3)), pair_cell=jnp.arange(n, dtype=jnp.int32),
                        pair_g=jnp.arange(n, dtype=jnp.int32), pair_stats=jnp.zeros((n, 3)))


@pytest.mark.slow
def test_simulation_based_calibration_ranks_are_uniform():
    arrays = _tiny_design()
    layout = Layout(4, 3, 0, 0, Structure(("pos",), True, "fractional"))
    # user-set priors, tight enough that prior-predictive data are not separated
    priors = Priors(u=1.0, v=0.5, pos=0.5).resolved(0.05)
    sd = prior_scales(priors, layout)
    k_theta, k_y, k_mc = jax.random.split(jax.random.PRNGKey(2026), 3)
    truth = jax.random.normal(k_theta, (SBC_REPS, layout.n_theta)) * sd
    p = jax.vmap(lambda t: cell_probabilities(t, arrays, layout))(truth)
    n_rec = 8.0
    y = jax.random.binomial(k_y, n_rec, p).astype(jnp.float64)
    stats_all = jnp.stack([jnp.full_like(y, n_rec), y, jnp.zeros_like(y)], axis=-1)
    data = model_data(arrays, np.ones(layout.n_theta), priors, layout, prompt_effect=False)
    st = NutsSettings(chains=2, warmup=200, draws=300, target_accept=0.9)
    keys = jax.random.split(k_mc, SBC_REPS)

    def derived(theta):  # q_01 at γ̄ and log γ_1 − log γ_2 (judge comparison)
        s = jnp.asarray(layout.helmert) @ theta[..., layout.theta_blocks["u"]].T
        v = theta[..., layout.theta_blocks["v"]]
        gbar = (1 + jnp.exp(v).sum(-1)) / 3
        return jnp.stack([jax.nn.sigmoid(gbar * (s[0] - s[1])), v[..., 0] - v[..., 1]], axis=-1)

    ranks, divergences = [], 0
    for r in range(SBC_REPS):
        out = sample_posterior_jit(keys[r], data._replace(stats=stats_all[r]), layout=layout, n_clusters=None, settings=st)
        divergences += int(out.diverging.sum())
        draws = np.asarray(out.theta)[:, ::6].reshape(-1, layout.n_theta)[:SBC_DRAWS]  # thin: ≈ independent
        draws = np.concatenate([draws, np.asarray(derived(jnp.asarray(draws)))], axis=1)
        true = np.concatenate([np.asarray(truth[r]), np.asarray(derived(truth[r][None]))[0]])
        ranks.append((draws < true).sum(axis=0))
    ranks = np.asarray(ranks)                       # (reps, 10) in 0..99
    counts = np.stack([np.bincount(ranks[:, j] * SBC_BINS // (SBC_DRAWS + 1), minlength=SBC_BINS)
                       for j in range(ranks.shape[1])])
    pvalues = stats.chisquare(counts, axis=1).pvalue
    assert divergences == 0
    assert pvalues.min() > SBC_ALPHA / len(pvalues), (counts, pvalues)




def test_one_chain_reports_rhat_as_not_available(sim_design, tmp_path, capsys):
    # Issue 13: R-hat is undefined with one chain; np.nanargmax on an all-NaN array crashed.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)
        # the one-chain program of test_sample_many_is_sample_posterior_per_dataset: traced once
        post = fit_bayes(sim_design, "j+p", chains=1, warmup=20, draws=10, seed=3, prompt_effect=False,
                         show_progress=False)
    assert post.diagnostics["max_rhat"] is None and post.diagnostics["min_ess"] is not None
    from oscar_jax.report.text import fmt_or as _fmt_or

    assert _fmt_or(post.diagnostics["max_rhat"], ".4f", "n/a (one chain)") == "n/a (one chain)"


