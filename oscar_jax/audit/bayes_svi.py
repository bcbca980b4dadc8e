"""The audit's Bayesian effect models fitted by SVI (NumPyro, optax) instead of NUTS.

``fit_audit_model(..., method="svi")`` fits a Gaussian approximation to the posterior of
the *same* model NUTS samples, written in the centred coordinates of
:func:`~oscar_jax.audit.bayes_models.ordinal_model_centred` (a change of variables with
unit Jacobian plus C auxiliary standard normals, so the joint density is the original
one). In those coordinates the condition effects are nearly independent of the item-
and cell-level terms a posteriori, which is what lets a mean-field guide (AutoNormal)
give δ intervals close to NUTS'; in the original coordinates mean-field intervals were
about half as wide as NUTS' on the worked example of docs/audit.md.

The optimizer, guides, plateau check and ELBO trace are the shared ones of
:mod:`oscar_jax.infer.posterior` (Adam on a warm-up/cosine schedule in one ``lax.scan``). The
default mean-field guide runs as :func:`~oscar_jax.infer.posterior.meanfield_fit`, the
AutoNormal ELBO written directly on the model's ``potential_energy``: on the worked
example it compiles in ~7 s instead of ~25 s and steps in ~8 ms instead of ~30 ms, and
its plateau check includes the ELBO still to gain from the last window's gradients.
The guide starts at moment estimates from the data (item levels and condition contrasts
on the latent scale), so the means begin near the posterior and the steps mostly fit
the scales.

Caveat, stated with every result: a Gaussian variational approximation fitted by
KL(q‖p) tends to under-disperse; check against NUTS where it is affordable.
"""

from __future__ import annotations

import time
import warnings
from functools import partial

import numpy as np

from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError, check_ci_prob
from ..infer.posterior import (NARROW_WARNING, SviSettings, VariationalWarning, elbo_plateau, guide_draws, guide_name, make_guide,
    meanfield_fit, optimize, plateau_message)
from .bayes_models import BayesPrior, centred_effects, logit_model_centred, ordinal_model_centred
from .data import AuditData
from .posterior import AuditPosterior, posterior_from_draws, setup_model

__all__ = ["AUDIT_SVI", "fit_audit_svi", "initial_values", "run_audit_svi"]

# Default settings for audits, chosen on the worked example of docs/audit.md (2,000 items,
# 18,000 latent variables; figures in docs/audit.md, "SVI"): at 1,500 steps the ELBO still
# had ~3 nats to gain, at 2,000 steps 0.7 (plateau); a final rate of 10 % of the peak (with
# the iterates averaged over the last window) converges where 1 % stalled.
AUDIT_SVI = SviSettings(guide="normal", steps=2000, learning_rate=0.08, draws=4000, init_scale=0.1, flat_tail=0.2,
                        end_fraction=0.1)

HYPER_SITES = ("sigma_item", "sigma_inter", "sigma_noise", "mu", "cutpoints")


def initial_values(kind: str, args, ref: int, interaction: bool) -> dict:
    """Starting means of the guide (host numpy): moment estimates on the latent scale.

    Labels: cutpoints at the logits of the pooled cumulative label shares; each judgment
    is placed at the middle of its label's interval on the logistic latent scale (one
    unit beyond the outer cutpoints for the extreme labels); an item's level is the mean
    of its judgments, a condition's contrast the mean over items of its deviation from
    the item level, relative to the reference. Probabilities: the same with the cell
    means of logit(p).
    """
    if kind == "label":
        counts = np.asarray(args[0], float)                                   # (I, C, M)
        share = counts.sum((0, 1)) / max(counts.sum(), 1.0)
        cum = np.clip(np.cumsum(share)[:-1], 0.02, 0.98)
        cut = np.maximum.accumulate(np.log(cum / (1 - cum)) + 1e-3 * np.arange(cum.size))
        mid = np.concatenate([[cut[0] - 1.0], (cut[:-1] + cut[1:]) / 2.0, [cut[-1] + 1.0]])
        n = counts.sum(-1)
        cell = (counts * mid).sum(-1) / np.maximum(n, 1.0)                    # (I, C) mean latent value
    else:
        n, cell = np.asarray(args[0], float), np.asarray(args[1], float)
    seen = n > 0
    level = (cell * seen).sum(1) / np.maximum(seen.sum(1), 1)
    dev = np.where(seen, cell - level[:, None], 0.0)
    g = dev.sum(0) / np.maximum(seen.sum(0), 1)
    g = g - g[ref]
    out = {"contrast": np.delete(g, ref), "item_level": level, "sigma_item": max(float(level.std()), 0.1)}
    if kind == "label":
        out["cutpoints"] = cut
        if interaction:
            out.update(sigma_inter=0.5, z_cell=np.zeros(n.shape), z_mean=np.zeros(n.shape[1]),
                       z_item=np.zeros(n.shape[0]))
    else:
        ss = np.asarray(args[2], float)
        out.update(mu=float(level.mean()),
                   sigma_noise=float(np.sqrt(max(ss.sum() / max((n - 1).clip(0).sum(), 1.0), 1e-4))))
        if interaction:
            out["sigma_inter"] = 0.5
    return {k: jnp.asarray(v, jnp.float64) for k, v in out.items()}


def _model(kind: str, ref: int, interaction: bool, prior: BayesPrior):
    base = ordinal_model_centred if kind == "label" else logit_model_centred
    return partial(base, ref=ref, interaction=interaction, prior=prior)


def run_audit_svi(key, args, init: dict, *, kind: str, ref: int, interaction: bool, prior: BayesPrior,
                  settings: SviSettings):
    """Fit the guide and draw from it (pure; jit with the keyword arguments static).

    Returns (losses (steps,), δ draws (draws, C) with 0 at the reference, hyperparameter
    draws {site: (draws, …)}, the gradient check's z-score (NaN for the low-rank guide)).
    """
    model = _model(kind, ref, interaction, prior)
    sites = ["contrast"] + [s for s in HYPER_SITES + ("z_mean",) if s in init]
    if settings.guide == "normal":
        losses, draws, gain = meanfield_fit(key, model, args, init, settings, sites)
    else:
        guide = make_guide(model, settings, init)
        k_init, k_steps, k_draw = jax.random.split(key, 3)
        losses, params = optimize(k_init, k_steps, model, guide, settings, lambda _: args)
        draws = guide_draws(k_draw, guide, params, sites, settings.draws, args)
        gain = jnp.nan
    delta = centred_effects(draws["contrast"], ref, args[0].shape[0], draws.get("sigma_inter"), draws.get("z_mean"))
    return losses, delta, {site: draws[site] for site in HYPER_SITES if site in draws}, gain


run_audit_svi_jit = jax.jit(run_audit_svi, static_argnames=("kind", "ref", "interaction", "prior", "settings"))


def fit_audit_svi(data: AuditData, reference: str, *, others=None, seed: int = 0, ci_prob: float = 0.95,
                  interaction="auto", prior: BayesPrior = BayesPrior(), settings: SviSettings | None = None,
                  warn: bool = True) -> AuditPosterior:
    """The SVI branch of :func:`~oscar_jax.audit.fit_audit_model` (same arguments and result;
    ``delta`` has one "chain" of ``settings.draws`` draws from the guide, ``elbo`` the loss
    trace, ``diagnostics`` the plateau check)."""
    ci_prob = check_ci_prob(ci_prob)
    settings = AUDIT_SVI if settings is None else settings
    if not isinstance(settings, SviSettings):
        raise OscarInputError(f"svi must be an oscar_jax.infer.posterior.SviSettings, got {type(settings).__name__}")
    if settings.batch_size is not None:
        raise OscarInputError("the audit's SVI uses every (item, condition) cell each step; leave batch_size unset")
    setup = setup_model(data, reference, interaction)
    init = initial_values(data.kind, setup.args, setup.ref, setup.interaction)
    t0 = time.perf_counter()
    losses, delta, hyper, gain = run_audit_svi_jit(jax.random.PRNGKey(int(seed)), tuple(setup.args), init, kind=data.kind,
                                             ref=setup.ref, interaction=setup.interaction, prior=prior,
                                             settings=settings)
    losses = np.asarray(jax.block_until_ready(losses))
    seconds = time.perf_counter() - t0
    plateau = elbo_plateau(losses, gain=float(gain))
    message = plateau_message(plateau, settings.steps)
    notes = list(setup.notes) + [NARROW_WARNING] + ([message] if message else [])
    diagnostics = {"method": "svi", "guide": guide_name(settings), "steps": settings.steps,
                   "learning_rate": settings.learning_rate, "n_draws": settings.draws, "num_chains": 1, **plateau,
                   "svi_s_including_compile": seconds}
    hyper = {k: np.asarray(v)[None] for k, v in hyper.items()}
    post = posterior_from_draws(data, setup, np.asarray(delta)[None], hyper, others=others, ci_prob=ci_prob,
                                diagnostics=diagnostics, notes=notes, elbo=losses)
    if warn:
        warnings.warn(VariationalWarning(NARROW_WARNING), stacklevel=3)
        if message:
            warnings.warn(VariationalWarning(message), stacklevel=3)
    return post
