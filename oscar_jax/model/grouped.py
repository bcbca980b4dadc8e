"""Records grouped by (a, b, k): the per-group moments of the likelihood (issue 37).

Within one (candidate A, candidate B, judge) group every record shares the local
parameters and the family contrast F (a function of a, b and k); only the record-level
covariates (L, X_1..X_U) differ. η is affine in them, r = ∂η/∂ρ is affine in them, so the
group's summed loss, gradient and Hessian depend on its records only through a few
moments: Σψ, Σψ_η·z̃ and Σψ_ηη·z̃z̃ᵀ with z̃ = (1, record covariates) (Davidson adds
Σψ_τ, Σψ_ητ·z̃, Σψ_ττ). A pass over the records forms η, ψ's derivatives and those
moments; the chain rule through η then runs once per group, not once per record.

Everything is derived from :func:`~oscar_jax.model.likelihood.local_eta` and
:func:`~oscar_jax.model.likelihood.psi_terms` by autodiff: one definition of the predictor.
"""

from __future__ import annotations

from ..runtime.lazy_jax import jax, jnp
from .likelihood import hessian_cells, local_eta, psi_terms
from .params import Layout

__all__ = ["group_derivatives", "group_eta", "group_r", "moment_pairs", "record_covariates", "record_moments"]


def record_covariates(n_z: int) -> tuple[int, ...]:
    """Columns of z = (L, F, X_1..X_U) that vary within an (a, b, k) group: all but F."""
    return (0,) + tuple(range(2, n_z))


def _along(fn, Z, col):
    """d/dt fn(Z with column ``col`` + t) at t = 0: the other columns are constants, not zero
    tangents, so autodiff drops what does not depend on that column."""
    def moved(x):
        return fn(Z[:col] + [x] + Z[col + 1:])
    return jax.jvp(moved, (Z[col],), (jnp.ones_like(Z[col]),))[1]


def group_eta(P, Zc, layout: Layout):
    """(η at the group's covariates Zc, ∂η/∂z for each record covariate), rows over groups.

    ``Zc`` holds the group-level columns and zeros in the record-level ones, so a record
    with covariates z_v has η = η_0 + Σ_j slope_j z_v,j exactly (η is affine in z).
    """
    Zc = [Zc[i] for i in range(len(Zc))]
    fn = lambda z: local_eta(P, z, layout)  # noqa: E731
    eta0 = fn(Zc)
    slopes = [_along(fn, Zc, col) for col in record_covariates(len(Zc))]
    return eta0, slopes


def moment_pairs(q: int) -> tuple[tuple[int, int], ...]:
    """Index pairs (a ≤ b) of z̃ = (1, record covariates) in the order of the ψ_ηη moments."""
    return tuple((a, b) for a in range(q) for b in range(a, q))


def record_moments(eta, tau, stats, zv, davidson: bool, with_hess: bool = True):
    """(ψ, the per-record terms whose sums by group are the group's sufficient moments).

    Order of the terms: ψ_η·z̃_a (a < q); with the Hessian ψ_ηη·z̃_a z̃_b (``moment_pairs``);
    Davidson adds ψ_τ, then with the Hessian ψ_ητ·z̃_a and ψ_ττ. z̃ = (1, zv…),
    q = 1 + len(zv). (The loss needs only Σψ over all records, not per group.)
    """
    t = psi_terms(eta, tau, stats, davidson, with_hess)
    t = jax.lax.optimization_barrier(t)
    zt = [None] + list(zv)

    def times(x, a, b=None):
        for c in (a, b):
            if c is not None and zt[c] is not None:
                x = x * zt[c]
        return x

    q = len(zt)
    rows = [times(t.g_e, a) for a in range(q)]
    if with_hess:
        rows += [times(t.h_ee, a, b) for a, b in moment_pairs(q)]
    if davidson:
        rows.append(t.g_t)
        if with_hess:
            rows += [times(t.h_et, a) for a in range(q)] + [t.h_tt]
    return t.value, rows


def _grad_eta(rho, z, layout: Layout):
    """r = ∂η/∂ρ in the reduced slots ρ = (d, judge slots), rows (one reverse pass)."""
    return jax.grad(lambda r: jnp.sum(local_eta([r[0], jnp.zeros_like(r[0])] + list(r[1:]), z, layout)))(rho)


def _affine(fn, Zc):
    """Coefficients on z̃ = (1, record covariates) of a function of z that is affine in the
    record covariates: its value at the group's Zc, then its slope along each."""
    return [fn(Zc)] + [_along(fn, Zc, col) for col in record_covariates(len(Zc))]


def group_r(P, Zc, layout: Layout):
    """r = ∂η/∂ρ of a record of each group, as coefficients A_a on z̃ (q lists of m rows):
    r = Σ_a A_a z̃_a, with ρ = (s_a − s_b, judge slots) the reduced slots."""
    Zc = [Zc[i] for i in range(len(Zc))]
    R = [P[0] - P[1]] + [P[i] for i in range(2, len(P))]
    return _affine(lambda z: _grad_eta(R, z, layout), Zc)


def group_derivatives(P, Zc, moments, layout: Layout, with_hess: bool = True):
    """(∇ℓ, ∇²ℓ) summed over each group's records, from their :func:`record_moments` sums.

    The gradient and Hessian of :func:`column_derivatives` of the group's records, summed
    (rows over groups). r(ρ; z) = ∂η/∂ρ and c(ρ; z) = ∂r/∂v are affine in z, so with their coefficients
    A_a and C_a on z̃ (by autodiff of :func:`local_eta` at the group's Zc, then in each
    record-covariate direction): Σ ψ_η r = Σ_a A_a G_a, Σ ψ_ηη r rᵀ = Σ_ab A_a M_ab A_bᵀ and
    Σ ψ_η c = Σ_a C_a G_a, with G and M the moments.
    """
    davidson = layout.structure.davidson
    learn_gamma = layout.structure.learn_gamma
    Zc = [Zc[i] for i in range(len(Zc))]
    R = [P[0] - P[1]] + [P[i] for i in range(2, len(P))]
    m = len(R)
    cols = record_covariates(len(Zc))
    q = 1 + len(cols)
    mom = list(moments)
    G = mom[:q]
    pos = q
    if with_hess:
        pairs = moment_pairs(q)
        M = {}
        for (a, b), x in zip(pairs, mom[pos:pos + len(pairs)]):
            M[a, b] = M[b, a] = x
        pos += len(pairs)
    if davidson:
        T = mom[pos]
        if with_hess:
            X, U = mom[pos + 1:pos + 1 + q], mom[pos + 1 + q]

    A = group_r(P, Zc, layout)                           # q × m rows
    grad_r = [sum(A[a][i] * G[a] for a in range(q)) for i in range(m)]
    if davidson:
        grad_r[m - 1] = grad_r[m - 1] + T
    grad = (grad_r[0], -grad_r[0], *grad_r[1:])
    if not with_hess:
        return grad, None
    AM = [[sum(A[a][i] * M[a, b] for a in range(q)) for i in range(m)] for b in range(q)]
    g_c = None
    if learn_gamma:
        one = jnp.ones_like(R[1])
        C = _affine(lambda z: jax.jvp(lambda v: _grad_eta(R[:1] + [v] + R[2:], z, layout), (R[1],), (one,))[1], Zc)
        g_c = [sum(C[a][j] * G[a] for a in range(q)) for j in range(m)]
    x_r = [sum(A[a][i] * X[a] for a in range(q)) for i in range(m)] if davidson else None
    quad = lambda i, j: sum(AM[b][i] * A[b][j] for b in range(q))  # noqa: E731
    return grad, hessian_cells(quad, g_c, x_r, U if davidson else None, m, layout)
