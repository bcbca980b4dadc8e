"""Plain Bradley–Terry (γ ≡ 1, no bias terms, ties ½) on the candidate-pair table, in host numpy.

η = s_a − s_b reads a record only through its unordered candidate pair, so the data collapse
exactly to a table over the C(C−1)/2 pairs: n = total weight, y = weighted wins of the
pair's first candidate. The penalized objective Σ_pairs [n softplus(η) − y η] + (λ/2)‖u‖²
(s = C u, Helmert) is strictly convex in u, and Newton's method on the (C−1)-dimensional
system converges in a handful of steps. At this size (Chatbot Arena: 20 candidates, 190
pairs) a compiled program's dispatch costs more than the arithmetic, so the plain-BT fit
runs here: :func:`bt_core` is the core on integer arrays, :func:`bt_fit_core` the
:class:`~oscar_jax.infer.fit_core.FitCore` of a design, with every B.3 check.
"""

from __future__ import annotations

import numpy as np

from ..model.links import sigmoid, softplus
from ..model.params import helmert
from .fit_core import STATIONARITY_TOL, FitCore, complete_checks
from .sandwich import host_sym_solve, sandwich

__all__ = ["BTSolution", "bt_core", "bt_covariances", "bt_fit_core", "bt_table"]


def bt_table(a, b, w, wy, n_cand: int):
    """(i, j, n, y) over the unordered pairs i < j with weight: n = Σ w, y = weighted wins of i.

    A record with i in slot B adds w − wy to i's wins (the loss depends on η = s_a − s_b only).
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    w, wy = np.asarray(w, float), np.asarray(wy, float)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * n_cand + hi
    size = n_cand * n_cand
    n = np.bincount(key, w, size)
    y = np.bincount(key, np.where(a < b, wy, w - wy), size)
    pairs = np.flatnonzero(n > 0)
    return pairs // n_cand, pairs % n_cand, n[pairs], y[pairs]


class BTSolution:
    """Newton's solution on a pair table: u, s = C u, the penalized objective, gradient and
    Hessian in u at the solution, the unpenalized information, iterations, convergence."""

    __slots__ = ("u", "s", "objective", "grad", "hess", "info", "n_iter", "converged")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _signed_sum(i, j, r, size: int):
    """Σ r (e_i − e_j) over the rows, as a (size,) vector: a residual's gradient in s, summed
    by candidate (or, with keys offset by prompt, by (prompt, candidate))."""
    return np.bincount(i, r, size) - np.bincount(j, r, size)


def bt_core(i, j, n, y, n_cand: int, ridge: float = 0.05, *, gtol: float = 1e-12, max_iter: int = 100,
            helm=None) -> BTSolution:
    """Penalized plain BT on a pair table (:func:`bt_table`) by Newton's method from u = 0.

    Stops when ‖∇‖∞ ≤ ``gtol``·N (the compiled fit's tolerance); a backtracking line search
    keeps every step a descent step.
    """
    helm = helmert(n_cand) if helm is None else helm
    weight = float(np.sum(n))
    tol = gtol * max(weight, 1.0)
    # Σ h (e_i − e_j)(e_i − e_j)ᵀ: −h at (i, j) and (j, i), +h at (i, i) and (j, j)
    lap_index = np.concatenate([i * n_cand + j, j * n_cand + i, i * (n_cand + 1), j * (n_cand + 1)])

    def derivs(u):
        s = helm @ u
        eta = s[i] - s[j]
        f = float(np.dot(n, softplus(eta)) - np.dot(y, eta)) + 0.5 * ridge * float(u @ u)
        p = sigmoid(eta)
        r = n * p - y
        g_s = _signed_sum(i, j, r, n_cand)
        h = n * p * (1.0 - p)
        lap = np.bincount(lap_index, np.concatenate([-h, -h, h, h]), n_cand * n_cand)
        info = helm.T @ lap.reshape(n_cand, n_cand) @ helm
        return f, helm.T @ g_s + ridge * u, info

    u = np.zeros(n_cand - 1)
    f, g, info = derivs(u)
    it, converged = 1, bool(np.max(np.abs(g), initial=0.0) <= tol)
    while not converged and it < max_iter:
        hess = info + ridge * np.eye(len(u))
        step = -np.linalg.solve(hess, g)
        t = 1.0
        while True:  # Armijo backtracking (strictly convex: the full step is taken near the optimum)
            f_new, g_new, info_new = derivs(u + t * step)
            it += 1
            if f_new <= f + 1e-4 * t * float(g @ step) or t < 1e-10 or it >= max_iter:
                break
            t *= 0.5
        u, f, g, info = u + t * step, f_new, g_new, info_new
        converged = bool(np.max(np.abs(g), initial=0.0) <= tol)
    return BTSolution(u=u, s=helm @ u, objective=f, grad=g, hess=info + ridge * np.eye(len(u)), info=info,
                      n_iter=it, converged=converged)


def bt_fit_core(arrays, layout, ridge: float, n_clusters: int, max_iter: int = 100) -> FitCore:
    """:class:`FitCore` (numpy) of plain BT on a design's cells, the B.3 checks included.

    The same checks as :func:`~oscar_jax.infer.fit_core.fit_core`, by its host
    :func:`~oscar_jax.infer.fit_core.complete_checks` (connectivity on the pair table): the
    objective is strictly convex, so one start; every θ coordinate is free (no bias columns
    to select); the observed Hessian is the information plus λI (η is linear in θ).
    """
    stats = np.asarray(arrays.stats)
    c = layout.n_cand
    i, j, n, y = bt_table(np.asarray(arrays.a), np.asarray(arrays.b), stats[:, 0], stats[:, 1], c)
    sol = bt_core(i, j, n, y, c, ridge, max_iter=max_iter, helm=layout.helmert)
    weight = float(np.sum(stats[:, 0]))
    p = len(sol.u)
    grad_inf = float(np.max(np.abs(sol.grad), initial=0.0))
    g_eff = n_clusters  # every cluster carries weight one in a full-data fit
    unset, nan = np.bool_(False), np.float64(np.nan)  # the spectral and graph checks: complete_checks
    core = FitCore(theta=sol.u, mask=np.ones(p), objective=np.float64(sol.objective),
                   start_objectives=np.asarray([sol.objective]), n_iter=np.int32(sol.n_iter),
                   converged=np.bool_(sol.converged), status=np.int32(0 if sol.converged else 1),
                   weight=np.float64(weight), grad_inf=np.float64(grad_inf),
                   stationary=np.bool_(grad_inf / max(weight, 1e-300) <= STATIONARITY_TOL),
                   n_free=np.float64(p), n_identified=np.int64(0), identified=unset, min_eig=nan, max_eig=nan,
                   curvature_ok=unset, at_bound=np.bool_(False), n_clusters=np.int64(g_eff),
                   clusters_ok=np.bool_(g_eff > p), connected=unset, point_ok=unset, ok=unset,
                   hess=sol.hess, info=sol.info)
    return complete_checks(core, i, j, c)


MEAT_BLOCK = 1 << 12  # clusters per block of the meat's sum (a block's Ψ is MEAT_BLOCK × C)


def bt_covariances(core, arrays, layout, ridge: float, n_clusters: int):
    """The cluster sandwich and model-based covariance of a plain-BT fit, in host numpy.

    A pair's loss gradient in s is r (e_a − e_b), r = w σ(s_a − s_b) − wy (the residual
    :func:`bt_core` sums over the pair table), so Ψ_g is a sum of residuals by (cluster,
    candidate); the prompts are summed a block at a time (the pairs sorted by cluster) and
    the dim-θ algebra is :func:`~oscar_jax.infer.sandwich.sandwich`'s. Equals the compiled
    :func:`~oscar_jax.infer.sandwich.covariances` to rounding (tests/test_fit.py); every
    cluster weighs one, as in a full-data fit.
    """
    c = layout.n_cand
    s = layout.helmert @ np.asarray(core.theta, float)
    pc, g = np.asarray(arrays.pair_cell), np.asarray(arrays.pair_g)
    stats = np.asarray(arrays.pair_stats)
    if np.any(np.diff(g) < 0):  # build_design sorts the pairs by cluster; a design made otherwise is sorted here
        order = np.argsort(g, kind="stable")
        pc, g, stats = pc[order], g[order], stats[order]
    a, b = np.asarray(arrays.a)[pc], np.asarray(arrays.b)[pc]
    r = stats[:, 0] * sigmoid(s[a] - s[b]) - stats[:, 1]
    mean = _signed_sum(a, b, r, c) / n_clusters
    meat = np.zeros((c, c))
    starts = np.arange(0, n_clusters, MEAT_BLOCK)
    bounds = np.searchsorted(g, np.append(starts, n_clusters))
    for first, lo, hi in zip(starts, bounds[:-1], bounds[1:]):
        rows = min(MEAT_BLOCK, n_clusters - first)
        key = (g[lo:hi] - first) * c
        psi = _signed_sum(key + a[lo:hi], key + b[lo:hi], r[lo:hi], rows * c).reshape(rows, c) - mean
        meat += psi.T @ psi
    v_phi = n_clusters / (n_clusters - 1.0) * meat
    return sandwich(v_phi, layout.jacobian, np.asarray(core.mask, float), np.asarray(core.hess, float),
                    np.asarray(core.info, float), ridge, np, host_sym_solve)
