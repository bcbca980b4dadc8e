"""SVI (``fit_bayes(method="svi")``): the NUTS model fitted with a Gaussian guide and optax.

For a near-Gaussian posterior with precision H (the Hessian of the potential at the
mode), KL(q‖p) over mean-field Gaussians is minimised by sd_i = 1/√H_ii, not the
marginal sd √(H⁻¹)_ii: the first closed form checks AutoNormal, the second the low-rank
guide (which must recover most of the correlation-induced width mean-field misses).
"""

import json
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import potential_energy

import oscar_jax as oj
from oscar_jax.bayes import (Priors, SviSettings, VariationalWarning, fit_bayes, model_data, oscar_model,
                             unconstrained_from_theta)
from oscar_jax.bayes._svi import _minibatch, elbo_plateau
from oscar_jax.cli.main import main
from oscar_jax.infer.derivatives import loss_value
from oscar_jax.infer.selection import column_mask
from oscar_jax.runtime.validate import OscarInputError

MODEL = "j+p"


@pytest.fixture(scope="module")
def problem():
    design = oj.simulate_design(seed=2, n_prompts=400)
    spec, _ = design.effective_spec(oj.parse_model(MODEL))
    layout = design.layout(spec)
    mask = np.asarray(column_mask(design.arrays, design.arrays.stats, layout))
    md = model_data(design.arrays, mask, Priors().resolved(spec.ridge), layout, prompt_effect=False)
    return design, layout, md


def _w_draws(result, md):
    th = result.idata.posterior["theta"].values.reshape(-1, md.free.shape[0])
    return np.asarray(unconstrained_from_theta(jnp.asarray(th), md.is_log_gamma))


def _hessian(problem, at):
    design, layout, md = problem
    model = partial(oscar_model, layout=layout, n_clusters=None)
    return np.asarray(jax.hessian(lambda x: potential_energy(model, (md,), {}, {"theta": x}))(jnp.asarray(at)))


@pytest.fixture(scope="module")
def mean_field(problem):
    return fit_bayes(problem[0], MODEL, method="svi", prompt_effect=False, svi=SviSettings(steps=2500), warn=False)


@pytest.mark.slow
def test_mean_field_sd_is_one_over_sqrt_precision_diagonal(problem, mean_field):
    w = _w_draws(mean_field, problem[2])
    h = _hessian(problem, w.mean(0))
    ratio = w.std(0) / (1.0 / np.sqrt(np.diag(h)))
    # 4000 draws give a 1.1 % Monte Carlo sd; the optimizer's own noise adds a few %.
    assert np.all(np.abs(ratio - 1.0) < 0.1), ratio
    # ... and it IS narrower than the marginal posterior sd where coordinates correlate:
    full = np.sqrt(np.diag(np.linalg.inv(h)))
    assert np.min(w.std(0) / full) < 0.7
    assert mean_field.diagnostics["plateau"] and mean_field.diagnostics["method"] == "svi"


@pytest.mark.slow
def test_lowrank_guide_recovers_the_marginal_sd(problem, mean_field):
    low = fit_bayes(problem[0], MODEL, method="svi", prompt_effect=False, svi=SviSettings(steps=2500, guide="lowrank"), warn=False)
    w = _w_draws(low, problem[2])
    full = np.sqrt(np.diag(np.linalg.inv(_hessian(problem, w.mean(0)))))
    ratio = w.std(0) / full
    assert np.all(ratio > 0.85) and np.all(ratio < 1.1), ratio


@pytest.mark.slow
def test_minibatched_svi_agrees_with_full_batch(problem, mean_field):
    md = problem[2]
    mini = fit_bayes(problem[0], MODEL, method="svi", prompt_effect=False, svi=SviSettings(steps=2500, batch_size=200), warn=False)
    assert mini.diagnostics["minibatched"] and mini.diagnostics["batch_size"] == 200
    w_full, w_mini = _w_draws(mean_field, md), _w_draws(mini, md)
    sd = w_full.std(0)
    assert np.max(np.abs(w_mini.mean(0) - w_full.mean(0)) / sd) < 0.35
    assert np.all(np.abs(w_mini.std(0) / sd - 1.0) < 0.2)


def test_minibatch_of_every_unit_is_the_full_likelihood(problem):
    """Scaling statistics scales the loss: all units at scale 1 reproduce it exactly, and
    the per-unit mean times the unit count is the sum (the unbiasedness the ELBO uses)."""
    design, layout, md = problem
    theta = 0.2 * jax.random.normal(jax.random.PRNGKey(0), (layout.n_theta,))
    n = md.stats.shape[0]
    full = loss_value(theta, md.arrays, md.stats, layout)
    perm = jax.random.permutation(jax.random.PRNGKey(1), n)
    sub = _minibatch(md, perm, 1.0, prompt_effect=False)
    np.testing.assert_allclose(loss_value(theta, sub.arrays, sub.stats, layout), full, rtol=1e-12)
    one = jax.vmap(lambda i: loss_value(theta, *(lambda d: (d.arrays, d.stats))(
        _minibatch(md, i[None], float(n), prompt_effect=False)), layout))(jnp.arange(n))
    np.testing.assert_allclose(jnp.mean(one), full, rtol=1e-10)


def test_result_has_nuts_tables_and_the_elbo_trace(mean_field):
    post = mean_field.idata.posterior
    for name in ("theta", "s", "q", "q_field", "kappa", "gamma", "D"):
        assert name in post.data_vars, name
    stats = mean_field.idata.sample_stats
    assert stats["elbo"].shape == (2500,) and np.all(np.isfinite(stats["elbo"].values))
    # the ELBO rises from the initial guide (at the mode with tiny scales) to its plateau
    assert stats["elbo"].values[-100:].mean() > stats["elbo"].values[:10].mean()
    lb = mean_field.leaderboard()
    assert list(lb.columns[:3]) == ["rank", "candidate", "score"]
    assert np.all(lb.score_lo < lb.score) and np.all(lb.score < lb.score_hi)
    assert any("too narrow" in n for n in mean_field.notes)
    payload = json.loads(json.dumps(mean_field.to_dict(), default=float))
    assert payload["settings"]["guide"] == "normal"


def test_elbo_plateau_detects_a_falling_loss():
    rng = np.random.default_rng(0)
    flat = 100.0 + rng.normal(0, 1, 1000)
    assert elbo_plateau(flat)["plateau"]
    falling = 100.0 + np.linspace(50, 0, 1000) + rng.normal(0, 1, 1000)
    out = elbo_plateau(falling)
    assert not out["plateau"] and out["decrease_last_window"] > 4
    assert not elbo_plateau(np.r_[flat[:-1], np.nan])["plateau"]


def test_svi_warns_that_intervals_may_be_narrow(problem):
    with pytest.warns(VariationalWarning, match="too narrow"):
        fit_bayes(problem[0], MODEL, method="svi", prompt_effect=False, svi=SviSettings(steps=100, draws=50))


@pytest.mark.parametrize("kwargs, message", [
    (dict(method="vi"), "method must be 'nuts' or 'svi'"),
    (dict(method="svi", svi="fast"), "svi must be an oscar_jax.bayes.SviSettings"),
])
def test_bad_method_arguments(problem, kwargs, message):
    with pytest.raises(OscarInputError, match=message):
        fit_bayes(problem[0], MODEL, warn=False, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(guide="flow"), "guide must be one of"),
    (dict(steps=5), "steps"),
    (dict(learning_rate=2.0), "learning_rate"),
    (dict(batch_size=0), "batch_size"),
])
def test_bad_svi_settings(kwargs, message):
    with pytest.raises(OscarInputError, match=message):
        SviSettings(**kwargs)


def test_cli_bayes_svi_json(tmp_path, capsys):
    path = tmp_path / "sim.csv"
    oj.simulate_frame(seed=4, n_prompts=80).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VariationalWarning)
        code = main(["bayes", str(path), "--model", MODEL, "--reference-judge", "judge0", "--method", "svi",
                     "--svi-steps", "400", "--no-prompt-effect", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checks"]["method"] == "svi" and out["checks"]["steps"] == 400
    # independent draws of the approximation: each probability's Monte Carlo SE is √(p(1 − p)/n)
    assert out["estimator"] == "bayes-svi" and "independent draws" in out["estimand"]["mcse"]
    n = out["checks"]["draws"]
    for cand in out["candidates"]:
        assert cand["p_best_mcse"] == pytest.approx(np.sqrt(cand["p_best"] * (1 - cand["p_best"]) / n), abs=1e-12)
    assert len(out["candidates"]) == 8
