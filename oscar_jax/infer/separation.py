"""Separation of a fit: Stiemke's certificate first, Konis' LP when it fails.

The method is in :mod:`~oscar_jax.infer.identification`'s docstring. On a grouped design
(:func:`~oscar_jax.model.design.with_groups`: Arena-sized data with a continuous length)
neither step forms the (N × dim θ) matrix of covariate rows: the certificate's Gram matrix
and right-hand side are summed through per-group moments in one compiled pass over the
cells, and the LP runs on a sufficient summary of each group's cells (issue 37).
"""

from __future__ import annotations

import numpy as np

from ..model.design import DesignArrays
from ..model.links import sigmoid
from ..model.grouped import group_derivatives, group_r, moment_pairs, record_covariates
from ..model.params import Layout
from ..runtime.jit import persistent_jit
from ..runtime.lazy_jax import jax, jnp
from .plain_bt import bt_table
from .derivatives import CHUNK, group_moments, group_params, grouped_cells, sum_tables, theta_space

__all__ = ["grouped_max_along", "grouped_weighted_sums", "separation"]

_LP_TOL = 1e-7  # an LP optimum below this (relative) is no recession direction


def separation(design, layout, theta, mask, ridge):
    """(separated, method "certificate" or "lp", δ over φ: the LP's recession direction or 0)."""
    free_theta = np.flatnonzero(mask > 0)
    delta_phi = np.zeros(layout.n_phi)
    plain_bt = layout.structure.plain_bt
    grouped = design.arrays.group_cell is not None and not plain_bt
    if plain_bt:
        stats, eta, terms = _pair_rows(design, layout, theta)
    elif not grouped:
        stats, eta, terms = _linear_rows(design, layout, theta, mask)
    proved = False
    if not layout.structure.davidson:
        if grouped:
            proved = _grouped_certificate(design, layout, theta, free_theta)
        else:
            x_theta = _theta_rows(terms, layout.jacobian[:, free_theta])
            proved = _certificate(stats, eta, x_theta, theta[free_theta], ridge)
    if proved:
        return False, "certificate", delta_phi
    free_phi = _free_phi(layout, mask)
    delta = (_grouped_lp_direction(_Grouped(design, layout, theta), free_phi, design.n_cand) if grouped
             else _lp_direction(stats, _csr(terms, len(eta), layout.n_phi), free_phi, design.n_cand))
    if delta is None:
        return False, "lp", delta_phi
    delta_phi[free_phi] = delta
    return True, "lp", delta_phi


def _linear_rows(design, layout, theta, mask):
    """Cell statistics, η and the linearised covariate rows x_c = ∂η_c/∂φ as :func:`_row_terms`."""
    arr = design.arrays
    eta, terms = _row_terms(layout, theta, arr.a, arr.b, arr.k, np.asarray(arr.z, dtype=float))
    return np.asarray(arr.stats, dtype=float), eta, terms


def _pair_rows(design, layout, theta):
    """:func:`_linear_rows` on plain BT's pair table (:func:`~oscar_jax.infer.plain_bt.bt_table`):
    there η and the row x = e_i − e_j depend on the pair alone, so a pair's cells, each
    oriented i < j, are one row with their summed weight and wins; the certificate's sums and
    the LP's sides are the cells' own (a flipped cell swaps α and β and negates its row).
    Small however many records (no grouped compiled pass): a plain-BT fit compiles nothing."""
    arr = design.arrays
    cells = np.asarray(arr.stats, dtype=float)
    i, j, n, y = bt_table(arr.a, arr.b, cells[:, 0], cells[:, 1], design.n_cand)
    zero = np.zeros(len(i), np.int64)
    eta, terms = _row_terms(layout, theta, i, j, zero, np.zeros((len(i), np.shape(arr.z)[1])))
    return np.column_stack([n, y, np.zeros(len(i))]), eta, terms


def _theta_rows(terms, jac):
    """The dense (n × dim θ) rows x_c J of :func:`_row_terms`' φ rows: the certificate's
    matrix, without scipy.sparse (whose import cost every fit ~0.1 CPU-s)."""
    out = None
    for col, val in terms:
        part = val[:, None] * jac[col]
        out = part if out is None else out + part
    return out


def _csr(terms, n, n_phi):
    """The sparse (n × n_phi) matrix of :func:`_row_terms`' rows (the LP's; scipy loads only here)."""
    from scipy.sparse import csr_matrix

    rows = np.tile(np.arange(n), len(terms))
    cols = np.concatenate([col for col, _ in terms])
    vals = np.concatenate([val for _, val in terms])
    return csr_matrix((vals, (rows, cols)), shape=(n, n_phi))


def _rows_at(layout, theta, a, b, k, z):
    """(η, x = ∂η/∂φ as a sparse (n × n_phi) matrix) of rows (a, b, k) with covariates z (n, 2+U)."""
    eta, terms = _row_terms(layout, theta, a, b, k, z)
    return eta, _csr(terms, len(eta), layout.n_phi)


def _row_terms(layout, theta, a, b, k, z):
    """(η, x = ∂η/∂φ as (column, value) pairs of (n,) arrays: row i has value[i] at column[i]
    of each pair) of rows (a, b, k) with covariates z (n, 2+U)."""
    a, b, k = (np.asarray(x, dtype=np.int64) for x in (a, b, k))
    phi = layout.jacobian @ theta
    pb = layout.phi_blocks
    s = phi[pb["s"]]
    gamma = np.exp(phi[pb["v"]]) if layout.structure.learn_gamma else np.ones(layout.n_judge)
    g = gamma[k]
    terms = []
    n = len(a)
    eta = g * (s[a] - s[b])

    def add(col, val):
        terms.append((np.broadcast_to(np.asarray(col, dtype=np.int64), (n,)),
                      np.broadcast_to(np.asarray(val, dtype=float), (n,))))

    add(a, g)
    add(b, -g)
    if layout.structure.learn_gamma:
        add(pb["v"].start + k, g * (s[a] - s[b]))
    for t in layout.bias_terms:
        if t == "tau":
            continue
        if t == "cov":
            for j in range(layout.n_cov):
                col = pb["cov"].start + k * layout.n_cov + j
                add(col, z[:, 2 + j])
                eta = eta + phi[col] * z[:, 2 + j]
            continue
        cov = np.ones(n) if t == "pos" else z[:, 0] if t == "len" else z[:, 1]
        add(pb[t].start + k, cov)
        eta = eta + phi[pb[t].start + k] * cov
    return eta, terms


def _stiemke_cells(eta, S):
    """Per cell: (observed wins whose multiplier is not positive, α + β, α − β) at η̂, with
    α = wy(1 − p), β = (w − wy)p (the module docstring); cells without weight count 0."""
    w, wy = S[0], S[1]
    live = w > 0
    p = sigmoid(eta)
    alpha = wy * (1.0 - p)
    beta = (w - wy) * p
    bad = live & (((wy > 0) & ~(alpha > 0)) | (((w - wy) > 0) & ~(beta > 0)))
    return bad.astype(eta.dtype), jnp.where(live, alpha + beta, 0.0), jnp.where(live, alpha - beta, 0.0)


def _certificate_sums(theta, arrays, *, layout):
    return grouped_weighted_sums(theta, arrays, arrays.stats, layout, _stiemke_cells)


def _max_along(theta, direction, arrays, *, layout):
    return grouped_max_along(theta, direction, arrays, arrays.stats, layout)


# Compiled once per design shape (grouped designs only: large data, where the host
# version's (N × dim θ) matrix cost seconds and gigabytes).
_certificate_sums_jit = persistent_jit(_certificate_sums, static_argnames=("layout",))
_max_along_jit = persistent_jit(_max_along, static_argnames=("layout",))


def _grouped_certificate(design, layout, theta, free) -> bool:
    """:func:`_certificate` of a grouped design: the same test, with the Gram matrix and the
    right-hand side summed through per-group moments (``grouped_weighted_sums``) and
    max |t_c| by one pass over the cells: no (N × dim θ) matrix."""
    arrays = design.arrays
    bad, gram, vec = (np.asarray(x) for x in _certificate_sums_jit(theta, arrays, layout=layout))
    if bad > 0:  # some observed win without a strictly positive multiplier
        return False
    zeta = _solve_checked(gram[np.ix_(free, free)], -vec[free])
    if zeta is None:
        return False
    direction = np.zeros(layout.n_theta)
    direction[free] = zeta
    return bool(float(_max_along_jit(theta, direction, arrays, layout=layout)) < 0.99)


class _Grouped:
    """A grouped design's cells as (group, record covariates): x_c = X_0[g] + Σ_j X_j[g] z_c,j
    (x = ∂η/∂φ is affine in the record covariates), for the LP's sufficient summary."""

    def __init__(self, design, layout, theta):
        arr = design.arrays
        self.stats = np.asarray(arr.stats, dtype=float)
        self.group = np.asarray(arr.cell_group, dtype=np.int64)
        gc = np.asarray(arr.group_cell, dtype=np.int64)
        self.n_groups = len(gc)
        z = np.asarray(arr.z, dtype=float)
        cols = list(record_covariates(z.shape[1]))
        self.zv = z[:, cols]
        zc = z[gc].copy()
        zc[:, cols] = 0.0
        ga, gb, gk = (np.asarray(x)[gc] for x in (arr.a, arr.b, arr.k))
        _, x0 = _rows_at(layout, theta, ga, gb, gk, zc)
        self.X = [x0]
        for col in cols:
            zj = zc.copy()
            zj[:, col] = 1.0
            self.X.append((_rows_at(layout, theta, ga, gb, gk, zj)[1] - x0).tocsr())

    def ztilde(self, j, cells):
        return np.ones(int(np.sum(cells))) if j == 0 else self.zv[cells, j - 1]


def _free_phi(layout, mask):
    """φ indices that move freely: every score, plus the φ slot of each free non-score θ."""
    jac = layout.jacobian
    free = list(range(layout.n_cand))
    u_stop = layout.theta_blocks["u"].stop
    for j in np.flatnonzero(mask > 0):
        if j < u_stop:
            continue
        rows = np.flatnonzero(jac[:, j])
        if layout.structure.davidson and layout.phi_blocks["tau"].start <= rows[0] < layout.phi_blocks["tau"].stop:
            continue
        free.extend(int(r) for r in rows)
    return np.asarray(sorted(set(free)), dtype=np.int64)


def _solve_checked(gram, rhs):
    """ζ with gram ζ = rhs, or None when the system is singular or the solve inaccurate."""
    try:
        zeta = np.linalg.solve(gram, rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(zeta)) or np.linalg.norm(gram @ zeta - rhs) > 1e-8 * max(np.linalg.norm(rhs), 1e-12):
        return None
    return zeta


def _certificate(stats, eta, x_theta, theta_free, ridge) -> bool:
    """True when Stiemke's certificate proves there is no separation (module docstring)."""
    w, wy = stats[:, 0], stats[:, 1]
    live = w > 0
    p = sigmoid(eta)
    alpha = wy * (1.0 - p)
    beta = (w - wy) * p
    has_a, has_b = wy > 0, (w - wy) > 0
    # Every observed win must keep a strictly positive multiplier.
    if np.any(has_a & live & ~(alpha > 0)) or np.any(has_b & live & ~(beta > 0)):
        return False
    m = (alpha + beta)[live]
    x = x_theta[live]
    rhs = -(x.T @ (alpha - beta)[live])  # = −λθ̂ at a stationary point
    gram = (x * m[:, None]).T @ x
    zeta = _solve_checked(gram, rhs)
    if zeta is None:
        return False
    t = x @ zeta
    # α' = α + tα, β' = β − tβ·(−1): each cell's pair shifts by the same t (|t| < 1 keeps both > 0).
    return bool(np.max(np.abs(t), initial=0.0) < 0.99)


def _sides(stats):
    """(cells with a slot-A win, cells with a slot-B win) among cells with weight (ties: both)."""
    w, wy = stats[:, 0], stats[:, 1]
    scale = np.maximum(w, 1e-300)
    return (wy / scale > 1e-12) & (w > 0), ((w - wy) / scale > 1e-12) & (w > 0)


def _lp_direction(stats, x_phi, free_phi, n_cand):
    """Konis' LP in φ (scores sum to zero). Returns the recession direction over free_phi or None."""
    plus, minus = _sides(stats)
    x = x_phi[:, free_phi].tocsr()
    objective = np.asarray(x[plus].sum(axis=0)).ravel() - np.asarray(x[minus].sum(axis=0)).ravel()
    return _lp_solve(x[plus], x[minus], objective, free_phi, n_cand)


def _grouped_lp_direction(grouped: _Grouped, free_phi, n_cand):
    """:func:`_lp_direction` of a grouped design, on a sufficient summary of its cells.

    A cell's constraint x_cᵀδ ≥ 0 (or ≤ 0) is affine in its record covariate, so with one
    record covariate the constraints of a group's cells on one side hold exactly when they
    hold at that side's smallest and largest covariate: at most four rows per group instead
    of one per cell (the same feasible set); the objective sums x_c over the cells, by
    group. With several record covariates the cells' own rows are used.
    """
    import pandas as pd
    from scipy.sparse import vstack

    plus, minus = _sides(grouped.stats)
    X = [x[:, free_phi].tocsr() for x in grouped.X]

    def side(cells):
        g = grouped.group[cells]
        objective = sum(X[j].T @ np.bincount(g, grouped.ztilde(j, cells), grouped.n_groups) for j in range(len(X)))
        if len(X) > 2:  # the cells' own rows: x_c = X_0[g] + Σ_j X_j[g] z_c,j
            rows = X[0][g]
            for j in range(1, len(X)):
                rows = rows + X[j][g].multiply(grouped.zv[cells, j - 1][:, None])
            return rows.tocsr(), np.asarray(objective).ravel()
        if len(X) == 1:
            return X[0][np.unique(g)], np.asarray(objective).ravel()
        ext = pd.DataFrame({"g": g, "z": grouped.zv[cells, 0]}).groupby("g")["z"].agg(["min", "max"])
        gi = ext.index.to_numpy()
        rows = [X[0][gi] + X[1][gi].multiply(ext[col].to_numpy()[:, None]) for col in ("min", "max")]
        return vstack(rows).tocsr(), np.asarray(objective).ravel()

    rows_plus, obj_plus = side(plus)
    rows_minus, obj_minus = side(minus)
    return _lp_solve(rows_plus, rows_minus, obj_plus - obj_minus, free_phi, n_cand)


def _lp_solve(rows_plus, rows_minus, objective, free_phi, n_cand):
    """max objective·δ s.t. rows_plus δ ≥ 0, rows_minus δ ≤ 0, |δ| ≤ 1, Σ δ_s = 0 (HiGHS)."""
    from scipy.optimize import linprog  # imported only when the certificate fails
    from scipy.sparse import csr_matrix, vstack

    a_ub = vstack([-rows_plus, rows_minus]).tocsr()
    c = -objective
    is_s = free_phi < n_cand
    a_eq = csr_matrix(is_s.astype(float)[None, :])
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=[0.0],
                  bounds=(-1.0, 1.0), method="highs")
    if res.status != 0 or -res.fun <= _LP_TOL * max(1.0, float(np.abs(c).sum())):
        return None
    delta = np.where(np.abs(res.x) > 1e-7, res.x, 0.0)
    return delta


def grouped_weighted_sums(theta, arrays: DesignArrays, stats, layout: Layout, per_cell):
    """(Σ_c s_c, Σ_c m_c r_c r_cᵀ, Σ_c d_c r_c) in θ over a grouped design's cells, r_c = ∂η_c/∂θ.

    ``per_cell(η, stats rows) → (s, m, d)`` gives each cell's weights: one chunked pass
    forms the per-group moments Σ m z̃z̃ᵀ and Σ d z̃, then the chain rule runs per group
    (:func:`~oscar_jax.model.grouped.group_derivatives`); no (N × dim θ) matrix. For the
    separation certificate of :func:`separation` (fractional ties).
    """
    rows = grouped_cells(arrays, stats)
    P, Zc = group_params(theta, rows, layout), list(rows.group_z)
    q = 1 + len(record_covariates(arrays.z.shape[1]))

    def record(eta, tau, S, zv):
        s_, m, d = per_cell(eta, S)
        zt = [jnp.ones_like(eta)] + list(zv)
        return s_, [d * zt[a] for a in range(q)] + [m * zt[a] * zt[b] for a, b in moment_pairs(q)]

    value, mom = group_moments(P, Zc, arrays, rows, layout, True, False, record=record)
    abk = rows.group_abk
    zero = [jnp.zeros_like(x) for x in mom[:q]]
    grads, hc = group_derivatives(P, Zc, zero + list(mom[q:]), layout)
    gram = theta_space(sum_tables(value, grads, hc, *abk, layout, True, False), layout)[2]
    grads, _ = group_derivatives(P, Zc, mom[:q], layout, with_hess=False)
    vec = theta_space(sum_tables(value, grads, None, *abk, layout, False, False), layout, with_hess=False)[1]
    return value, gram, vec


def grouped_max_along(theta, direction, arrays: DesignArrays, stats, layout: Layout):
    """max over a grouped design's cells with weight of |x_c · direction|, x_c = ∂η_c/∂θ.

    x_c · δ is affine in the record covariates: per group u_a = A_a · δ_ρ (δ in the reduced
    slots, :func:`~oscar_jax.model.grouped.group_r`), then one chunked pass over the cells.
    """
    rows = grouped_cells(arrays, stats)
    P, Zc = group_params(theta, rows, layout), list(rows.group_z)
    D = group_params(direction, rows, layout)  # φ = Jδ at each group's local slots
    d_red = [D[0] - D[1]] + list(D[2:])
    u = [sum(a_i * d_i for a_i, d_i in zip(A, d_red)) for A in group_r(P, Zc, layout)]
    cg, n = arrays.cell_group, arrays.cell_group.shape[0]

    def biggest(lo, size):
        take = lambda x: jax.lax.dynamic_slice_in_dim(x, lo, size)  # noqa: E731
        g = take(cg)
        t = u[0][g]
        z = take(rows.z)
        for j, col in enumerate(record_covariates(z.shape[1])):
            t = t + u[j + 1][g] * z[:, col]
        return jnp.max(jnp.where(take(rows.stats)[:, 0] > 0, jnp.abs(t), 0.0), initial=0.0)

    n_full, rest = divmod(n, CHUNK)
    out = jnp.zeros((), theta.dtype)
    if n_full:
        out = jax.lax.scan(lambda m, i: (jnp.maximum(m, biggest(i * CHUNK, CHUNK)), None), out, jnp.arange(n_full))[0]
    if rest:
        out = jnp.maximum(out, biggest(n_full * CHUNK, rest))
    return out
