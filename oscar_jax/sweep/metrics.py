"""Per-replicate metrics of the simulation study (Section 7, G.3): pure and vmappable.

* ``q_rmse``: RMSE of q̂_ij = σ(ĥ_ij) over the C(C−1)/2 pairs (28 in Table G1);
* ``kappa_rmse``: RMSE of κ̂_k = γ̂_k RMS(ŝ) across judges;
* ``kendall_tau``: Kendall τ_b between ŝ and s* (:func:`kendall_tau_b`);
* ``top1``: 1 if argmax ŝ is the true best candidate;
* ``coverage_cluster`` / ``coverage_model``: share of the pairs whose interval
  σ(ĥ ± 1.96 se) contains q*, with se from the delta method on h_ij = γ̄(s_i − s_j)
  and the prompt-cluster or the model-based covariance;
* ``q_bias`` / ``kappa_bias``: signed mean errors (attenuation shows as q̂ pulled
  towards ½, i.e. ``q_bias`` > 0, since every q*_ij with i < j is below ½ in Table G1).

:func:`rmse` and :func:`coverage` are the two formulas behind them; ``oscar demo``
scores its fits with them too.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..runtime.jit import register_pytree_names
from ..infer.fit_core import fit_core
from ..model.params import Layout
from ..infer.sandwich import covariances, delta_se, targets
from ..runtime.lazy_jax import jax, jnp

__all__ = ["CHECKS", "METRICS", "ReplicateMetrics", "Z_95", "coverage", "evaluate_replicate", "kendall_tau_b",
           "rmse"]

METRICS = ("q_rmse", "kappa_rmse", "kendall_tau", "top1", "coverage_cluster", "coverage_model",
           "q_bias", "kappa_bias")
CHECKS = ("stationary", "identified", "curvature_ok", "at_bound", "clusters_ok", "connected")
Z_95 = 1.96  # Equation (10) uses 1.96, not Φ⁻¹(0.975) = 1.95996…; kept for comparability


def _xp(*arrays):
    """jax.numpy inside the compiled evaluator, numpy for host values (no XLA program)."""
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def rmse(err):
    """Root mean square of the errors ``err`` (estimate − truth)."""
    xp = _xp(err)
    return xp.sqrt(xp.mean(xp.asarray(err) ** 2))


def coverage(lo, hi, truth):
    """Share of the intervals [lo, hi] that contain the true value (bounds included)."""
    xp = _xp(lo, hi, truth)
    return xp.mean(((lo <= truth) & (truth <= hi)).astype(xp.float64))


def kendall_tau_b(x, y) -> jax.Array:
    """Kendall's τ_b between two score vectors (ties allowed), pure and vmappable.

    τ_b = (n_c − n_d) / √((n_0 − n_x)(n_0 − n_y)) over the n_0 = C(C−1)/2 pairs, with n_x
    (n_y) the pairs tied in x (y): the same definition as ``scipy.stats.kendalltau``
    (variant "b"). O(C²) with C the vector length, which is small here (candidates).

    Parameters
    ----------
    x, y : (C,) arrays.

    Returns
    -------
    () float: NaN when either vector is constant (as scipy).
    """
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    n = x.shape[0]
    iu = np.triu_indices(n, 1)
    dx = jnp.sign(x[:, None] - x[None, :])[iu]
    dy = jnp.sign(y[:, None] - y[None, :])[iu]
    n0 = dx.shape[0]
    num = jnp.sum(dx * dy)
    untied_x = n0 - jnp.sum(dx == 0)
    untied_y = n0 - jnp.sum(dy == 0)
    den = jnp.sqrt(untied_x.astype(x.dtype) * untied_y.astype(x.dtype))
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.nan)


class ReplicateMetrics(NamedTuple):
    """Per-replicate metrics and B.3 check flags (leading axis B when batched)."""

    q_rmse: jax.Array
    kappa_rmse: jax.Array
    kendall_tau: jax.Array
    top1: jax.Array
    coverage_cluster: jax.Array
    coverage_model: jax.Array
    q_bias: jax.Array         # mean over pairs i < j of q̂_ij − q*_ij (signed)
    kappa_bias: jax.Array     # mean over judges of κ̂_k − κ*_k (signed)
    ok: jax.Array
    stationary: jax.Array
    identified: jax.Array
    curvature_ok: jax.Array
    at_bound: jax.Array
    clusters_ok: jax.Array
    connected: jax.Array
    converged: jax.Array
    n_iter: jax.Array
    objective: jax.Array
    grad_inf: jax.Array


register_pytree_names(ReplicateMetrics)


def evaluate_replicate(arrays, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol, *, layout: Layout,
                       n_clusters: int, max_iter: int = 100) -> ReplicateMetrics:
    """Fit one simulated dataset and score it against the truth (pure; vmap over ``arrays``).

    Parameters
    ----------
    arrays : DesignArrays of one replicate (N cells, one per record).
    omega : (G,) prompt weights: 1 for real prompts, 0 for padding.
    true_s : (C,) generating scores (τ_b and top-1 do not depend on their centring).
    true_kappa : (K,) generating κ*_k = γ*_k RMS(s*) (``SimTruth.kappa``).
    true_q : (C, C) generating q*_ij = σ(γ̄*(s*_i − s*_j)).
    ridge, v_bound, gtol : fit settings (traced: changing them does not recompile).
    layout : static layout of the method (reference judge 0).
    n_clusters : G, the number of prompts (including padded ones).
    """
    start = jnp.zeros((1, layout.n_theta), jnp.float64)  # B.3: simulations use the zero start
    fit = fit_core(arrays, omega, start, layout=layout, n_clusters=n_clusters, ridge=ridge,
                   v_bound=v_bound, max_iter=max_iter, gtol=gtol, eigenvalues=False)
    cov = covariances(fit.theta, fit.mask, fit.hess, fit.info, arrays, omega, layout=layout,
                      n_clusters=n_clusters, ridge=ridge)
    iu = np.triu_indices(layout.n_cand, 1)

    def h_pairs(theta):
        return targets(theta, layout).h[iu]

    tg = targets(fit.theta, layout)
    h_hat = tg.h[iu]
    q_true = true_q[iu]

    def q_coverage(cov_matrix):
        se = delta_se(h_pairs, fit.theta, cov_matrix)
        return coverage(jax.nn.sigmoid(h_hat - Z_95 * se), jax.nn.sigmoid(h_hat + Z_95 * se), q_true)

    q_err = jax.nn.sigmoid(h_hat) - q_true
    kappa_err = jnp.exp(tg.log_kappa) - true_kappa
    return ReplicateMetrics(
        q_rmse=rmse(q_err), kappa_rmse=rmse(kappa_err),
        kendall_tau=kendall_tau_b(tg.s, true_s),
        top1=(jnp.argmax(tg.s) == jnp.argmax(true_s)).astype(jnp.float64),
        coverage_cluster=q_coverage(cov.cluster), coverage_model=q_coverage(cov.model),
        q_bias=jnp.mean(q_err), kappa_bias=jnp.mean(kappa_err),
        ok=fit.ok, stationary=fit.stationary, identified=fit.identified, curvature_ok=fit.curvature_ok,
        at_bound=fit.at_bound, clusters_ok=fit.clusters_ok, connected=fit.connected,
        converged=fit.converged, n_iter=fit.n_iter, objective=fit.objective, grad_inf=fit.grad_inf,
    )
