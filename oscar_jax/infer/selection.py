"""Which coordinates and records a fit can use: B.2 column selection and B.3 connectivity.

:func:`column_mask` fixes at zero every bias coefficient whose covariate column adds no
rank to its judge's weighted design (Appendix B.2); :func:`components_connected` checks
that the comparison graph links every candidate (B.3). Both are pure functions of the
design arrays and cell statistics, so they are redone inside every vmapped replicate,
fold and simulated dataset.
"""

from __future__ import annotations

import numpy as np

from ..model.design import DesignArrays
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp

__all__ = ["column_mask", "components_connected", "graph_connected", "host_connected"]


def _bias_columns(arrays: DesignArrays, layout: Layout, xp):
    """(term, column index within term, covariate vector) in B.2 order (no τ)."""
    z = xp.asarray(arrays.z)
    ones = xp.ones(z.shape[0], z.dtype)
    return [(t, j, ones if col is None else z[:, col]) for t, j, col in layout.bias_columns]


def _set(x, index, values, xp):
    if xp is jnp:
        return x.at[index].set(values)
    x = x.copy()
    x[index] = values
    return x


def column_mask(arrays: DesignArrays, stats, layout: Layout, tol: float = 1e-10, xp=jnp):
    """Free-coordinate mask of θ (1 = estimated, 0 = fixed at zero), Appendix B.2.

    Within each judge, the bias columns (position 1, length L, family F, covariates X)
    are considered in that order; a column is kept only if it raises the numerical rank
    of that judge's weighted covariate design, i.e. if its residual after projection on
    the kept columns has norm above ``tol`` times its own norm. Projection is a
    modified Gram–Schmidt in the record domain (segment sums by judge), which resolves
    exact collinearity to rounding level (~1e-16), far below ``tol``; a Gram-matrix
    version would only resolve ~1e-8. Judges with no weight also get their log γ (and
    τ) fixed. Works under vmap over ``stats``; ``xp=np``: the same selection in host numpy
    (a single fit on a small design, whose program then need not hold it).
    """
    stats = xp.asarray(stats)
    k = xp.asarray(arrays.k)
    w = stats[:, 0]
    K = layout.n_judge
    if xp is jnp:
        seg = lambda x: jax.ops.segment_sum(x, k, num_segments=K)  # noqa: E731
    else:
        seg = lambda x: np.bincount(k, weights=x, minlength=K)  # noqa: E731
    has_data = seg(w) > 0
    mask = xp.ones(layout.n_theta, stats.dtype)
    tb = layout.theta_blocks
    basis = []
    for term, j, x in _bias_columns(arrays, layout, xp):
        r = x
        for q in basis:
            num, den = seg(w * r * q), seg(w * q * q)
            coef = xp.where(den > 0, num / xp.where(den > 0, den, 1.0), 0.0)
            r = r - coef[k] * q
        res, norm = seg(w * r * r), seg(w * x * x)
        keep = (norm > 0) & (res > (tol ** 2) * norm) & has_data
        basis.append(r * keep[k])
        if term == "cov":
            positions = tb["cov"].start + xp.arange(K) * layout.n_cov + j
        else:
            positions = tb[term].start + xp.arange(K)
        mask = _set(mask, positions, keep.astype(stats.dtype), xp)
    if layout.structure.davidson:
        mask = _set(mask, tb["tau"], has_data.astype(stats.dtype), xp)
    if layout.structure.learn_gamma:
        free = xp.asarray([kk for kk in range(K) if kk != layout.ref], xp.int32)
        mask = _set(mask, tb["v"], has_data[free].astype(stats.dtype), xp)
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


def host_connected(a, b, n_cand: int) -> bool:
    """:func:`graph_connected` of the edges (a, b) in host numpy: reachability by repeated
    squaring of the C × C adjacency (C is small; no Python loop over the edges)."""
    reach = np.eye(n_cand, dtype=bool)
    reach[np.asarray(a), np.asarray(b)] = reach[np.asarray(b), np.asarray(a)] = True
    for _ in range(max(1, int(np.ceil(np.log2(n_cand))))):
        reach = (reach.astype(np.float64) @ reach.astype(np.float64)) > 0
    return bool(reach[0].all())
