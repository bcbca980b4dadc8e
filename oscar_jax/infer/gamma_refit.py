"""The fixed-score sensitivity refit of Equation (11) as a pure, vmappable kernel.

With candidate scores s̃ (and position effects β_k) held fixed, each judge's sensitivity
is refitted alone: argmin_{γ ≥ 0} Σ_t ℓ_t(γ_k d̃_t [+ β_k]) + (ridge/2)‖γ‖², d̃ = s̃_a − s̃_b.
η goes through the model core's own :func:`~oscar_jax.model.likelihood.local_loss` on a γ ≡ 1
layout (φ_loc = (γ_k s̃_a, γ_k s̃_b[, β_k])), so there is no second definition of η.
The protocol around it (calibration fits, splits, tables) is :mod:`oscar_jax.attenuation`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from ..model.design import DesignArrays, cell_stats_from_cluster_weights
from ..model.likelihood import local_loss
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp
from .solver import iterate
from ..model.spec import Structure

__all__ = ["REFIT_RIDGE", "GammaState", "BacktrackState", "refit_gamma", "refit_gamma_batch", "refit_layout"]

REFIT_RIDGE = 0.05  # D.3: penalty 0.05 γ² / 2
MAX_HALVINGS = 60   # backtracking steps before a judge keeps its γ for this iteration


@lru_cache(maxsize=16)
def refit_layout(n_cand: int, n_judge: int, with_pos: bool) -> Layout:
    """γ ≡ 1 layout whose local_loss gives η = γ_k (s̃_a − s̃_b) [+ β_k] (Eq. 11)."""
    return Layout(n_cand, n_judge, 0, 0, Structure(("pos",) if with_pos else (), False, "fractional"))


class GammaState(NamedTuple):
    """State of the projected Newton iteration of :func:`refit_gamma`."""

    gamma: jax.Array   # (K,) sensitivities, ≥ 0
    grad: jax.Array    # (K,) gradient of each judge's objective at gamma
    n_iter: jax.Array  # Newton steps so far


class BacktrackState(NamedTuple):
    """State of the per-judge Armijo backtracking inside one Newton step."""

    t: jax.Array       # (K,) step fraction of each judge
    done: jax.Array    # (K,) bool: the judge's step is accepted
    n_halvings: jax.Array


def refit_gamma(arrays: DesignArrays, stats, s_tilde, beta, *, layout: Layout, ridge, max_iter: int):
    """argmin_{γ ≥ 0} Σ_t ℓ_t(γ_k d̃_t [+ β_k]) + (ridge/2)‖γ‖², all K judges at once.

    The objective separates by judge and each f_k is convex in γ_k with curvature
    ≥ ridge > 0 (η is linear in γ), so a per-judge projected Newton step with
    backtracking (Armijo) converges from γ = 1; the constrained minimum of a convex
    1-D function is its unconstrained one clipped at 0. Returns (γ (K,), converged,
    judge weight (K,)).
    """
    n_judge = layout.n_judge
    with_pos = "pos" in layout.structure.terms

    def per_judge(gamma):
        ga = gamma[arrays.k]
        cols = [ga * s_tilde[arrays.a], ga * s_tilde[arrays.b]]
        if with_pos:
            cols.append(beta[arrays.k])
        ploc = jnp.stack(cols, axis=1)
        per_cell = jax.vmap(lambda p, z, s: local_loss(p, z, s, layout))(ploc, arrays.z, stats)
        return jax.ops.segment_sum(per_cell, arrays.k, num_segments=n_judge) + 0.5 * ridge * gamma ** 2

    total = lambda gamma: jnp.sum(per_judge(gamma))  # noqa: E731
    grad = jax.grad(total)

    def grad_diag(gamma):
        # Separable objective: the Hessian is diagonal, so H·1 is its diagonal.
        return jax.jvp(grad, (gamma,), (jnp.ones_like(gamma),))

    weight = jax.ops.segment_sum(stats[:, 0], arrays.k, num_segments=n_judge)
    tol = 1e-10 * jnp.maximum(weight, 1.0)

    def proj(gamma, g):
        return jnp.where((gamma <= 0.0) & (g > 0.0), 0.0, g)

    def terminate(state: GammaState):
        return ~((state.n_iter < max_iter) & jnp.any(jnp.abs(proj(state.gamma, state.grad)) > tol))

    def step(state: GammaState) -> GammaState:
        gamma = state.gamma
        g, h = grad_diag(gamma)
        direction = -g / jnp.maximum(h, ridge)
        f0 = per_judge(gamma)

        def ls_terminate(ls: BacktrackState):
            return ~(~jnp.all(ls.done) & (ls.n_halvings < MAX_HALVINGS))

        def ls_step(ls: BacktrackState) -> BacktrackState:
            cand = jnp.maximum(gamma + ls.t * direction, 0.0)
            f_c = per_judge(cand)
            # Armijo decrease, or no increase beyond rounding (at the optimum both are noise).
            ok = (f_c <= f0 + 1e-4 * g * (cand - gamma)) | (f_c - f0 <= 1e-13 * jnp.maximum(jnp.abs(f0), 1.0))
            done = ls.done | ok
            return BacktrackState(jnp.where(done, ls.t, 0.5 * ls.t), done, ls.n_halvings + 1)

        ls = iterate(ls_step, ls_terminate, BacktrackState(jnp.ones_like(gamma), jnp.zeros(n_judge, bool), 0))
        new = jnp.where(ls.done, jnp.maximum(gamma + ls.t * direction, 0.0), gamma)
        return GammaState(new, grad(new), state.n_iter + 1)

    gamma0 = jnp.ones(n_judge)
    final = iterate(step, terminate, GammaState(gamma0, grad(gamma0), 0))
    converged = jnp.all(jnp.abs(proj(final.gamma, final.grad)) <= tol)
    return final.gamma, converged, weight


@lru_cache(maxsize=16)
def refit_gamma_batch(n_cand: int, n_judge: int, n_cells: int, max_iter: int):
    """Jitted (arrays, ω (B, G), s̃ (B, C), β (B, K), ridge) ↦ (γᴺ, γᴾ, converged, weight), each (B, K)."""
    naive = refit_layout(n_cand, n_judge, False)
    adjusted = refit_layout(n_cand, n_judge, True)

    def one(arrays, omega, s_tilde, beta, ridge):
        stats = cell_stats_from_cluster_weights(arrays, omega, n_cells)
        g_n, ok_n, weight = refit_gamma(arrays, stats, s_tilde, beta, layout=naive, ridge=ridge, max_iter=max_iter)
        g_p, ok_p, _ = refit_gamma(arrays, stats, s_tilde, beta, layout=adjusted, ridge=ridge, max_iter=max_iter)
        return g_n, g_p, ok_n & ok_p, weight

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0, None)))
