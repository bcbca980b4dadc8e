"""NUTS started from an SVI fit: initial values and an inverse-mass-matrix seed from the guide.

The default NUTS start is uniform in (−2, 2) in the sampling coordinates, with an
identity mass matrix, so early warm-up runs long trajectories through a poorly scaled
posterior. A variational fit (a few seconds) already locates the posterior and its
scales: each chain starts at its own draw from the guide, and warm-up starts from the
guide's covariance (its dense block for σ_u and θ, its variances for the prompt
effects) instead of the identity. Warm-up still adapts step size and mass matrix, so
the draws are NUTS draws whatever the guide's errors; only the cost of getting there
changes (``benchmarks/bench_svi.py --nuts-init``; ``docs/bayes.md``).
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions.transforms import biject_to

from ..model.params import Layout
from ..model.problem import Problem
from ._model import ModelData, prompt_prior, unconstrained_from_theta
from ._svi import SviSettings, elbo_plateau, mode_start, run_svi_jit

__all__ = ["svi_start", "DEFAULT_START_SVI"]

# A low-rank guide: its covariance carries the sensitivity × score-scale correlation that
# the dense mass matrix is there for; 1500 steps locate the posterior well enough to start from.
DEFAULT_START_SVI = SviSettings(guide="lowrank", steps=1500, draws=1000)


def _sampling_coordinates(draws, data: ModelData, n_clusters: int | None):
    """Guide draws (one chain) → the NUTS sites' unconstrained values, (S, …) each."""
    out = {"theta": unconstrained_from_theta(draws.theta[0], data.is_log_gamma)}
    if n_clusters is not None:
        out["sigma_prompt"] = jnp.log(draws.sigma[0])
        # ζ of the prompt × candidate effect is already unconstrained; the slot shifts are zero-sum
        out["z_prompt"] = (draws.z[0] if data.occ is not None
                           else biject_to(prompt_prior(n_clusters).support).inv(draws.z[0]))
    return out


def svi_start(problem: Problem, *, md: ModelData, mask, layout: Layout, n_clusters: int | None, chains: int,
              seed: int, settings: SviSettings | None = None) -> tuple[dict, dict, dict]:
    """Initial values (one guide draw per chain) and inverse-mass seed for :func:`sample_posterior`.

    The SVI key is folded from ``seed`` apart from the NUTS key, so a run is deterministic
    given the seed. Returns ``(init, inverse_mass, info)``; ``info`` has the SVI time and
    the ELBO plateau check.
    """
    settings = DEFAULT_START_SVI if settings is None else settings
    if settings.draws < chains:
        settings = dataclasses.replace(settings, draws=chains)
    t0 = time.perf_counter()
    w0 = mode_start(problem, md, mask, seed)
    key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), 0x5717)
    losses, draws, _ = run_svi_jit(key, md, w0, layout=layout, n_clusters=n_clusters, settings=settings,
                                   batch=settings.resolved_batch(int(md.stats.shape[0])))
    w = _sampling_coordinates(draws, md, n_clusters)
    init = {k: v[:chains] for k, v in w.items()}
    block = [w["sigma_prompt"][:, None]] if n_clusters is not None else []
    dense = jnp.concatenate(block + [w["theta"]], axis=1)  # numpyro's order: σ_u, then θ
    inverse_mass = {"dense": jnp.atleast_2d(jnp.cov(dense, rowvar=False))}
    if n_clusters is not None:
        inverse_mass["z_prompt"] = jnp.var(w["z_prompt"], axis=0)
    init, inverse_mass = jax.block_until_ready((init, inverse_mass))
    info = {"svi_guide": settings.guide, "svi_steps": settings.steps, "svi_start_s": time.perf_counter() - t0,
            "svi_plateau": elbo_plateau(np.asarray(losses))["plateau"]}
    return init, inverse_mass, info
