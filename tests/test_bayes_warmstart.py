"""NUTS started from an SVI fit (``fit_bayes(init="svi")``): same posterior, deterministic per seed.

Warm-up still adapts from the guide's start, so the draws must be draws of the same
posterior as the default start's: the means of every sampled coordinate agree within
their Monte Carlo error.
"""

import arviz_stats
import numpy as np
import pytest

import oscar_jax as oj
from oscar_jax.bayes import fit_bayes
from oscar_jax.bayes._warmstart import svi_start
from oscar_jax.model.problem import prepare
from oscar_jax.infer.selection import column_mask
from oscar_jax.bayes import Priors, model_data
from oscar_jax.runtime.validate import OscarInputError

MODEL = "j+p"
RUN = dict(chains=2, draws=400, warn=False, prompt_effect=False, show_progress=False)


@pytest.fixture(scope="module")
def design():
    return oj.simulate_design(seed=3, n_prompts=80)


@pytest.fixture(scope="module")
def uniform(design):
    return fit_bayes(design, MODEL, warmup=300, seed=1, **RUN)


@pytest.fixture(scope="module")
def warm(design):
    return fit_bayes(design, MODEL, warmup=150, seed=1, init="svi", **RUN)


def _theta(result):
    return result.idata.posterior["theta"].values


def _same_posterior(uniform, other):
    """θ means within 4 MC SE and sds within 4 SE of each sd (log scale) of the default start's."""
    a, b = _theta(uniform), _theta(other)
    se = [arviz_stats.mcse(r.idata, var_names=["theta"])["theta"].values for r in (uniform, other)]
    z = np.abs(a.mean((0, 1)) - b.mean((0, 1))) / np.hypot(*se)
    # ~15 coordinates: |z| ≤ 4 everywhere unless the two runs sample different posteriors
    assert np.max(z) < 4.0, z
    # The spreads too, on the log scale with each sd's own Monte Carlo error (a fixed band,
    # 0.8–1.25, was about 3 SE at 2 × 400 draws and failed by chance on one of 16
    # coordinates when the chains' draws changed): a posterior of the wrong width fails.
    sd = [r.std((0, 1)) for r in (a, b)]
    sd_se = [arviz_stats.mcse(r.idata, var_names=["theta"], method="sd")["theta"].values for r in (uniform, other)]
    z_sd = np.abs(np.log(sd[1] / sd[0])) / np.hypot(sd_se[0] / sd[0], sd_se[1] / sd[1])
    assert np.max(z_sd) < 4.0, (z_sd, sd[1] / sd[0])


def test_svi_start_gives_the_default_posterior_within_mc_error(uniform, warm):
    assert warm.idata.posterior.attrs["nuts_init"].startswith("svi (lowrank")
    assert warm.timing["svi_start_s"] > 0
    assert warm.diagnostics["max_rhat"] < 1.05
    _same_posterior(uniform, warm)


def test_svi_start_is_deterministic_per_seed(design, warm):
    again = fit_bayes(design, MODEL, warmup=150, seed=1, init="svi", **RUN)
    np.testing.assert_array_equal(_theta(again), _theta(warm))
    other = fit_bayes(design, MODEL, warmup=150, seed=2, init="svi", **RUN)
    assert not np.allclose(_theta(other), _theta(warm))


def test_chains_start_at_distinct_guide_draws_near_the_mode(design):
    problem = prepare(design, MODEL)
    layout = problem.layout
    mask = np.asarray(column_mask(design.arrays, design.arrays.stats, layout))
    md = model_data(design.arrays, mask, Priors().resolved(problem.effective_spec.ridge), layout, prompt_effect=False)
    init, mass, info = svi_start(problem, md=md, mask=mask, layout=layout, n_clusters=None, chains=3, seed=0)
    w = np.asarray(init["theta"])
    m = np.asarray(mass["dense"])
    assert w.shape == (3, md.free.shape[0]) and m.shape == (w.shape[1],) * 2
    assert len({tuple(r) for r in w}) == 3  # one draw per chain, not one point for all
    np.testing.assert_allclose(m, m.T)
    assert np.linalg.eigvalsh(m).min() > 0
    # each start lies within a few guide sds of the others' centre
    assert np.all(np.abs(w - w.mean(0)) < 5 * np.sqrt(np.diag(m)))


def test_init_is_validated(design):
    with pytest.raises(OscarInputError, match="init"):
        fit_bayes(design, MODEL, init="prior")


# ----------------------------------------------------------------------------- init="fit"
@pytest.fixture(scope="module")
def from_fit(design):
    return fit_bayes(design, MODEL, warmup=150, seed=1, init="fit", **RUN)


def test_fit_start_gives_the_default_posterior_within_mc_error(uniform, from_fit):
    assert from_fit.idata.posterior.attrs["nuts_init"] == "fit"
    assert from_fit.timing["fit_start_s"] > 0
    _same_posterior(uniform, from_fit)


def test_fit_start_is_deterministic_per_seed(design, from_fit):
    again = fit_bayes(design, MODEL, warmup=150, seed=1, init="fit", **RUN)
    np.testing.assert_array_equal(_theta(again), _theta(from_fit))


@pytest.mark.parametrize("prompt_effect", [False, "candidate"])
def test_fit_start_draws_around_the_point_fit_with_its_sandwich_as_mass(design, prompt_effect):
    from oscar_jax.bayes._coordinates import unconstrained_from_theta
    from oscar_jax.bayes._warmstart import fit_start

    problem = prepare(design, MODEL)
    layout = problem.layout
    mask = np.asarray(column_mask(design.arrays, design.arrays.stats, layout))
    md = model_data(design.arrays, mask, Priors().resolved(problem.effective_spec.ridge), layout,
                    prompt_effect=prompt_effect)
    n_clusters = design.n_clusters if prompt_effect else None
    init, mass, _ = fit_start(problem, md=md, mask=mask, n_clusters=n_clusters, chains=400, seed=0)
    free = np.flatnonzero(mask > 0)
    point = oj.fit(design, MODEL, warn=False)
    m = np.asarray(mass["dense"])
    theta_block = m[1:, 1:] if prompt_effect else m
    assert m.shape[0] == len(free) + (1 if prompt_effect else 0)
    np.testing.assert_allclose(m, m.T)
    assert np.linalg.eigvalsh(m).min() > 0
    # Where θ is sampled as itself (scores, position), the mass block is the sandwich covariance.
    plain = ~np.asarray(md.is_log_gamma)
    sandwich = point.covariance("sandwich")[np.ix_(free, free)]
    np.testing.assert_allclose(theta_block[np.ix_(plain, plain)], sandwich[np.ix_(plain, plain)], rtol=1e-6)
    # 400 starts in the sampling coordinates: mean at θ̂'s within 4 SE, sd that of the mass block within 20%.
    w = np.asarray(init["theta"])
    w_hat = np.asarray(unconstrained_from_theta(np.asarray(point.theta)[free], md.is_log_gamma))
    sd_w = np.sqrt(np.diag(theta_block))
    assert np.all(np.abs(w.mean(0) - w_hat) < 4 * sd_w / np.sqrt(len(w)))
    np.testing.assert_allclose(w.std(0), sd_w, rtol=0.2)
    if prompt_effect:
        assert init["z_prompt"].shape == (400, md.occ.zeta_slot.shape[0]) and mass["z_prompt"].shape[0] > 0
        assert np.all(np.abs(np.asarray(init["sigma_prompt"])) <= 1.0)
