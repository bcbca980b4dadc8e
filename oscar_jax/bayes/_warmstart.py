"""NUTS warm starts: initial values and an inverse-mass-matrix seed from the point fit or an SVI fit.

``init="fit"`` (:func:`fit_start`): each chain starts at a draw from N(θ̂, Σ̂), the
penalized point fit θ̂ (the posterior mode of the plain model) and its prompt-cluster
sandwich covariance Σ̂ (about the posterior's width under prompt dependence), mapped to
the sampling coordinates; warm-up's dense inverse mass matrix starts from Σ̂ there instead
of the identity. The fit takes well under a second; warm-up still adapts.

``init="svi"`` (:func:`svi_start`):

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

import numpy as np
from numpyro.distributions.transforms import biject_to

from ..fit import point_fit
from ..model.params import Layout
from ..model.problem import Problem
from ..runtime.lazy_jax import jax, jnp
from ._coordinates import sampler_coordinates, theta_from_unconstrained, unconstrained_from_theta
from ._model import ModelData, prompt_prior
from ._svi import SviSettings, elbo_plateau, mode_start, run_svi_jit

__all__ = ["fit_start", "svi_start", "DEFAULT_START_SVI"]

# A low-rank guide: its covariance carries the sensitivity × score-scale correlation that
# the dense mass matrix is there for; 1500 steps locate the posterior well enough to start from.
DEFAULT_START_SVI = SviSettings(guide="lowrank", steps=1500, draws=1000)


def _sampling_coordinates(draws, data: ModelData, n_clusters: int | None):
    """Guide draws (one chain) → the NUTS sites' unconstrained values, (S, …) each."""
    if n_clusters is None:
        return {"theta": unconstrained_from_theta(draws.theta[0], data.is_log_gamma)}
    out = {"sigma_prompt": jnp.log(draws.sigma[0])}
    if data.occ is not None:  # ζ of the prompt × candidate effect is unconstrained; see model_coordinates
        out["theta"], out["z_prompt"] = sampler_coordinates(draws.theta[0], draws.sigma[0], draws.z[0], data.occ,
                                                            data.is_log_gamma)
    else:  # the slot shifts are zero-sum
        out["theta"] = unconstrained_from_theta(draws.theta[0], data.is_log_gamma)
        out["z_prompt"] = biject_to(prompt_prior(n_clusters).support).inv(draws.z[0])
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


# log σ_u of the chains' starts: uniform on (−1, 1), i.e. σ_u from 0.37 to 2.7 on the score scale,
# with a start variance for warm-up's mass matrix to match; the prompt effects ζ start at prior draws.
_LOG_SIGMA_START = 1.0


def fit_start(problem: Problem, *, md: ModelData, mask, n_clusters: int | None, chains: int,
              seed: int, point=None) -> tuple[dict, dict, dict]:
    """Initial values (one per chain) and inverse-mass seed from the penalized point fit.

    θ starts at draws from N(θ̂, Σ̂) in the sampling coordinates w (log γ coordinates
    through the Jacobian of :func:`theta_from_unconstrained` at θ̂), Σ̂ the cluster
    sandwich covariance of the free coordinates (the model-based one where the sandwich
    is not available). The key is folded from ``seed`` apart from the NUTS key.
    ``point``: that fit when the caller has it already (``fit_bayes`` does), else it is run here.
    Returns ``(init, inverse_mass, info)`` as :func:`svi_start`.
    """
    t0 = time.perf_counter()
    if point is None:
        point = point_fit(problem, seed=int(seed))
    free = np.flatnonzero(np.asarray(mask) > 0)
    theta = jnp.asarray(np.asarray(point.theta)[free])
    w = unconstrained_from_theta(theta, md.is_log_gamma)
    slope = jax.vmap(jax.grad(lambda x, g: theta_from_unconstrained(x, g)))(w, md.is_log_gamma)  # dθ/dw
    if point.cov is not None:
        cov = np.asarray(point.cov.cluster)[np.ix_(free, free)]
    else:  # no curvature at θ̂: the prior's variances
        cov = np.diag(np.asarray(md.prior_sd) ** 2)
    cov_w = cov / np.outer(np.asarray(slope), np.asarray(slope))
    cov_w = 0.5 * (cov_w + cov_w.T) + 1e-10 * np.eye(len(free))
    key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), 0xF17)
    k_theta, k_sigma, k_z = jax.random.split(key, 3)
    chol = np.linalg.cholesky(cov_w)
    init = {"theta": w[None, :] + jax.random.normal(k_theta, (chains, len(free))) @ jnp.asarray(chol).T}
    dense = cov_w
    inverse_mass = {}
    if n_clusters is not None:
        init["sigma_prompt"] = jax.random.uniform(k_sigma, (chains,), minval=-_LOG_SIGMA_START, maxval=_LOG_SIGMA_START)
        n_z = md.occ.zeta_slot.shape[0] if md.occ is not None else n_clusters - 1
        init["z_prompt"] = jax.random.normal(k_z, (chains, n_z))
        block = np.zeros((len(free) + 1, len(free) + 1))
        block[0, 0] = _LOG_SIGMA_START ** 2 / 3.0   # variance of the start distribution
        block[1:, 1:] = cov_w
        dense = block
        inverse_mass["z_prompt"] = jnp.ones(n_z)
    inverse_mass["dense"] = jnp.asarray(dense)
    init, inverse_mass = jax.block_until_ready((init, inverse_mass))
    return init, inverse_mass, {"fit_start_s": time.perf_counter() - t0}
