"""Expected Fisher information of judgments not yet made, and the gradients of the targets.

A candidate judgment is (candidate a in slot A, b in slot B, judge k, covariates z).
Its expected information at θ̂ is E[∇²_θ ℓ] with the outcome drawn from the model; for
the fractional-tie likelihood ℓ = ψ(η(θ)) with ψ' = 0 in expectation, so the expected
Hessian is ψ''(η) r rᵀ (r = ∇_θ η): rank one. :func:`information_factors` returns its
factor u (E[∇²ℓ] = u uᵀ) for thousands of candidates in one vmapped program, from the
package's one predictor (:func:`~oscar_jax.model.likelihood.local_loss` at the model's
expected statistics, :func:`~oscar_jax.model.likelihood.local_expected_stats`): no second
η. The batch criterion that uses the factors is host numpy (:mod:`oscar_jax.infer.batch_design`).
"""

from __future__ import annotations

from typing import NamedTuple

from ..model.likelihood import local_expected_stats, local_index, local_loss
from ..model.links import net_preference
from ..model.params import Layout
from ..runtime.jit import RUN_ONCE, persistent_jit, register_pytree_names
from ..runtime.lazy_jax import jax, jnp
from .sandwich import targets

__all__ = ["PlanTargets", "information_factors", "information_factors_jit", "plan_targets", "plan_targets_jit"]


def information_factors(theta, a, b, k, z, layout: Layout):
    """(N, dim θ) factors u_t with E[∇²_θ ℓ_t] = u_t u_tᵀ for one unit-weight judgment each.

    ``a``, ``b``, ``k``: (N,) int candidate in slot A, in slot B, judge; ``z``: (N, 2+U)
    covariates (L, F, X…). Fractional-tie models only: a Davidson judgment's expected
    information has rank two (η and τ), which one factor cannot hold.
    """
    if layout.structure.davidson:
        raise ValueError("information_factors: the Davidson tie model's expected information has rank two")
    jac = jnp.asarray(layout.jacobian)
    phi = jac @ theta
    idx = local_index(layout, a, b, k)                    # (N, n_local) φ slots of each judgment
    unit = jnp.asarray([1.0, 0.0, 0.0], theta.dtype)

    def local_factor(p, zz):
        expected = local_expected_stats(p, zz, unit, layout)
        h = jax.hessian(lambda q: local_loss(q, zz, expected, layout))(p)  # ψ'' r rᵀ: ψ' = 0 in expectation
        # Rank one with h[0, 0] = ψ'' γ_k² > 0 (∂η/∂s_a = γ_k), so its first column over
        # the root of its first entry is ±√ψ'' r: the sign is immaterial in u uᵀ.
        return h[:, 0] / jnp.sqrt(h[0, 0])

    u_local = jax.vmap(local_factor)(phi[idx], z)
    rows = jnp.arange(idx.shape[0])[:, None]
    u_phi = jnp.zeros((idx.shape[0], layout.n_phi), theta.dtype).at[rows, idx].add(u_local)
    return u_phi @ jac


class PlanTargets(NamedTuple):
    """The quantities a plan can target (candidates C, judges K); D is zero without a position term."""

    x: jax.Array          # (C,) average-judge logits x = γ̄ s
    h: jax.Array          # (C, C) h_ij = x_i − x_j
    log_kappa: jax.Array  # (K,)
    D: jax.Array          # (K,) net first-slot preference tanh(β_pos / 2)


def _plan_targets(theta, layout: Layout) -> PlanTargets:
    t = targets(theta, layout)
    pb = layout.phi_blocks
    if "pos" in pb:
        D = net_preference((jnp.asarray(layout.jacobian) @ theta)[pb["pos"]])
    else:
        D = jnp.zeros(layout.n_judge, theta.dtype)
    return PlanTargets(x=t.x, h=t.h, log_kappa=t.log_kappa, D=D)


def plan_targets(theta, layout: Layout) -> tuple[PlanTargets, PlanTargets]:
    """(values, θ-gradients) of :class:`PlanTargets` at θ: each gradient field has a trailing dim-θ axis."""
    jac = jax.jacfwd(lambda th: _plan_targets(th, layout))(theta)
    return _plan_targets(theta, layout), jac


register_pytree_names(PlanTargets)
information_factors_jit = persistent_jit(information_factors, static_argnames=("layout",))
plan_targets_jit = persistent_jit(plan_targets, static_argnames=("layout",), compiler_options=RUN_ONCE)
