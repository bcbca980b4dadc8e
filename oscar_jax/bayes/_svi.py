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

import math
import time
import warnings
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
import xarray as xr
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal
from numpyro.infer.initialization import init_to_value
from numpyro.optim import optax_to_numpyro

from .. import _x64  # noqa: F401
from ..fit import fit_problem
from ..params import Layout
from ..problem import Problem
from ..validate import OscarInputError, check_positive_int
from ._datatree import to_datatree
from ._model import ModelData, oscar_model, theta_from_unconstrained, unconstrained_from_theta
from ._result import BayesResult
from ._sampler import Draws

__all__ = ["SviSettings", "fit_bayes_svi", "run_svi", "run_svi_jit", "elbo_plateau", "VariationalWarning",
           "NARROW_WARNING", "GUIDES"]

GUIDES = ("normal", "lowrank")
NARROW_WARNING = ("variational (SVI) intervals come from a Gaussian approximation fitted by KL(q‖p), which "
                  "tends to make them too narrow; check against NUTS (method='nuts') when it is affordable")


class VariationalWarning(UserWarning):
    """SVI finished; its intervals may be too narrow (always), or the ELBO had not levelled off."""


@dataclass(frozen=True)
class SviSettings:
    """Static SVI settings (hashable: a static argument of the compiled optimizer).

    Parameters
    ----------
    guide
        ``"normal"`` (AutoNormal, mean-field) or ``"lowrank"`` (AutoLowRankMultivariateNormal).
    rank
        Rank of the low-rank guide's covariance factor (default: numpyro's, ≈ √dim).
    steps
        Adam steps.
    learning_rate
        Peak learning rate of the schedule: linear warm-up over the first 5 % of the
        steps, then cosine decay to 1 % of the peak (small final steps average out the
        minibatch noise).
    batch_size
        Likelihood units (cells, or (prompt, cell) pairs with the prompt effect) per
        step; ``None`` = all of them when there are at most 50,000, else 20,000.
    particles
        Monte Carlo draws of q per ELBO estimate.
    draws
        Draws from the fitted guide stored in the DataTree (one "chain").
    init_scale
        Initial sd of the guide (in the sampling coordinates).
    """

    guide: str = "normal"
    rank: int | None = None
    steps: int = 3000
    learning_rate: float = 0.02
    batch_size: int | None = None
    particles: int = 1
    draws: int = 4000
    init_scale: float = 0.05

    def __post_init__(self):
        if self.guide not in GUIDES:
            raise OscarInputError(f"guide must be one of {GUIDES}, got {self.guide!r}")
        check_positive_int("steps", self.steps, minimum=20)
        check_positive_int("particles", self.particles)
        check_positive_int("draws", self.draws, minimum=4)
        if self.rank is not None:
            check_positive_int("rank", self.rank)
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)
        if not (math.isfinite(float(self.learning_rate)) and 0.0 < float(self.learning_rate) < 1.0):
            raise OscarInputError(f"learning_rate must lie in (0, 1), got {self.learning_rate}")
        if not (math.isfinite(float(self.init_scale)) and float(self.init_scale) > 0):
            raise OscarInputError(f"init_scale must be > 0, got {self.init_scale}")

    def resolved_batch(self, n_units: int) -> int | None:
        """Units per step, or None for the full likelihood every step."""
        size = self.batch_size
        if size is None:
            size = n_units if n_units <= 50_000 else 20_000
        return None if size >= n_units else int(size)


def schedule(settings: SviSettings):
    """optax learning-rate schedule: warm-up 5 %, cosine decay to 1 % of the peak."""
    peak = float(settings.learning_rate)
    warm = max(1, settings.steps // 20)
    return optax.warmup_cosine_decay_schedule(init_value=peak / 10.0, peak_value=peak, warmup_steps=warm,
                                              decay_steps=settings.steps, end_value=peak / 100.0)


def optimizer(settings: SviSettings):
    """Adam on the schedule, with gradients clipped to norm 100 (the first steps from the
    mode with tiny scales can see large ELBO gradients)."""
    return optax.chain(optax.clip_by_global_norm(100.0), optax.adam(schedule(settings)))


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


def _guide(model, settings: SviSettings, init_values: dict):
    init = init_to_value(values=init_values)
    if settings.guide == "normal":
        return AutoNormal(model, init_loc_fn=init, init_scale=settings.init_scale)
    return AutoLowRankMultivariateNormal(model, init_loc_fn=init, init_scale=settings.init_scale,
                                         rank=settings.rank)


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
    guide = _guide(model, settings, {"theta": w0})
    svi = SVI(model, guide, optax_to_numpyro(optimizer(settings)), Trace_ELBO(num_particles=settings.particles))
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

    state = svi.init(k_init, data_of(k_steps))

    def step(state, k):
        state, loss = svi.update(state, data_of(k))
        return state, loss

    state, losses = jax.lax.scan(step, state, jax.random.split(k_steps, settings.steps))
    params = svi.get_params(state)
    sample = guide.sample_posterior(k_draw, params, data, sample_shape=(settings.draws,))
    w = sample["theta"][None]
    shape = w.shape[:2]
    if prompt_effect:
        sigma, z = sample["sigma_prompt"][None], sample["z_prompt"][None]
    else:
        sigma, z = jnp.zeros(shape), jnp.zeros(shape + (0,))
    zeros = jnp.zeros(shape)
    draws = Draws(theta=theta_from_unconstrained(w, data.is_log_gamma), sigma=sigma, z=z,
                  diverging=jnp.zeros(shape, bool), n_steps=jnp.zeros(shape, jnp.int32), accept=zeros,
                  energy=zeros, potential=zeros, step_size=jnp.zeros(1))
    return losses, draws, params


run_svi_jit = jax.jit(run_svi, static_argnames=("layout", "n_clusters", "settings", "batch"))


def elbo_plateau(losses, window: float = 0.1) -> dict:
    """Has the ELBO levelled off? Compare the mean loss of the last two windows of steps.

    ``decrease`` = mean(previous window) − mean(last window), in nats; its noise is the
    standard error of the difference of the two window means (steps treated as
    independent, which the decaying learning rate makes nearly true). Plateau when the
    decrease is below 3 standard errors (a false alarm rate of 0.1 % on a flat
    trace) or below 1e-4 of the loss' magnitude; a loss
    still falling faster than that means more steps (or a larger learning rate) are
    needed.
    """
    x = np.asarray(losses, dtype=np.float64)
    n = max(5, int(len(x) * window))
    last, prev = x[-n:], x[-2 * n:-n]
    decrease = float(prev.mean() - last.mean())
    se = float(math.sqrt(prev.var(ddof=1) / n + last.var(ddof=1) / n))
    tol = 1e-4 * abs(float(last.mean()))
    finite = bool(np.all(np.isfinite(x[-2 * n:])))
    return {"final_loss": float(last.mean()), "decrease_last_window": decrease, "noise_se": se,
            "window_steps": n, "plateau": finite and (decrease <= 3.0 * se or decrease <= tol)}


def svi_sample_stats(losses) -> xr.Dataset:
    """sample_stats group of an SVI result: the ELBO trace over the optimizer steps."""
    loss = np.asarray(losses, dtype=np.float64)
    return xr.Dataset({"elbo": ("svi_step", -loss), "loss": ("svi_step", loss)},
                      coords={"svi_step": np.arange(loss.size)})


def fit_bayes_svi(problem: Problem, *, mask, priors, md: ModelData, prompt_effect: str | bool,
                  n_clusters: int | None, keep_prompt_effects: bool, notes: list, seed: int, ci_prob: float,
                  settings: SviSettings | None, warn: bool):
    """The SVI branch of :func:`~oscar_jax.bayes.fit_bayes` (validated inputs in, BayesResult out).

    ``notes`` are the problem's notes followed by those of the Bayesian set-up.
    """
    design, spec, eff, layout = problem.design, problem.spec, problem.effective_spec, problem.layout
    settings = SviSettings() if settings is None else settings
    if not isinstance(settings, SviSettings):
        raise OscarInputError(f"svi must be an oscar_jax.bayes.SviSettings, got {type(settings).__name__}")
    t0 = time.perf_counter()
    # Start at the posterior mode: the penalized point fit θ̂ (same ridge, same B.2 columns).
    theta0 = fit_problem(problem, starts=1, seed=int(seed), warn=False).theta
    point_s = time.perf_counter() - t0
    free = np.flatnonzero(np.asarray(mask) > 0)
    w0 = unconstrained_from_theta(jnp.asarray(np.asarray(theta0)[free]), md.is_log_gamma)
    batch = settings.resolved_batch(int(md.stats.shape[0]))
    t1 = time.perf_counter()
    losses, draws, _ = run_svi_jit(jax.random.PRNGKey(int(seed)), md, w0, layout=layout, n_clusters=n_clusters,
                                   settings=settings, batch=batch)
    losses = np.asarray(jax.block_until_ready(losses))
    svi_s = time.perf_counter() - t1
    plateau = elbo_plateau(losses)
    messages = []
    if not plateau["plateau"]:
        messages.append(f"the ELBO had not levelled off after {settings.steps} steps (the loss still fell by "
                        f"{plateau['decrease_last_window']:.3g} between the last two windows of "
                        f"{plateau['window_steps']} steps, noise {plateau['noise_se']:.3g}); raise steps")
    n_units = int(md.stats.shape[0])
    diagnostics = {"method": "svi", "guide": settings.guide, "steps": settings.steps,
                   "batch_size": n_units if batch is None else batch, "minibatched": batch is not None,
                   "n_units": n_units, "draws": settings.draws, **plateau, "ok": not messages,
                   "messages": messages}
    guide_name = "AutoNormal" if settings.guide == "normal" else "AutoLowRankMultivariateNormal"
    attrs = {"oscar_model": eff.name, "prompt_effect": prompt_effect or "none", "seed": int(seed),
             "inference_library": "numpyro", "sampler": f"SVI ({guide_name}, optax Adam, {settings.steps} steps)"}
    idata = to_datatree(draws, design, layout, mask, prompt_effect=prompt_effect,
                        keep_prompt_effects=keep_prompt_effects, attrs=attrs)
    idata["sample_stats"] = svi_sample_stats(losses)
    notes = list(notes) + [NARROW_WARNING]
    if batch is not None:
        notes.append(f"SVI minibatches: {batch:,} of {n_units:,} likelihood units per step")
    result = BayesResult(design=design, spec=spec, effective_spec=eff, layout=layout, mask=mask, priors=priors,
                         settings=settings, prompt_effect=prompt_effect, seed=int(seed), idata=idata,
                         diagnostics=diagnostics, notes=tuple(notes), ci_prob=ci_prob,
                         timing={"point_fit_s": point_s, "svi_s_including_compile": svi_s})
    if warn:
        warnings.warn(VariationalWarning(NARROW_WARNING), stacklevel=3)
        result.warn_if_poor(stacklevel=3)
    return result
