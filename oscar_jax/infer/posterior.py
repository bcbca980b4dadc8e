"""Posterior tools the two Bayesian wings share: the R-hat rule and variational inference.

Used by the OSCAR model (:mod:`oscar_jax.bayes`) and the audit's effect models
(:mod:`oscar_jax.audit`); each brings its own NumPyro model, its data and the starting
point of the guide.

* One R-hat threshold and one wording for every NUTS run (``oscar bayes``, ``oscar
  audit``): rank-normalized split R-hat below 1.01 (Vehtari et al. 2021,
  "Rank-normalization, folding, and localization"); both models flag a run at or above
  it the same way.
* Generic variational inference, NumPyro SVI driven by an optax optimizer in one
  ``lax.scan``: the settings, the guides (AutoNormal, mean-field, or
  AutoLowRankMultivariateNormal, diagonal plus rank-r covariance), Adam with a
  warm-up/cosine learning-rate schedule and gradient clipping, the compiled optimization
  loop, the ELBO plateau check and the ELBO trace as a ``sample_stats`` group.

Caveat, stated with every result: a Gaussian variational approximation fitted by
KL(q‖p) under-disperses. Its intervals are typically narrower than the posterior's, and
mean-field (AutoNormal) ignores posterior correlations entirely.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import optax
import xarray as xr
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal
from numpyro.infer.initialization import init_to_median, init_to_value
from numpyro.infer.util import potential_energy
from numpyro.optim import optax_to_numpyro

from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError, check_positive_int

__all__ = ["GUIDES", "NARROW_WARNING", "RHAT_MAX", "rhat_flag", "rhat_message", "rhat_ok",
           "SviSettings", "VariationalWarning", "elbo_plateau", "guide_name",
           "guide_draws", "meanfield_fit", "make_guide", "optimize", "optimizer", "plateau_message", "schedule", "svi_sample_stats"]

RHAT_MAX = 1.01


def rhat_ok(value) -> bool:
    """True when R-hat is below the threshold (or undefined: one chain, nothing to compare)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value < RHAT_MAX


def rhat_message(value: float, where: str | None = None) -> str:
    """The warning for a failed R-hat: value, threshold, the worst variable and the fix."""
    at = f" ({where})" if where else ""
    return f"R-hat {value:.3f} ≥ {RHAT_MAX}{at}: chains disagree; run more warm-up/draws"


def rhat_flag(value) -> str:
    """``"ok"`` or ``"POOR"`` next to a printed R-hat."""
    return "ok" if rhat_ok(value) else "POOR"


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
        ``"normal"`` (AutoNormal) or ``"lowrank"`` (AutoLowRankMultivariateNormal).
    rank
        Rank of the low-rank guide's covariance factor (default: numpyro's, ≈ √dim).
    steps
        Adam steps.
    learning_rate
        Peak learning rate of the schedule: linear warm-up over the first 5 % of the
        steps, then cosine decay to 1 % of the peak (small final steps average out the
        minibatch noise).
    batch_size
        Likelihood units per step (the model decides what a unit is); ``None`` = all of
        them when there are at most 50,000, else 20,000.
    particles
        Monte Carlo draws of q per ELBO estimate.
    draws
        Draws from the fitted guide stored in the result (one "chain").
    init_scale
        Initial sd of the guide (in the unconstrained coordinates).
    flat_tail
        Fraction of the steps, at the end, run at the final learning rate (the cosine
        decay then spans the steps before them). With thousands of latent variables the
        loss keeps falling while the rate decays, merely because the iterates jitter
        less; over a flat tail the plateau check measures convergence, not the schedule.
    end_fraction
        Final learning rate as a fraction of the peak (default 1 %).
    """

    guide: str = "normal"
    rank: int | None = None
    steps: int = 3000
    learning_rate: float = 0.02
    batch_size: int | None = None
    particles: int = 1
    draws: int = 4000
    init_scale: float = 0.05
    flat_tail: float = 0.0
    end_fraction: float = 0.01

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
        if not (math.isfinite(float(self.end_fraction)) and 0.0 < float(self.end_fraction) <= 1.0):
            raise OscarInputError(f"end_fraction must lie in (0, 1], got {self.end_fraction}")
        if not (math.isfinite(float(self.flat_tail)) and 0.0 <= float(self.flat_tail) < 0.9):
            raise OscarInputError(f"flat_tail must lie in [0, 0.9), got {self.flat_tail}")

    def resolved_batch(self, n_units: int) -> int | None:
        """Units per step, or None for the full likelihood every step."""
        size = self.batch_size
        if size is None:
            size = n_units if n_units <= 50_000 else 20_000
        return None if size >= n_units else int(size)


def schedule(settings: SviSettings):
    """optax learning-rate schedule: warm-up 5 %, cosine decay to ``end_fraction`` of the
    peak (then constant over the ``flat_tail`` fraction of the steps)."""
    peak = float(settings.learning_rate)
    warm = max(1, settings.steps // 20)
    decay = settings.steps - int(settings.flat_tail * settings.steps)
    return optax.warmup_cosine_decay_schedule(init_value=peak / 10.0, peak_value=peak, warmup_steps=warm,
                                              decay_steps=decay, end_value=peak * float(settings.end_fraction))


def optimizer(settings: SviSettings):
    """Adam on the schedule, with gradients clipped to norm 100 (the first steps from the
    mode with tiny scales can see large ELBO gradients)."""
    return optax.chain(optax.clip_by_global_norm(100.0), optax.adam(schedule(settings)))


def guide_name(settings: SviSettings) -> str:
    return "AutoNormal" if settings.guide == "normal" else "AutoLowRankMultivariateNormal"


def make_guide(model, settings: SviSettings, init_values: dict | None = None):
    """The guide of ``settings.guide``, its means starting at ``init_values`` (site → value,
    constrained space; sites not named start at the prior median)."""
    init = init_to_median() if init_values is None else init_to_value(values=init_values)
    if settings.guide == "normal":
        return AutoNormal(model, init_loc_fn=init, init_scale=settings.init_scale)
    return AutoLowRankMultivariateNormal(model, init_loc_fn=init, init_scale=settings.init_scale,
                                         rank=settings.rank)


def optimize(k_init, k_steps, model, guide, settings: SviSettings, args_of):
    """Maximize the ELBO for ``settings.steps`` Adam steps in one ``lax.scan`` (pure; jit it).

    Parameters
    ----------
    k_init, k_steps : PRNG keys of the guide's initialisation and of the steps (ELBO
        noise and the per-step data keys).
    args_of : function of a PRNG key returning the model's positional arguments for one
        step: the same arrays every step, or a fresh minibatch (scaled so its log
        likelihood is an unbiased estimate of the full one).

    Returns
    -------
    (losses (steps,), guide parameters)
    """
    svi = SVI(model, guide, optax_to_numpyro(optimizer(settings)), Trace_ELBO(num_particles=settings.particles))
    state = svi.init(k_init, *args_of(k_steps))

    def step(state, k):
        state, loss = svi.update(state, *args_of(k))
        return state, loss

    state, losses = jax.lax.scan(step, state, jax.random.split(k_steps, settings.steps))
    return losses, svi.get_params(state)


def meanfield_fit(key, model, args, init_values: dict, settings: SviSettings, sites) -> tuple:
    """Mean-field Gaussian SVI (AutoNormal's family) in one lean compiled program (pure; jit it).

    The same ELBO as ``SVI(model, AutoNormal(model), …)`` with ``Trace_ELBO``, written
    directly on numpyro's ``potential_energy`` of ``model`` (its log density in the
    unconstrained coordinates, Jacobians included): q = N(loc, diag(scale²)) over all the
    latent sites flattened into one vector, started at ``init_values`` (every latent site,
    constrained) with sd ``settings.init_scale``; one standard normal vector per step (one
    random draw, not one per site and per particle); the loss log q(x) − log p(x, data)
    at x = loc + scale·ε, with the "sticking the landing" gradient (q's parameters held
    fixed inside log q: the same expectation, and a gradient and loss whose noise vanishes
    as q approaches the posterior, which is what lets the plateau check see convergence).
    numpyro's SVI/AutoNormal program for the audit took ~25 s of CPU to compile (a random
    draw, a transform and a log density per site, plus numpyro's initial-point search) and
    ~25 ms a step, because XLA fused the random draw into each of its consumers and
    recomputed it; this one compiles in ~7 s and steps in ~8 ms on the worked example.

    Returns (losses (steps,), draws {site: (settings.draws, …)} of ``sites``, constrained,
    the ELBO still to gain estimated from the last window's gradients, see
    :func:`elbo_plateau`).
    """
    tr = handlers.trace(handlers.substitute(model, data=init_values)).get_trace(*args)
    latent = [n for n, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]
    bij = {n: biject_to(tr[n]["fn"].support) for n in latent}
    loc0, unravel = ravel_pytree({n: bij[n].inv(jnp.asarray(init_values[n])) for n in latent})
    params = {"loc": loc0, "log_scale": jnp.full(loc0.shape, math.log(settings.init_scale))}
    opt = optimizer(settings)

    def loss(p, eps):
        scale = jnp.exp(p["log_scale"])
        x = p["loc"] + scale * eps
        z = (x - jax.lax.stop_gradient(p["loc"])) / jax.lax.stop_gradient(scale)
        log_q = jnp.sum(-0.5 * z ** 2 - jax.lax.stop_gradient(p["log_scale"])) - 0.5 * x.size * math.log(2 * math.pi)
        return log_q + potential_energy(model, args, {}, unravel(x))

    def elbo_noise(k):
        # one vector per particle; the barrier keeps XLA from recomputing the draw in each consumer
        return jax.lax.optimization_barrier(jax.random.normal(k, (settings.particles,) + loc0.shape))

    grad = jax.value_and_grad(lambda p, eps: jnp.mean(jax.vmap(lambda e: loss(p, e))(eps)))

    window = plateau_window(settings.steps)

    def step(carry, inputs):
        p, state, g1, g2, avg = carry
        k, i = inputs
        value, g = grad(p, elbo_noise(k))
        updates, state = opt.update(g, state, p)
        last = i >= settings.steps - window
        flat = jnp.concatenate([g["loc"], g["log_scale"]]) * last
        avg = jax.tree_util.tree_map(lambda a, x: a + x * last / window, avg, p)
        return (optax.apply_updates(p, updates), state, g1 + flat, g2 + flat ** 2, avg), value

    k_steps, k_draw = jax.random.split(key)
    zeros = jnp.zeros(2 * loc0.size)
    init_carry = (params, opt.init(params), zeros, zeros, jax.tree_util.tree_map(jnp.zeros_like, params))
    # q is the average of the iterates over the last window (Polyak averaging): the iterates
    # jitter around the optimum at the final learning rate, and their mean sits closer to it.
    (_, _, g1, g2, p), losses = jax.lax.scan(step, init_carry, (jax.random.split(k_steps, settings.steps),
                                                                jnp.arange(settings.steps)))
    # Gradient check over the last window: the ELBO still to gain by moving to where the mean
    # gradient m vanishes, ½ mᵀH⁻¹m, with the curvature of a Gaussian q fitted to its target:
    # 1/scale² for a mean, 2 for a log-scale. m² is less its noise (var/window), so the gain
    # is ≈ 0 at the optimum (the iterates jitter around it) and large for an optimizer that
    # stopped short of it (e.g. a learning rate decayed too early), where the loss is flat too.
    mean = g1 / window
    excess = mean ** 2 - jnp.maximum(g2 / window - mean ** 2, 0.0) / (window - 1)
    curv = jnp.concatenate([jnp.exp(-2.0 * p["log_scale"]), jnp.full(loc0.shape, 2.0)])
    gain = 0.5 * jnp.sum(excess / curv)
    loc, scale = unravel(p["loc"]), unravel(jnp.exp(p["log_scale"]))
    flat_loc, back = ravel_pytree({n: loc[n] for n in sites})
    flat_scale, _ = ravel_pytree({n: scale[n] for n in sites})
    x = flat_loc + flat_scale * jax.random.normal(k_draw, (settings.draws,) + flat_loc.shape)
    draws = jax.vmap(back)(x)
    return losses, {n: bij[n](draws[n]) for n in sites}, gain


def guide_draws(key, guide, params, sites, n: int, args=(), batch_size: int = 200) -> dict:
    """``n`` draws of the latent ``sites`` (constrained) from a fitted guide (pure).

    AutoNormal: each site is drawn from its own Gaussian and mapped through its support's
    bijection, without running the model. ``guide.sample_posterior`` would run the whole
    model (its likelihood included) once per draw to constrain the sample, which for
    thousands of draws costs as much as the optimization. Other guides are joint: full
    draws, ``batch_size`` at a time, reduced to ``sites``.
    """
    if isinstance(guide, AutoNormal):
        out = {}
        for k, site in zip(jax.random.split(key, len(sites)), sites):
            loc = params[f"{site}_{guide.prefix}_loc"]
            scale = params[f"{site}_{guide.prefix}_scale"]
            x = loc + scale * jax.random.normal(k, (n,) + jnp.shape(loc))
            out[site] = biject_to(guide.prototype_trace[site]["fn"].support)(x)
        return out

    def one(k):
        s = guide.sample_posterior(k, params, *args)
        return {site: s[site] for site in sites}

    return jax.lax.map(one, jax.random.split(key, n), batch_size=batch_size)


def plateau_window(steps: int, window: float = 0.1) -> int:
    """Steps in each of the plateau check's windows."""
    return max(5, int(steps * window))


def elbo_plateau(losses, window: float = 0.1, gain: float | None = None, gain_tol: float = 1.0) -> dict:
    """Has the ELBO levelled off? Compare the mean loss of the last two windows of steps.

    ``decrease`` = mean(previous window) − mean(last window), in nats; its noise is the
    standard error of the difference of the two window means (steps treated as
    independent, which the decaying learning rate makes nearly true). Plateau when the
    decrease is below 3 standard errors (a false alarm rate of 0.1 % on a flat
    trace) or below 1e-4 of the loss' magnitude; a loss
    still falling faster than that means more steps (or a larger learning rate) are
    needed.

    A flat loss alone can also mean an optimizer that stopped moving (its learning rate
    decayed too early) short of the optimum. ``gain`` (from :func:`meanfield_fit`), the
    ELBO still to gain estimated from the last window's mean gradient, adds the check
    that sees that: a plateau also needs it below ``gain_tol`` nats (None or NaN: not
    checked).
    """
    x = np.asarray(losses, dtype=np.float64)
    n = plateau_window(len(x), window)
    last, prev = x[-n:], x[-2 * n:-n]
    decrease = float(prev.mean() - last.mean())
    se = float(math.sqrt(prev.var(ddof=1) / n + last.var(ddof=1) / n))
    tol = 1e-4 * abs(float(last.mean()))
    finite = bool(np.all(np.isfinite(x[-2 * n:])))
    flat = finite and (decrease <= 3.0 * se or decrease <= tol)
    out = {"final_loss": float(last.mean()), "decrease_last_window": decrease, "noise_se": se, "window_steps": n}
    if gain is not None and math.isfinite(gain):
        out["gain_left"] = float(gain)
        flat = flat and gain <= gain_tol
    return {**out, "plateau": flat}


def plateau_message(plateau: dict, steps: int) -> str | None:
    """The warning for an ELBO that had not levelled off (None when it had)."""
    if plateau["plateau"]:
        return None
    gain = f"; ELBO still to gain {plateau['gain_left']:.3g}" if "gain_left" in plateau else ""
    return (f"the ELBO had not levelled off after {steps} steps (the loss still fell by "
            f"{plateau['decrease_last_window']:.3g} between the last two windows of "
            f"{plateau['window_steps']} steps, noise {plateau['noise_se']:.3g}{gain}); raise steps")


def svi_sample_stats(losses) -> xr.Dataset:
    """sample_stats group of an SVI result: the ELBO trace over the optimizer steps."""
    loss = np.asarray(losses, dtype=np.float64)
    return xr.Dataset({"elbo": ("svi_step", -loss), "loss": ("svi_step", loss)},
                      coords={"svi_step": np.arange(loss.size)})
