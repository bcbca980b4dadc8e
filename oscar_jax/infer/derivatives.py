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

import jax
import jax.numpy as jnp
import numpy as np

from ..model.design import DesignArrays
from ..model.likelihood import column_derivatives, local_expected_stats, local_index, local_loss, local_prob, upper_pairs
from ..model.params import Layout

__all__ = [
    "cell_probabilities",
    "cluster_scores",
    "cluster_scores_phi",
    "expected_information",
    "loss_value",
    "value_grad_hess",
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

    Every record touches two candidate slots (s_a, s_b) and judge k's slots, and its
    Hessian is given by its distinct entries (:class:`~oscar_jax.model.likelihood.HessianCells`):
    ∂²/∂d² goes to (a, a), (b, b) and −(a, b); ∂²/∂d∂φ_j to (a, k's slot j) and
    −(b, k's slot j); the judge-slot pairs to judge k's block. The candidate statistics
    are stacked once and summed by (a, k) and by (b, k) (the candidate sums are then sums
    of these small C·K tables), the judge statistics by k, ∂²/∂d² by (a, b): with one cell
    per record every extra pass over the records (a concatenation, a transpose, a separate
    sum) cost as much as a segment sum. ``expected``: at the model's expected statistics.
    ``by_column``: one segment sum per statistic instead of one over their stack (the chunks
    of :func:`_chunked_tables`: a fit at 10⁶–3·10⁶ records 8 % faster, equal to rounding);
    one pass keeps the stack, so fits of up to CHUNK cells keep their bits.
    """
    c, k_n = layout.n_cand, layout.n_judge
    a, b, k = arrays.a, arrays.b, arrays.k
    seg = jax.ops.segment_sum
    P, Z = _columns(theta, arrays, layout), _rows(arrays.z)
    S = list(local_expected_stats(P, Z, _rows(stats), layout)) if expected else _rows(stats)
    vals, grads, hc = column_derivatives(P, Z, S, layout, with_hess=with_hess)

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
    t_k = sums(by_judge, k, k_n) if by_judge else jnp.zeros((k_n, 0), vals.dtype)
    t_ab = seg(hc.dd, a * c + b, num_segments=c * c).reshape(c, c) if with_hess else None
    return jnp.sum(vals), t_a, t_b, t_k, t_ab


def _chunked_tables(theta, arrays, stats, layout, with_hess=True, expected=False):
    """:func:`_tables` of all cells, CHUNK cells at a time beyond one chunk.

    The chunks are summed in a ``lax.scan``, so the per-record work arrays (a few dozen
    numbers per record) stay at CHUNK records whatever N, which bounds the memory of a fit
    with one cell per record. Padding cells carry zero statistics, so they add exact zeros.
    """
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


def _assemble(theta, arrays, stats, layout, with_hess=True, expected=False):
    """(L, ∇L, ∇²L) in θ = (u, judge part), built from the sums of :func:`_chunked_tables`.

    The θ-space matrix is *built* from the reduced blocks (:func:`_theta_map`): Helmert
    products on the score block, gathers for the judge coordinates (two of which interact
    only within one judge).
    """
    helm, judge_of, slot_of = (jnp.asarray(x) for x in _theta_map(layout))
    k_n = layout.n_judge
    n_j = len(layout.local_slots) - 2
    value, t_a, t_b, t_k, t_ab = _chunked_tables(theta, arrays, stats, layout, with_hess, expected)
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


def value_grad_hess(theta, arrays: DesignArrays, stats, layout: Layout):
    """(L, ∇L, ∇²L) of the unpenalized loss in θ; the Hessian is exact (observed)."""
    return _assemble(theta, arrays, stats, layout)


def expected_information(theta, arrays: DesignArrays, stats, layout: Layout):
    """Σ_t E[∇²ℓ_t] in θ: Σ w p(1−p) r rᵀ for fractional ties (= R̂ᵀŴR̂ of B.3)."""
    return _assemble(theta, arrays, stats, layout, expected=True)[2]


def cell_probabilities(theta, arrays: DesignArrays, layout: Layout):
    """Tie-adjusted slot-A probability p̂ of every cell with the full η (held-out prediction)."""
    return local_prob(_columns(theta, arrays, layout), _rows(arrays.z), layout)


def cluster_scores_phi(theta, arrays: DesignArrays, layout: Layout, n_clusters: int, omega=None):
    """Ψ_g in the expanded space φ (G × dim φ); ``cluster_scores`` maps it to θ."""
    jac = jnp.asarray(layout.jacobian)
    phi = jac @ theta
    idx = local_index(layout, arrays.a, arrays.b, arrays.k)[arrays.pair_cell]
    stats = arrays.pair_stats if omega is None else arrays.pair_stats * omega[arrays.pair_g][:, None]
    _, grads, _ = column_derivatives(phi[idx].T, arrays.z[arrays.pair_cell].T, stats.T, layout, with_hess=False)
    grads = jnp.stack(grads, axis=1)
    return jnp.zeros((n_clusters, layout.n_phi), grads.dtype).at[arrays.pair_g[:, None], idx].add(grads)


def cluster_scores(theta, arrays: DesignArrays, layout: Layout, n_clusters: int, omega=None):
    """Ψ_g = Σ_{t∈g} ∇_θ ℓ_t (G × dim θ): per-cluster summed loss gradients (Section 5).

    (The paper's Ψ_g is the negative of this; the sandwich uses outer products, so the
    sign does not matter.) ``omega`` (G,) reweights clusters (bootstrap, folds).
    """
    return cluster_scores_phi(theta, arrays, layout, n_clusters, omega) @ jnp.asarray(layout.jacobian)
