"""Variational Bayes for OSCAR: NumPyro SVI on the NUTS model, optimized with optax.

``fit_bayes(..., method="svi")`` fits a Gaussian approximation q(w) to the posterior of
the *same* NumPyro model NUTS samples (:func:`~oscar_jax.bayes.oscar_model`, whose
likelihood is the point fit's ``loss_value`` / ``model.local_loss``): AutoNormal (a
diagonal Gaussian, mean-field) or AutoLowRankMultivariateNormal (a diagonal plus rank-r
covariance, which can express the strong correlation between the judge sensitivities and
the score scale). The ELBO is maximized by Adam with a warm-up/cosine learning-rate
schedule (``optax``), for a fixed number of steps in one compiled ``lax.scan``.

Large data: the likelihood is a sum over cells (records sharing a, b, k and covariates),
or over (prompt, cell) pairs with the prompt effect. With more units than
``batch_size`` every step evaluates a uniform random minibatch of them (drawn with
replacement) scaled by units / batch_size: an unbiased estimate of the full log
likelihood, so the ELBO gradient stays unbiased while a step costs O(batch_size).

The optimization starts at the penalized point fit θ̂ (the posterior mode under the
default priors), so the guide's means begin where the posterior concentrates and only
the scales have far to move.

Caveat, stated with every result: a Gaussian variational approximation fitted by
KL(q‖p) under-disperses. Its intervals are typically narrower than the posterior's, and
mean-field (AutoNormal) ignores posterior correlations entirely. Check against NUTS where
NUTS is affordable (``docs/bayes.md`` reports the comparison).
"""

from __future__ import annotations

import time
import warnings
from functools import partial

import numpy as np

from ..fit import point_fit
from ..model.params import Layout
from ..model.problem import Problem
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError
from ..infer.posterior import (GUIDES, NARROW_WARNING, SviSettings, VariationalWarning, elbo_plateau, guide_name, make_guide,
    optimize, optimizer, plateau_message, schedule, svi_sample_stats)
from ._datatree import to_datatree
from ._coordinates import model_coordinates, unconstrained_from_theta
from ._model import ModelData, oscar_model
from ._result import BayesResult
from ._sampler import Draws

# The generic parts (settings, guides, optax optimizer, the scan, the plateau check) live in
# oscar_jax.infer.posterior, shared with the audit's SVI; their names stay importable from here.
__all__ = ["SviSettings", "fit_bayes_svi", "run_svi", "run_svi_jit", "elbo_plateau", "VariationalWarning",
           "NARROW_WARNING", "GUIDES", "optimizer", "schedule", "svi_sample_stats"]


def _minibatch(data: ModelData, idx, scale, prompt_effect: bool) -> ModelData:
    """``data`` restricted to likelihood units ``idx`` with statistics scaled by ``scale``.

    The likelihood is linear in the statistics (w, wy, wt), so scaling them scales the
    minibatch log likelihood to an unbiased estimate of the full one.
    """
    arr = data.arrays
    if prompt_effect:
        sub = arr._replace(pair_cell=arr.pair_cell[idx], pair_g=arr.pair_g[idx])
    else:
        sub = arr._replace(a=arr.a[idx], b=arr.b[idx], k=arr.k[idx], z=arr.z[idx])
    out = data._replace(arrays=sub, stats=data.stats[idx] * scale)
    if getattr(data, "occ", None) is not None:  # prompt × candidate effect: the pairs' occurrences follow them
        out = out._replace(occ=data.occ._replace(pair_occ_a=data.occ.pair_occ_a[idx],
                                                 pair_occ_b=data.occ.pair_occ_b[idx]))
    return out


def run_svi(key, data: ModelData, w0, *, layout: Layout, n_clusters: int | None, settings: SviSettings,
            batch: int | None):
    """Fit the guide and draw from it (pure; jit with the keyword arguments static).

    Parameters
    ----------
    key : PRNG key (guide initialisation, ELBO noise, minibatches and the final draws).
    data : ModelData as for NUTS (:func:`~oscar_jax.bayes.model_data`).
    w0 : (F,) initial guide mean of the ``theta`` site (sampling coordinates w).
    batch : likelihood units per step, or None for the full likelihood.

    Returns
    -------
    (losses (steps,), Draws with a single chain, guide parameters)
    """
    model = partial(oscar_model, layout=layout, n_clusters=n_clusters)
    guide = make_guide(model, settings, {"theta": w0})
    prompt_effect = n_clusters is not None
    n_units = data.stats.shape[0]
    k_init, k_steps, k_draw = jax.random.split(key, 3)
    if batch is None:
        def data_of(_):
            return data
    else:
        scale = n_units / batch

        def data_of(k):
            return _minibatch(data, jax.random.randint(k, (batch,), 0, n_units), scale, prompt_effect)

    losses, params = optimize(k_init, k_steps, model, guide, settings, lambda k: (data_of(k),))
    sample = guide.sample_posterior(k_draw, params, data, sample_shape=(settings.draws,))
    w = sample["theta"][None]
    shape = w.shape[:2]
    if prompt_effect:
        sigma, z = sample["sigma_prompt"][None], sample["z_prompt"][None]
    else:
        sigma, z = jnp.zeros(shape), jnp.zeros(shape + (0,))
    zeros = jnp.zeros(shape)
    theta, z = model_coordinates(w, sigma, z, data.occ if prompt_effect else None, data.is_log_gamma)
    draws = Draws(theta=theta, sigma=sigma, z=z,
                  diverging=jnp.zeros(shape, bool), n_steps=jnp.zeros(shape, jnp.int32), accept=zeros,
                  energy=zeros, potential=zeros, step_size=jnp.zeros(1))
    return losses, draws, params


run_svi_jit = jax.jit(run_svi, static_argnames=("layout", "n_clusters", "settings", "batch"))


def mode_start(problem, md, mask, seed: int):
    """The posterior mode's approximation, the penalized point fit θ̂ (same ridge, same B.2
    columns), in the sampled (unconstrained) coordinates of the free columns."""
    theta0 = point_fit(problem, seed=int(seed)).theta
    free = np.flatnonzero(np.asarray(mask) > 0)
    return unconstrained_from_theta(jnp.asarray(np.asarray(theta0)[free]), md.is_log_gamma)


def fit_bayes_svi(problem: Problem, *, mask, priors, md: ModelData, prompt_effect: str | bool,
                  n_clusters: int | None, keep_prompt_effects: bool, notes: list, seed: int, ci_prob: float,
                  ci_kind: str, settings: SviSettings | None, warn: bool, gbar_weights=None):
    """The SVI branch of :func:`~oscar_jax.bayes.fit_bayes` (validated inputs in, BayesResult out).

    ``notes`` are the problem's notes followed by those of the Bayesian set-up.
    """
    design, spec, eff, layout = problem.design, problem.spec, problem.effective_spec, problem.layout
    settings = SviSettings() if settings is None else settings
    if not isinstance(settings, SviSettings):
        raise OscarInputError(f"svi must be an oscar_jax.bayes.SviSettings, got {type(settings).__name__}")
    t0 = time.perf_counter()
    w0 = mode_start(problem, md, mask, seed)
    point_s = time.perf_counter() - t0
    batch = settings.resolved_batch(int(md.stats.shape[0]))
    t1 = time.perf_counter()
    losses, draws, _ = run_svi_jit(jax.random.PRNGKey(int(seed)), md, w0, layout=layout, n_clusters=n_clusters,
                                   settings=settings, batch=batch)
    losses = np.asarray(jax.block_until_ready(losses))
    svi_s = time.perf_counter() - t1
    plateau = elbo_plateau(losses)
    messages = [m for m in [plateau_message(plateau, settings.steps)] if m]
    n_units = int(md.stats.shape[0])
    diagnostics = {"method": "svi", "guide": settings.guide, "steps": settings.steps,
                   "batch_size": n_units if batch is None else batch, "minibatched": batch is not None,
                   "n_units": n_units, "draws": settings.draws, **plateau, "ok": not messages,
                   "messages": messages}
    attrs = {"oscar_model": eff.name, "prompt_effect": prompt_effect or "none", "seed": int(seed),
             "inference_library": "numpyro", "sampler": f"SVI ({guide_name(settings)}, optax Adam, {settings.steps} steps)"}
    idata = to_datatree(draws, design, layout, mask, prompt_effect=prompt_effect,
                        keep_prompt_effects=keep_prompt_effects, attrs=attrs, gbar_weights=gbar_weights)
    idata["sample_stats"] = svi_sample_stats(losses)
    notes = list(notes) + [NARROW_WARNING]
    if batch is not None:
        notes.append(f"SVI minibatches: {batch:,} of {n_units:,} likelihood units per step")
    result = BayesResult(design=design, spec=spec, effective_spec=eff, layout=layout, mask=mask, priors=priors,
                         settings=settings, prompt_effect=prompt_effect, seed=int(seed), idata=idata,
                         diagnostics=diagnostics, notes=tuple(notes), ci_prob=ci_prob, ci_kind=ci_kind,
                         gbar_weights=gbar_weights, timing={"point_fit_s": point_s, "svi_s_including_compile": svi_s})
    if warn:
        warnings.warn(VariationalWarning(NARROW_WARNING), stacklevel=3)
        result.warn_if_poor(stacklevel=3)
    return result
