"""Which coordinates and records a fit can use: B.2 column selection and B.3 connectivity.

:func:`column_mask` fixes at zero every bias coefficient whose covariate column adds no
rank to its judge's weighted design (Appendix B.2); :func:`components_connected` checks
that the comparison graph links every candidate (B.3). Both are pure functions of the
design arrays and cell statistics, so they are redone inside every vmapped replicate,
fold and simulated dataset.
"""

from __future__ import annotations

from ..model.design import DesignArrays
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp

__all__ = ["column_mask", "components_connected", "graph_connected"]


def _bias_columns(arrays: DesignArrays, layout: Layout):
    """(term, column index within term, covariate vector) in B.2 order (no τ)."""
    ones = jnp.ones(arrays.z.shape[0], arrays.z.dtype)
    return [(t, j, ones if col is None else arrays.z[:, col]) for t, j, col in layout.bias_columns]


def column_mask(arrays: DesignArrays, stats, layout: Layout, tol: float = 1e-10):
    """Free-coordinate mask of θ (1 = estimated, 0 = fixed at zero), Appendix B.2.

    Within each judge, the bias columns (position 1, length L, family F, covariates X)
    are considered in that order; a column is kept only if it raises the numerical rank
    of that judge's weighted covariate design, i.e. if its residual after projection on
    the kept columns has norm above ``tol`` times its own norm. Projection is a
    modified Gram–Schmidt in the record domain (segment sums by judge), which resolves
    exact collinearity to rounding level (~1e-16), far below ``tol``; a Gram-matrix
    version would only resolve ~1e-8. Judges with no weight also get their log γ (and
    τ) fixed. Works under vmap over ``stats``.
    """
    w = stats[:, 0]
    K = layout.n_judge
    seg = lambda x: jax.ops.segment_sum(x, arrays.k, num_segments=K)  # noqa: E731
    has_data = seg(w) > 0
    mask = jnp.ones(layout.n_theta, stats.dtype)
    tb = layout.theta_blocks
    basis = []
    for term, j, x in _bias_columns(arrays, layout):
        r = x
        for q in basis:
            num, den = seg(w * r * q), seg(w * q * q)
            coef = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
            r = r - coef[arrays.k] * q
        res, norm = seg(w * r * r), seg(w * x * x)
        keep = (norm > 0) & (res > (tol ** 2) * norm) & has_data
        basis.append(r * keep[arrays.k])
        if term == "cov":
            positions = tb["cov"].start + jnp.arange(K) * layout.n_cov + j
        else:
            positions = tb[term].start + jnp.arange(K)
        mask = mask.at[positions].set(keep.astype(stats.dtype))
    if layout.structure.davidson:
        mask = mask.at[tb["tau"]].set(has_data.astype(stats.dtype))
    if layout.structure.learn_gamma:
        free = jnp.asarray([kk for kk in range(K) if kk != layout.ref], jnp.int32)
        mask = mask.at[tb["v"]].set(has_data[free].astype(stats.dtype))
    return mask


def components_connected(arrays: DesignArrays, stats, n_cand: int):
    """Whether the comparison graph of positive-weight cells is connected (and spans all).

    A grouped design reads it off its (a, b, k) groups (fewer edges, the same graph).
    Works under vmap.
    """
    if arrays.group_cell is None:
        return graph_connected(arrays.a, arrays.b, stats[:, 0] > 0, n_cand)
    gc = arrays.group_cell
    weight = jax.ops.segment_sum(stats[:, 0], arrays.cell_group, num_segments=gc.shape[0])
    return graph_connected(arrays.a[gc], arrays.b[gc], weight > 0, n_cand)


def graph_connected(a, b, active, n_cand: int):
    """Whether the edges (a, b) with ``active`` connect all ``n_cand`` candidates.

    Label propagation (each node takes the smallest label among its neighbours) until
    nothing changes; at most n_cand rounds.
    """
    big = jnp.int32(n_cand)
    present = (jax.ops.segment_sum(active.astype(jnp.int32), a, num_segments=n_cand)
               + jax.ops.segment_sum(active.astype(jnp.int32), b, num_segments=n_cand)) > 0

    def step(state):
        labels, _, it = state
        la, lb = labels[a], labels[b]
        m = jnp.where(active, jnp.minimum(la, lb), big)
        new = labels.at[a].min(m).at[b].min(m)
        return new, jnp.any(new != labels), it + 1

    labels0 = jnp.arange(n_cand, dtype=jnp.int32)
    labels, _, _ = jax.lax.while_loop(lambda s: s[1] & (s[2] < n_cand + 1), step, (labels0, jnp.bool_(True), 0))
    return jnp.all(present) & jnp.all(labels == 0)
