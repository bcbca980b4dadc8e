"""Model-based and prompt-cluster sandwich covariances, delta-method intervals (Section 5).

Σ̂_cl = Ĥ⁻¹ V̂ Ĥ⁻ᵀ with Ĥ the exact penalized Hessian (including −(Y−p)∇²η) and
V̂ = G/(G−1) Σ_g (Ψ_g − Ψ̄)(Ψ_g − Ψ̄)ᵀ; Σ̂_MB = [R̂ᵀŴR̂ + λI]⁻¹ (B.3). The small-sample
factor is G/(G−1) only; statsmodels' default cluster covariance also multiplies by
(N−1)/(N−P), which must be divided out to compare. Coordinates fixed by column selection
have zero variance. Pure functions; they vmap over simulated datasets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..runtime.lazy_jax import jax, jnp
from .derivatives import CHUNK, cluster_score_block, cluster_scores_phi
from ..model.links import sigmoid
from ..model.design import DesignArrays
from ..model.params import Layout
from ..runtime.jit import RUN_ONCE, persistent_jit, register_pytree_names

# What a model-based (or independence-assuming posterior) interval must say of itself.
INDEPENDENCE_NOTE = "assumes independent records; too narrow under prompt dependence"

__all__ = ["Covariances", "covariances", "covariances_jit", "covariances_program", "delta_se", "field_probability",
           "host_quadratic_se", "host_sym_solve", "host_target_jacobians", "host_target_se", "host_targets",
           "meat_blocks", "sandwich", "targets", "targets_batch_jit", "Targets"]


class Covariances(NamedTuple):
    cluster: jax.Array  # (P, P)
    model: jax.Array    # (P, P)


def _sym_solve(h, rhs):
    # Cholesky rather than an explicit inverse: Ĥ is symmetric positive definite when the
    # B.3 curvature check passes, and cho_solve is the stable way to apply Ĥ⁻¹.
    chol = jnp.linalg.cholesky(h)
    return jax.scipy.linalg.cho_solve((chol, True), rhs)


MEAT_ROWS = 1 << 12  # clusters per block of the meat's sum beyond one block (~5 MB of work arrays at dim φ 160)


def _meat_term(psi, omega, mean):
    """Σ over the rows of ω_g (Ψ_g − Ψ̄)(Ψ_g − Ψ̄)ᵀ: one block of the meat."""
    centred = psi - mean
    return (centred.T * omega) @ centred


def _centred_meat(psi, omega, mean):
    """Σ_g ω_g (Ψ_g − Ψ̄)(Ψ_g − Ψ̄)ᵀ.

    Beyond MEAT_ROWS clusters the sum runs over blocks of rows in a loop: the centred and
    weighted copies of the whole (G × dim φ) Ψ were two of the three such arrays at the
    sandwich's peak (+100 MB at 10⁶ records). A block that would run past the end is moved
    back to end at G, and the rows it repeats weigh 0. Up to MEAT_ROWS the one product as before.
    """
    n = psi.shape[0]
    if n <= MEAT_ROWS:
        return _meat_term(psi, omega, mean)

    def block(i, acc):
        lo = jnp.minimum(i * MEAT_ROWS, n - MEAT_ROWS)
        rows = lo + jnp.arange(MEAT_ROWS)
        w = jnp.where(rows >= i * MEAT_ROWS, jax.lax.dynamic_slice_in_dim(omega, lo, MEAT_ROWS), 0.0)
        return acc + _meat_term(jax.lax.dynamic_slice_in_dim(psi, lo, MEAT_ROWS), w, mean)

    zero = jnp.zeros((psi.shape[1],) * 2, psi.dtype)
    return jax.lax.fori_loop(0, -(-n // MEAT_ROWS), block, zero)


def meat_blocks(pair_g, n_clusters: int) -> tuple[tuple[int, ...], int] | None:
    """Where the meat should be summed a block of MEAT_ROWS prompts at a time without ever
    holding Ψ whole (:func:`covariances`' ``blocks``): (the first pair of each block, the
    pairs of the longest block), from the design's prompt of each pair (sorted, as
    build_design leaves them), in host numpy. None below CHUNK pairs or MEAT_ROWS prompts
    (Ψ is small), for unsorted pairs, or where one block's pairs would outweigh Ψ's saving.
    """
    n = int(np.shape(pair_g)[0])
    if n <= CHUNK or n_clusters <= MEAT_ROWS:
        return None
    g = np.asarray(pair_g)
    if np.any(g[1:] < g[:-1]):
        return None
    starts = np.searchsorted(g, np.arange(0, n_clusters, MEAT_ROWS))
    span = int(np.max(np.diff(np.append(starts, n))))
    if span > 8 * CHUNK:
        return None
    return tuple(int(x) for x in starts), span


def _blocked_meat(theta, arrays: DesignArrays, layout: Layout, omega, starts, span: int):
    """(Σ_g ω_g (Ψ_g − Ψ̄)(Ψ_g − Ψ̄)ᵀ, Σ ω) with Ψ made a block of MEAT_ROWS prompts at a
    time, twice (the weighted mean Ψ̄, then the centred sum), never whole: at 10⁷ Arena-style
    records Ψ is 500,000 prompts × dim φ 160 (~640 MB). The blocks are
    :func:`_centred_meat`'s, the last one padded with weight-0 rows instead of moved back."""
    phi = jnp.asarray(layout.jacobian) @ theta
    n = arrays.pair_g.shape[0]
    n_blocks = len(starts)
    first = jnp.asarray(starts)
    padded = jnp.zeros(n_blocks * MEAT_ROWS, phi.dtype).at[:omega.shape[0]].set(omega)

    def block(b):
        lo = jnp.minimum(first[b], n - span)
        psi = cluster_score_block(phi, arrays, layout, lo, span, b * MEAT_ROWS, MEAT_ROWS)
        return psi, jax.lax.dynamic_slice_in_dim(padded, b * MEAT_ROWS, MEAT_ROWS)

    def weighted(b, acc):
        psi, w = block(b)
        return acc + w @ psi

    g_eff = jnp.sum(omega)
    mean = jax.lax.fori_loop(0, n_blocks, weighted, jnp.zeros(layout.n_phi, phi.dtype)) / g_eff

    def centred(b, acc):
        return acc + _meat_term(*block(b), mean)

    return jax.lax.fori_loop(0, n_blocks, centred, jnp.zeros((layout.n_phi,) * 2, phi.dtype)), g_eff


def covariances(theta, mask, hess, info, arrays: DesignArrays, omega, *, layout: Layout,
                n_clusters: int, ridge, blocks: tuple[tuple[int, ...], int] | None = None) -> Covariances:
    """Cluster-robust and model-based covariance of θ̂.

    ``hess`` is the penalized observed Hessian from the fit (identity on fixed
    coordinates), ``info`` the unpenalized expected information (zero on fixed), ``omega``
    the cluster weights the fit used: a cluster of weight ω counts as ω clusters.
    ``blocks`` (static; :func:`meat_blocks`): sum the meat a block of prompts at a time
    without holding the G × dim φ cluster scores whole.
    """
    # Ψ_g in the expanded space φ (unit weights); V = Jᵀ V_φ J. Forming V_φ first avoids
    # the (G × dim φ) · (dim φ × dim θ) product, the largest cost when G ~ N.
    omega = jnp.asarray(omega, jnp.float64)
    if blocks is None:
        psi = cluster_scores_phi(theta, arrays, layout, n_clusters)
        g_eff = jnp.sum(omega)
        meat = _centred_meat(psi, omega, (omega @ psi) / g_eff)
    else:
        meat, g_eff = _blocked_meat(theta, arrays, layout, omega, *blocks)
    v_phi = (g_eff / (g_eff - 1.0)) * meat
    return sandwich(v_phi, jnp.asarray(layout.jacobian), mask, hess, info, ridge, jnp, _sym_solve)


def sandwich(v_phi, jac, mask, hess, info, ridge, xp, sym_solve) -> Covariances:
    """Ĥ⁻¹ (Jᵀ V_φ J) Ĥ⁻ᵀ and [Î + λI]⁻¹ on the free coordinates (zero on fixed ones): the
    dim-θ algebra of :func:`covariances`, in ``xp`` (jax.numpy compiled, or numpy for a fit
    whose meat is summed on the host: :func:`~oscar_jax.infer.plain_bt.bt_covariances`)."""
    outer = xp.outer(mask, mask)
    v = (jac.T @ v_phi @ jac) * outer
    a = sym_solve(hess, v)
    cluster = sym_solve(hess, a.T).T * outer
    cluster = 0.5 * (cluster + cluster.T)
    n = mask.shape[0]
    pen_info = info + ridge * xp.eye(n) * outer + xp.diag(1.0 - mask)
    model = sym_solve(pen_info, xp.eye(n)) * outer
    model = 0.5 * (model + model.T)
    return Covariances(cluster=cluster, model=model)


def host_sym_solve(h, rhs):
    """:func:`_sym_solve` in host numpy (Cholesky, then two solves with the factor)."""
    chol = np.linalg.cholesky(h)
    return np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))


class Targets(NamedTuple):
    """Scale-invariant targets and their θ-gradients (A.8), candidates C, judges K."""

    s: jax.Array          # (C,) scores (sum zero), on the reference judge's scale
    x: jax.Array          # (C,) average-judge logits x = γ̄ s: the same for any reference judge
    h: jax.Array          # (C, C) h_ij = γ̄ (s_i − s_j)
    log_gamma: jax.Array  # (K,)
    log_kappa: jax.Array  # (K,) log κ_k = log γ_k + log RMS(s)
    gamma_bar: jax.Array  # ()
    field: jax.Array      # (C,) logit of mean_{j≠i} q_ij (win probability against the field)


def field_probability(q, xp=jnp):
    """(…, C) mean_{j≠i} q_ij of a (…, C, C) win-probability matrix: the win probability against the field."""
    c = q.shape[-1]
    off = 1.0 - xp.eye(c, dtype=q.real.dtype)
    return xp.sum(q * off, axis=-1) / (c - 1)


def targets(theta, layout: Layout, weights=None, xp=jnp) -> Targets:
    """Scores, log γ, log κ and the average-judge targets at θ.

    ``weights`` (K,) weigh the judges in γ̄ = Σ w_k γ_k / Σ w_k: the fit's
    :func:`~oscar_jax.infer.identification.average_judge_weights` (1 for a judge whose γ
    the data determine, 0 for one only the ridge holds), so that the average-judge scale
    is not made by the ridge; None weighs every judge alike (simulation truths).
    ``xp``: jax.numpy (compiled, vmapped over draws) or numpy, where θ may carry leading
    batch axes and be complex (:func:`host_target_se`): the one definition for both.
    """
    jac = xp.asarray(layout.jacobian)
    phi = jac @ theta if theta.ndim == 1 else theta @ jac.T
    pb = layout.phi_blocks
    s = phi[..., pb["s"]]
    if layout.structure.learn_gamma:
        log_gamma = phi[..., pb["v"]]
    else:
        log_gamma = xp.zeros(theta.shape[:-1] + (layout.n_judge,), theta.dtype)
    gamma = xp.exp(log_gamma)
    if weights is None:
        gamma_bar = xp.mean(gamma, axis=-1)
    else:
        w = xp.asarray(weights, gamma.real.dtype)
        gamma_bar = xp.sum(w * gamma, axis=-1) / xp.sum(w)
    x = gamma_bar[..., None] * s
    h = gamma_bar[..., None, None] * (s[..., :, None] - s[..., None, :])
    rms = xp.sqrt(xp.mean(s ** 2, axis=-1))
    log_kappa = log_gamma + xp.log(rms)[..., None]
    field = field_probability(jax.nn.sigmoid(h) if xp is jnp else sigmoid(h), xp)
    return Targets(s=s, x=x, h=h, log_gamma=log_gamma, log_kappa=log_kappa, gamma_bar=gamma_bar,
                   field=xp.log(field) - xp.log1p(-field))


def delta_se(fn, theta, cov):
    """Delta-method standard errors of every output of ``fn(θ)`` (a pytree of arrays)."""
    jac = jax.jacfwd(fn)(theta)

    def se(j):
        flat = j.reshape(-1, theta.shape[0])
        var = jnp.einsum("ip,pq,iq->i", flat, cov, flat)
        return jnp.sqrt(jnp.maximum(var, 0.0)).reshape(j.shape[:-1])

    return jax.tree_util.tree_map(se, jac)


COMPLEX_STEP = 1e-30  # ∂f/∂θ_p = Im f(θ + i·h·e_p)/h + O(h²): exact to rounding, no cancellation


def host_targets(theta, layout: Layout, weights=None) -> Targets:
    """:func:`targets` at one θ in host numpy: microseconds, where a compiled program costs
    a fit's first run compiling and every run loading it."""
    with np.errstate(divide="ignore", invalid="ignore"):  # as compiled: a field probability of 0 or 1 is ∓inf
        return targets(np.asarray(theta, np.float64), layout, weights, xp=np)


STEP_CHUNK = 32  # complex steps per batched call: its (steps, C, C) arrays stay ~5 MB at C = 100


def host_target_jacobians(theta, layout: Layout, weights=None) -> Targets:
    """∂/∂θ of every field of :func:`targets`, in host numpy: each field's shape + (P,).

    Taken by complex steps (Squire and Trapp 1998; Martins, Sturdza and Alonso 2003)
    through the same :func:`targets`, STEP_CHUNK steps per batched call. No difference is
    taken, so the derivative is exact to rounding at any step this small (the targets are
    analytic in θ); it equals :func:`delta_se`'s forward-mode Jacobian to ~1e-15
    (tests/test_intervals.py). The targets read φ only through its score and log γ blocks,
    so a direction of θ that moves neither (a bias coefficient) has a zero column and takes
    no step.
    """
    theta = np.asarray(theta, np.float64)
    p = theta.shape[0]
    index = np.arange(layout.n_phi)
    read = np.concatenate([index[layout.phi_blocks[b]] for b in ("s", "v") if b in layout.phi_blocks])
    moves = np.flatnonzero(np.any(np.asarray(layout.jacobian)[read] != 0, axis=0))
    parts = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for lo in range(0, len(moves), STEP_CHUNK):
            dirs = moves[lo:lo + STEP_CHUNK]
            steps = np.zeros((len(dirs), p))
            steps[np.arange(len(dirs)), dirs] = COMPLEX_STEP
            t = targets(theta + 1j * steps, layout, weights, xp=np)
            parts.append([x.imag / COMPLEX_STEP for x in t])

    def jacobian(field: int, shape):
        j = np.zeros((*shape, p))
        j[..., moves] = np.moveaxis(np.concatenate([part[field] for part in parts]), 0, -1)
        return j

    # (the scores always move, so the loop ran: t holds the last batch, its fields' shapes)
    return Targets(*(jacobian(i, x.shape[1:]) for i, x in enumerate(t)))


def host_quadratic_se(jac, cov) -> np.ndarray:
    """√diag(J Σ Jᵀ) for a Jacobian of shape (outputs…, P): the delta-method SEs."""
    flat = jac.reshape(-1, jac.shape[-1])
    var = np.sum((flat @ np.asarray(cov, np.float64)) * flat, axis=1)  # BLAS; einsum's loop took 0.1 s at C = 50
    return np.sqrt(np.maximum(var, 0.0)).reshape(jac.shape[:-1])


def host_target_se(theta, cov, layout: Layout, weights=None) -> Targets:
    """Delta-method SEs of every field of :func:`targets`, in host numpy
    (:func:`host_target_jacobians`)."""
    return Targets(*(host_quadratic_se(j, cov) for j in host_target_jacobians(theta, layout, weights)))


register_pytree_names(Covariances, Targets)
covariances_jit = persistent_jit(covariances, static_argnames=("layout", "n_clusters", "blocks"))
_covariances_run_once = persistent_jit(covariances, static_argnames=("layout", "n_clusters", "blocks"),
                                       compiler_options=RUN_ONCE)


def covariances_program(n_cells: int):
    """:data:`covariances_jit`, or below 10⁵ cells the same program compiled without XLA's
    backend optimisations: there it runs in milliseconds either way (UltraFeedback 6.7 ms
    optimised, 6.8 not) and the optimisations cost 0.1 s of compilation; at 10⁶ records
    they pay (0.16 s against 0.21 s)."""
    return _covariances_run_once if n_cells < 100_000 else covariances_jit


def _targets_of_draws(draws, layout: Layout, weights=None) -> Targets:
    return jax.vmap(lambda th: targets(th, layout, weights))(draws)


targets_batch_jit = persistent_jit(_targets_of_draws, static_argnames=("layout",))
targets_batch_jit.__doc__ = "Targets of every row of a (B, P) array of θ draws, one compiled program (jitted)."
