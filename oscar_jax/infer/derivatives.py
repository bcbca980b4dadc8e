"""Loss, exact gradient and Hessian in θ, assembled from per-record local derivatives.

For each cell the model core gives the exact derivatives of the loss in a handful of
local slots (autodiff of the one η; only the distinct Hessian entries, since η reads
the scores through s_a − s_b alone: :func:`~oscar_jax.model.likelihood.column_derivatives`). Scattering the local
gradients and Hessians into the expanded vector φ and mapping once through the constant
J = ∂φ/∂θ gives ∇L and ∇²L in θ — including the residual term −(Y − p)∇²η that the
cluster sandwich needs — at O(N · n_local²) per evaluation instead of the O(N · dim θ²)
of a dense Jacobian. All functions are pure and unjitted (jit at the API edge).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..model.design import DesignArrays
from ..model.grouped import group_derivatives, group_eta, record_covariates, record_moments
from ..model.likelihood import (column_derivatives, expected_stats, local_expected_stats, local_index, local_loss,
                                local_prob, upper_pairs)
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp

__all__ = [
    "cell_probabilities",
    "cluster_score_block",
    "cluster_scores",
    "cluster_scores_phi",
    "expected_information",
    "group_moments",
    "group_params",
    "grouped_cells",
    "information_from_moments",
    "loss_value",
    "sum_tables",
    "theta_space",
    "value_grad_hess",
    "value_grad_hess_information",
    "value_grad_hess_moments",
]


def _columns(theta, arrays: DesignArrays, layout: Layout):
    """Local parameters as rows (s_a, s_b, judge slots…), each (C_,): one gather per slot.

    Gathering slot by slot from φ (a few hundred numbers) fuses into the per-record
    arithmetic; an (C_, n_local) index array and its gather were two extra passes.
    """
    phi = jnp.asarray(layout.jacobian) @ theta
    judge = np.asarray(layout.judge_slots)
    return [phi[arrays.a], phi[arrays.b]] + [phi[judge[:, j]][arrays.k] for j in range(judge.shape[1])]


def _rows(x):
    """Columns of a record-major (C_, m) array as m rows."""
    return [x[:, j] for j in range(x.shape[1])]


def loss_value(theta, arrays: DesignArrays, stats, layout: Layout):
    """Unpenalized loss Σ_t ℓ_t(θ) at cell statistics ``stats`` (C_, 3)."""
    return jnp.sum(local_loss(_columns(theta, arrays, layout), _rows(arrays.z), _rows(stats), layout))


@lru_cache(maxsize=128)
def _theta_map(layout: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How θ reads the reduced blocks: (Helmert C, judge of, slot of) each non-score θ.

    φ = J θ is the scores s = C u plus a *selection* of the judge slots (every slot of
    every judge except the reference's log γ), so ∇_θ and ∇²_θ need the Helmert
    products on the score block and gathers elsewhere, not a dense Jᵀ H J. The judge and
    slot are read off J itself, so this cannot drift from ``Layout.jacobian``.
    """
    c = layout.n_cand
    jidx = layout.judge_slots                              # (K, n_j) φ index of (judge, slot)
    jac = np.asarray(layout.jacobian)
    owner = {int(jidx[k, j]): (k, j) for k in range(jidx.shape[0]) for j in range(jidx.shape[1])}
    rest = jac[:, c - 1:]
    if np.any(jac[:c, c - 1:]) or np.any(jac[c:, :c - 1]) or not np.all(np.sum(rest != 0, axis=0) == 1):
        raise AssertionError("unexpected structure of Layout.jacobian")  # guards the derivation above
    rows = np.argmax(rest != 0, axis=0)
    judge = np.asarray([owner[int(r)][0] for r in rows], np.int32)
    slot = np.asarray([owner[int(r)][1] for r in rows], np.int32)
    return jac[:c, :c - 1], judge, slot


CHUNK = 1 << 15  # records per pass of the derivative sums (a few MB of per-record work arrays)


def _tables(theta, arrays, stats, layout, with_hess=True, expected=False, by_column=False):
    """The per-parameter sums of one batch of cells: (Σℓ, by (a, k), by (b, k), by k, by (a, b)).

    Per-cell derivatives by :func:`~oscar_jax.model.likelihood.column_derivatives`, summed by
    :func:`sum_tables`. ``expected``: at the model's expected statistics. ``by_column``: one
    segment sum per statistic instead of one over their stack (the chunks of
    :func:`_chunked_tables`: a fit at 10⁶–3·10⁶ records 8 % faster, equal to rounding); one
    pass keeps the stack, so fits of up to CHUNK cells keep their bits.
    """
    P, Z = _columns(theta, arrays, layout), _rows(arrays.z)
    S = list(local_expected_stats(P, Z, _rows(stats), layout)) if expected else _rows(stats)
    vals, grads, hc = column_derivatives(P, Z, S, layout, with_hess=with_hess)
    return sum_tables(jnp.sum(vals), grads, hc, arrays.a, arrays.b, arrays.k, layout, with_hess, by_column)


def sum_tables(value, grads, hc, a, b, k, layout, with_hess, by_column):
    """(Σℓ, and per-cell or per-group derivatives summed into the parameter tables).

    Every record touches two candidate slots (s_a, s_b) and judge k's slots; its Hessian is
    given by its distinct entries (:class:`~oscar_jax.model.likelihood.HessianCells`):
    ∂²/∂d² goes to (a, a), (b, b) and −(a, b); ∂²/∂d∂φ_j to (a, k's slot j) and −(b, k's
    slot j); the judge-slot pairs to judge k's block. The candidate statistics are stacked
    once and summed by (a, k) and by (b, k), the judge statistics by k, ∂²/∂d² by (a, b):
    with one cell per record every extra pass over the records cost as much as a segment sum.
    """
    c, k_n = layout.n_cand, layout.n_judge
    seg = jax.ops.segment_sum

    def sums(columns, index, n):  # (n, len(columns))
        if by_column:
            return jnp.stack([seg(x, index, num_segments=n) for x in columns], axis=1)
        return seg(jnp.stack(columns, axis=1), index, num_segments=n)

    # Candidate statistics: ∂/∂d, then with the Hessian ∂²/∂d², ∂²/∂d∂φ_j. Slot B's are
    # these times ∂d/∂s_b = −1 (∂²/∂d² keeps its sign): the sign is applied to the sums.
    by_cand = [grads[0]] + ([hc.dd, *hc.dj] if with_hess else [])
    n_cj = len(by_cand)
    t_a = sums(by_cand, a * k_n + k, c * k_n).reshape(c, k_n, n_cj)
    t_b = sums(by_cand, b * k_n + k, c * k_n).reshape(c, k_n, n_cj)
    by_judge = list(grads[2:]) + (list(hc.jj) if with_hess else [])
    t_k = sums(by_judge, k, k_n) if by_judge else jnp.zeros((k_n, 0), value.dtype)
    t_ab = seg(hc.dd, a * c + b, num_segments=c * c).reshape(c, c) if with_hess else None
    return value, t_a, t_b, t_k, t_ab


def _chunked_tables(theta, arrays, stats, layout, with_hess=True, expected=False, low=False):
    """:func:`_tables` of all cells, CHUNK cells at a time beyond one chunk.

    The chunks are summed in a ``lax.scan``, so the per-record work arrays stay at CHUNK
    records whatever N (the memory of a fit with one cell per record). Padding cells carry
    zero statistics: exact zeros. A grouped design takes :func:`_grouped_tables` instead.
    """
    if arrays.group_cell is not None:
        return _grouped_tables(theta, arrays, stats, layout, with_hess, expected, low)[0]
    n = arrays.a.shape[0]
    if n <= CHUNK:
        return _tables(theta, arrays, stats, layout, with_hess, expected)
    n_chunks = -(-n // CHUNK)
    pad = n_chunks * CHUNK - n

    def blocks(x):
        return jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1)).reshape((n_chunks, CHUNK) + x.shape[1:])

    xs = tuple(blocks(x) for x in (arrays.a, arrays.b, arrays.k, arrays.z, stats))

    def body(acc, x):
        a, b, k, z, st = x
        part = _tables(theta, arrays._replace(a=a, b=b, k=k, z=z), st, layout, with_hess, expected, by_column=True)
        return jax.tree_util.tree_map(jnp.add, acc, part), None

    zero = jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(
        lambda: _tables(theta, arrays._replace(a=xs[0][0], b=xs[1][0], k=xs[2][0], z=xs[3][0]), xs[4][0], layout,
                        with_hess, expected)))
    return jax.lax.scan(body, zero, xs)[0]


class GroupedCells(NamedTuple):
    """A grouped design's cells (their covariates z and statistics, record-major as in the
    design) and its groups' (a, b, k) and covariates Zc (record covariates at 0), the
    group-level part read once per fit, outside the solver's loop."""

    z: jax.Array
    stats: jax.Array
    group_abk: tuple
    group_z: tuple


def grouped_cells(arrays: DesignArrays, stats):
    """``stats`` as :class:`GroupedCells` for a grouped design; unchanged otherwise (or when
    it already is)."""
    if arrays.group_cell is None or isinstance(stats, GroupedCells):
        return stats
    cols = record_covariates(arrays.z.shape[1])
    gc = arrays.group_cell
    zc = arrays.z[gc]
    return GroupedCells(z=arrays.z, stats=stats, group_abk=(arrays.a[gc], arrays.b[gc], arrays.k[gc]),
                        group_z=tuple(jnp.zeros_like(zc[:, j]) if j in cols else zc[:, j] for j in range(zc.shape[1])))


def group_params(theta, rows: GroupedCells, layout):
    """Local parameters P of every group, as rows."""
    phi = jnp.asarray(layout.jacobian) @ theta
    judge = np.asarray(layout.judge_slots)
    ga, gb, gk = rows.group_abk
    return [phi[ga], phi[gb]] + [phi[judge[:, j]][gk] for j in range(judge.shape[1])]


def group_moments(P, Zc, arrays, rows: GroupedCells, layout, with_hess, expected, record=None):
    """(Σψ over all cells, each group's sums of :func:`~oscar_jax.model.grouped.record_moments`).

    One pass over the cells, CHUNK at a time: each cell's η from its group's η_0 and slopes
    (:func:`~oscar_jax.model.grouped.group_eta`), ψ's derivatives and the moments, added
    into per-group sums carried by a ``lax.scan`` (in place; no per-chunk tables), in P's
    dtype (float32 for the solver's early iterations), Σψ in float64.
    ``record(η, τ, stats rows, zv)`` replaces
    :func:`~oscar_jax.model.grouped.record_moments` (a scalar per cell, summed over all
    cells, and the rows summed by group).
    """
    davidson = layout.structure.davidson
    cg = arrays.cell_group
    n_g, n = arrays.group_cell.shape[0], cg.shape[0]
    eta0, slopes = group_eta(P, Zc, layout)
    acc_dt, dt = rows.stats.dtype, P[0].dtype
    tau_g = P[-1] if davidson else None

    def moments(lo, size):
        take = lambda x: jax.lax.dynamic_slice_in_dim(x, lo, size)  # noqa: E731
        g = take(cg)
        # One transpose of the chunk's record-major block into contiguous rows: a column read
        # out of an (N, m) array in every fusion cost as much as the arithmetic; a transposed
        # copy for the whole fit, 24 bytes a cell (~123 instead of 99 at 10⁷), saved 10-20 %.
        # wt enters only the Davidson loss and the expected statistics.
        zt, st = jax.lax.optimization_barrier((take(rows.z).T, take(rows.stats).T))
        zv = [zt[j].astype(dt) for j in record_covariates(zt.shape[0])]
        S = [st[0].astype(dt), st[1].astype(dt), st[2].astype(dt) if davidson or expected else None]
        eta = eta0[g]
        for x, sl in zip(zv, slopes):
            eta = eta + sl[g] * x
        tau = tau_g[g] if davidson else None
        if expected:
            S = expected_stats(eta, tau, S, davidson)
        if record is None:
            value, mom = record_moments(eta, tau, S, zv, davidson, with_hess)
        else:
            value, mom = record(eta, tau, S, zv)
        return g, jnp.sum(value.astype(acc_dt)), mom

    def add(acc, lo, size):
        g, value, mom = moments(lo, size)
        return acc[0] + value, [x.at[g].add(r) for x, r in zip(acc[1], mom)]

    n_full, rest = divmod(n, CHUNK)
    n_mom = len(jax.eval_shape(lambda: moments(0, min(n, CHUNK))[2]))
    acc = (jnp.zeros((), acc_dt), [jnp.zeros(n_g, dt) for _ in range(n_mom)])
    if n_full:
        acc = jax.lax.scan(lambda a, i: (add(a, i * CHUNK, CHUNK), None), acc, jnp.arange(n_full))[0]
    if rest:  # the last, shorter chunk: its own static shape (no padded copy of the data)
        acc = add(acc, n_full * CHUNK, rest)
    return acc


def _grouped_tables(theta, arrays, stats, layout, with_hess=True, expected=False, low=False, moments=None):
    """:func:`_tables` of a grouped design: record moments per group, the chain rule per group.

    Also returns the (value, moments) it used; ``moments`` given: no pass over the cells.
    ``low``: the pass, group sums and chain rule in float32, tables and moments returned in
    float64 (float32 arithmetic with float64 group sums saved 1–3 % of an evaluation)."""
    rows = grouped_cells(arrays, stats)
    P, Zc = group_params(theta, rows, layout), list(rows.group_z)
    if low:
        P, Zc = [p.astype(jnp.float32) for p in P], [z.astype(jnp.float32) for z in Zc]
    if moments is None:
        moments = group_moments(P, Zc, arrays, rows, layout, with_hess, expected)
    value, mom = moments
    grads, hc = group_derivatives(P, Zc, mom, layout, with_hess=with_hess)
    tables = sum_tables(value, grads, hc, *rows.group_abk, layout, with_hess, by_column=False)
    return jax.tree_util.tree_map(lambda x: x.astype(rows.stats.dtype), (tables, moments))


def _assemble(theta, arrays, stats, layout, with_hess=True, expected=False, low=False):
    """(L, ∇L, ∇²L) in θ = (u, judge part), built from the sums of :func:`_chunked_tables`."""
    return theta_space(_chunked_tables(theta, arrays, stats, layout, with_hess, expected, low), layout, with_hess)


def theta_space(tables, layout, with_hess=True):
    """(L, ∇L, ∇²L) in θ = (u, judge part) from the tables of :func:`sum_tables`.

    The θ-space matrix is *built* from the reduced blocks (:func:`_theta_map`): Helmert
    products on the score block, gathers for the judge coordinates (two of which interact
    only within one judge).
    """
    helm, judge_of, slot_of = (jnp.asarray(x) for x in _theta_map(layout))
    k_n = layout.n_judge
    n_j = len(layout.local_slots) - 2
    value, t_a, t_b, t_k, t_ab = tables
    n_cj = t_a.shape[2]
    sign_b = jnp.asarray([-1.0] + ([1.0] + [-1.0] * (n_cj - 2) if with_hess else []))
    t_cand = t_a + t_b * sign_b                                 # (C, K, n_cj)
    cand = jnp.sum(t_cand, axis=1)                              # (C, n_cj)
    g = jnp.concatenate([helm.T @ cand[:, 0], t_k[judge_of, slot_of]])
    if not with_hess:
        return value, g, None
    h_uu = helm.T @ (jnp.diag(cand[:, 1]) - t_ab - t_ab.T) @ helm
    if not n_j:
        return value, g, h_uu
    h_uj = helm.T @ t_cand[:, :, 2:][:, judge_of, slot_of]
    pairs = upper_pairs(n_j)
    expand = np.zeros((len(pairs), n_j * n_j))  # distinct pairs → symmetric (n_j, n_j)
    for q, (i, j) in enumerate(pairs):
        expand[q, i * n_j + j] = expand[q, j * n_j + i] = 1.0
    h_jj = (t_k[:, n_j:] @ jnp.asarray(expand)).reshape(k_n, n_j, n_j)
    # Two judge coordinates interact only within one judge: δ_kl h_jj[k, slot, slot'].
    same = judge_of[:, None] == judge_of[None, :]
    h_vv = jnp.where(same, h_jj[judge_of[:, None], slot_of[:, None], slot_of[None, :]], 0.0)
    return value, g, jnp.block([[h_uu, h_uj], [h_uj.T, h_vv]])


def value_grad_hess(theta, arrays: DesignArrays, stats, layout: Layout, low: bool = False):
    """(L, ∇L, ∇²L) of the unpenalized loss in θ; the Hessian is exact (observed).

    ``low`` (static; grouped designs only): float32 arithmetic (:func:`_grouped_tables`),
    accurate to ~1e-6 relative — for the solver's early iterations."""
    return _assemble(theta, arrays, stats, layout, low=low)


def value_grad_hess_information(theta, arrays: DesignArrays, stats, layout: Layout):
    """:func:`value_grad_hess` of a design without groups, and :func:`expected_information` at
    the same θ: the per-cell derivatives batched over the two statistics (observed, expected),
    so that a program holds one copy of them; the sums by parameter unbatched (a segment sum
    with a batch axis loses its fast path: the evaluation 3× slower at 2·10³ cells)."""
    P, Z, S = _columns(theta, arrays, layout), _rows(arrays.z), _rows(stats)
    both = jnp.stack([jnp.stack(S), local_expected_stats(P, Z, S, layout)])
    derivs = jax.vmap(lambda S: column_derivatives(P, Z, S, layout))(both)
    tables = [sum_tables(jnp.sum(v), g, hc, arrays.a, arrays.b, arrays.k, layout, True, False)
              for v, g, hc in [jax.tree_util.tree_map(lambda x, i=i: x[i], derivs) for i in range(2)]]
    value, g, h = jax.vmap(lambda t: theta_space(t, layout))(jax.tree_util.tree_map(lambda *x: jnp.stack(x), *tables))
    return value[0], g[0], h[0], h[1]


def expected_information(theta, arrays: DesignArrays, stats, layout: Layout):
    """Σ_t E[∇²ℓ_t] in θ: Σ w p(1−p) r rᵀ for fractional ties (= R̂ᵀŴR̂ of B.3)."""
    return _assemble(theta, arrays, stats, layout, expected=True)[2]


def value_grad_hess_moments(theta, arrays: DesignArrays, stats, layout: Layout, low: bool = False):
    """:func:`value_grad_hess` of a grouped design, and the (Σψ, group moments) it summed."""
    tables, moments = _grouped_tables(theta, arrays, stats, layout, low=low)
    return theta_space(tables, layout) + (moments,)


def information_from_moments(theta, arrays: DesignArrays, stats, moments, layout: Layout):
    """:func:`expected_information` of a grouped design with fractional ties at the θ where
    ``moments`` were summed, without a pass over the cells.

    Under the model E[ψ_η] = w p − E[wy] = 0 and ψ_ηη = w p(1 − p) does not involve wy, so
    the expected information is the observed Hessian's ψ_ηη part: the same ψ_ηη moments
    with the ψ_η moments set to zero (exactly what the expected pass sums)."""
    if layout.structure.davidson:
        raise ValueError("the Davidson tie model's expected information needs its own pass")
    value, mom = moments
    q = 1 + len(record_covariates(arrays.z.shape[1]))
    zeroed = [jnp.zeros_like(x) for x in mom[:q]] + list(mom[q:])
    tables, _ = _grouped_tables(theta, arrays, stats, layout, moments=(value, zeroed))
    return theta_space(tables, layout)[2]


def cell_probabilities(theta, arrays: DesignArrays, layout: Layout):
    """Tie-adjusted slot-A probability p̂ of every cell with the full η (held-out prediction)."""
    return local_prob(_columns(theta, arrays, layout), _rows(arrays.z), layout)


def _pair_scores(phi, arrays: DesignArrays, layout: Layout, pair_cell, pair_g, pair_stats, omega=None, idx=None):
    """(prompt, local slots, local loss gradients) of (prompt, cell) pairs at φ."""
    if idx is None:
        idx = local_index(layout, arrays.a[pair_cell], arrays.b[pair_cell], arrays.k[pair_cell])
    stats = pair_stats if omega is None else pair_stats * omega[pair_g][:, None]
    _, grads, _ = column_derivatives(phi[idx].T, arrays.z[pair_cell].T, stats.T, layout, with_hess=False)
    return pair_g[:, None], idx, jnp.stack(grads, axis=1)


def cluster_scores_phi(theta, arrays: DesignArrays, layout: Layout, n_clusters: int, omega=None):
    """Ψ_g in the expanded space φ (G × dim φ); ``cluster_scores`` maps it to θ.

    Beyond CHUNK (prompt, cell) pairs the pairs are read CHUNK at a time in a ``lax.scan``
    that adds into Ψ in place, so the per-pair work arrays (slots, local gradients: ~100
    bytes a pair) stay at CHUNK whatever N (at 10⁶ records they were most of the sandwich's
    peak). Up to CHUNK pairs (every simulated dataset of the sweeps) the one pass as before.
    """
    phi = jnp.asarray(layout.jacobian) @ theta
    n = arrays.pair_g.shape[0]
    psi = jnp.zeros((n_clusters, layout.n_phi), phi.dtype)
    if n <= CHUNK:
        idx = local_index(layout, arrays.a, arrays.b, arrays.k)[arrays.pair_cell]
        g, idx, grads = _pair_scores(phi, arrays, layout, arrays.pair_cell, arrays.pair_g, arrays.pair_stats, omega,
                                     idx)
        return psi.at[g, idx].add(grads)

    def add(psi, lo, size):
        take = lambda x: jax.lax.dynamic_slice_in_dim(x, lo, size)  # noqa: E731
        g, idx, grads = _pair_scores(phi, arrays, layout, take(arrays.pair_cell), take(arrays.pair_g),
                                     take(arrays.pair_stats), omega)
        return psi.at[g, idx].add(grads)

    n_full, rest = divmod(n, CHUNK)
    psi = jax.lax.scan(lambda acc, i: (add(acc, i * CHUNK, CHUNK), None), psi, jnp.arange(n_full))[0]
    return add(psi, n_full * CHUNK, rest) if rest else psi


def cluster_score_block(phi, arrays: DesignArrays, layout: Layout, lo, span: int, first, rows: int):
    """Ψ (φ space) of prompts ``first`` … ``first + rows − 1`` (rows × dim φ), from the
    ``span`` pairs from ``lo`` (the pairs sorted by prompt, as build_design leaves them, so a
    block of prompts is a run of pairs); the other prompts' pairs in the span are dropped.
    Each Ψ_g is added in pair order, as :func:`cluster_scores_phi` adds it."""
    take = lambda x: jax.lax.dynamic_slice_in_dim(x, lo, span)  # noqa: E731
    g, idx, grads = _pair_scores(phi, arrays, layout, take(arrays.pair_cell), take(arrays.pair_g),
                                 take(arrays.pair_stats))
    local = g - first
    local = jnp.where((local >= 0) & (local < rows), local, rows)  # row `rows`: the dropped pairs
    return jnp.zeros((rows + 1, layout.n_phi), phi.dtype).at[local, idx].add(grads)[:rows]


def cluster_scores(theta, arrays: DesignArrays, layout: Layout, n_clusters: int, omega=None):
    """Ψ_g = Σ_{t∈g} ∇_θ ℓ_t (G × dim θ): per-cluster summed loss gradients (Section 5).

    (The paper's Ψ_g is the negative of this; the sandwich uses outer products, so the
    sign does not matter.) ``omega`` (G,) reweights clusters (bootstrap, folds).
    """
    return cluster_scores_phi(theta, arrays, layout, n_clusters, omega) @ jnp.asarray(layout.jacobian)
