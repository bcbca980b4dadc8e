"""The fair baseline: an independent numpy/scipy fit of the same penalized OSCAR objective.

What a skeptical reviewer would write without oscar_jax, and what every speed claim is
measured against (issues 36 and 37):

* **the same data form** — weighted cells (a, b, k, z; w = Σ weights, wy = Σ weight·Y): the
  loss is linear in the outcome, so records that share (a, b, k, z) collapse exactly, and any
  scipy user can do it; with a continuous length every record is its own cell;
* **the same objective** — Σ_c [w_c log(1 + e^η_c) − wy_c η_c] + (λ/2)‖θ‖², Helmert-coded
  scores, γ_k = exp(v_k) with the reference judge at 1, |v_k| ≤ 15, ties ½, λ = 0.05 and
  the B.2 column selection (a bias column is kept when it raises its judge's weighted rank);
* **analytic derivatives** — the gradient by ``np.bincount``; for the Newton variant the
  exact Hessian, assembled in the expanded space φ by one ``np.bincount`` per pair of local
  slots and mapped to θ by the constant J = ∂φ/∂θ;
* **a matched tolerance** — each solver stops as soon as the B.3 stationarity check holds,
  ‖projected ∇‖∞ ≤ 1e-7·N (L-BFGS-B: ``gtol`` = 1e-7·N, ``ftol`` = 0 so that the gradient
  test decides; trust-exact: ‖∇‖₂ ≤ 1e-7·N). oscar_jax iterates to 1e-12·N, so the baseline
  solves an easier problem (its estimate is reported next to the time);
* **one start** (zero) unless asked, and a warm start where the package uses one.

:class:`CellObjective` is the objective; :func:`fit_cells` fits it with L-BFGS-B
(``method="lbfgsb"``) or scipy's exact-Hessian trust region (``method="trust-exact"``).
:class:`ScipyFit` keeps the older per-record interface (a labelled extra: cells = records).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from benchmarks.scipy_script import helmert

__all__ = ["B3_GTOL", "CellObjective", "ScipyFit", "fit_cells", "from_design"]

B3_GTOL = 1e-7  # B.3(1): ‖∇L‖∞ / N; the baseline stops as soon as it holds
_BIAS = ("pos", "len", "fam")


class CellObjective:
    """Penalized fractional-logit OSCAR-family objective on weighted cells.

    a, b, k : (n,) int candidates in slots A/B and judge; L, F : (n,) covariates;
    w, wy : (n,) total weight and weighted slot-A score of each cell.
    """

    def __init__(self, a, b, k, L, F, w, wy, n_cand, n_judge, ref, terms=_BIAS, learn_gamma=True,
                 ridge=0.05, v_bound=15.0):
        self.a, self.b, self.k = (np.asarray(x, dtype=np.int64) for x in (a, b, k))
        self.w = np.asarray(w, dtype=float)
        self.wy = np.asarray(wy, dtype=float)
        self.n_cand, self.n_judge, self.ref = n_cand, n_judge, ref
        self.C = helmert(n_cand)
        self.learn_gamma, self.ridge, self.v_bound = learn_gamma, ridge, v_bound
        n = len(self.a)
        cov = {"pos": np.ones(n), "len": np.asarray(L, float), "fam": np.asarray(F, float)}
        self.terms = [t for t in _BIAS if t in terms]
        self.z = [cov[t] for t in self.terms]
        self.keep = self._column_selection()
        self.free_v = np.array([kk for kk in range(n_judge) if kk != ref], dtype=np.int64)
        self.n_u = n_cand - 1
        self.n_v = len(self.free_v) if learn_gamma else 0
        self.bias_index = [np.flatnonzero(self.keep[j]) for j in range(len(self.terms))]
        self.n_theta = self.n_u + self.n_v + sum(len(ix) for ix in self.bias_index)
        self.weight = float(self.w.sum())

    def _column_selection(self):
        """B.2: per judge, keep a bias column if it raises the rank of the √w-weighted design."""
        keep = np.zeros((len(self.terms), self.n_judge), bool)
        order = np.argsort(self.k, kind="stable")
        bounds = np.searchsorted(self.k[order], np.arange(self.n_judge + 1))
        for kk in range(self.n_judge):
            rows = order[bounds[kk]:bounds[kk + 1]]
            rows = rows[self.w[rows] > 0]
            if not rows.size:
                continue
            sw = np.sqrt(self.w[rows])
            kept, rank = [], 0
            for j, col in enumerate(self.z):
                trial = np.column_stack(kept + [col[rows] * sw])
                r = np.linalg.matrix_rank(trial, tol=1e-10 * max(np.abs(trial).max(), 1e-300))
                if r > rank:
                    kept.append(col[rows] * sw)
                    keep[j, kk], rank = True, r
        return keep

    # ---- parameters ---------------------------------------------------------------
    def unpack(self, theta):
        s = self.C @ theta[: self.n_u]
        v = np.zeros(self.n_judge)
        if self.learn_gamma:
            v[self.free_v] = theta[self.n_u: self.n_u + self.n_v]
        pos, betas = self.n_u + self.n_v, []
        for ix in self.bias_index:
            beta = np.zeros(self.n_judge)
            beta[ix] = theta[pos: pos + len(ix)]
            pos += len(ix)
            betas.append(beta)
        return s, v, betas

    def bounds(self):
        return ([(None, None)] * self.n_u + [(-self.v_bound, self.v_bound)] * self.n_v
                + [(None, None)] * (self.n_theta - self.n_u - self.n_v))

    def _eta(self, theta):
        s, v, betas = self.unpack(theta)
        gamma = np.exp(v)[self.k]
        d = s[self.a] - s[self.b]
        eta = gamma * d
        for beta, z in zip(betas, self.z):
            eta += beta[self.k] * z
        return eta, gamma, d, betas

    # ---- derivatives ----------------------------------------------------------------
    def value_grad(self, theta):
        """(f, ∇f) of the penalized objective."""
        eta, gamma, d, _ = self._eta(theta)
        loss = np.dot(self.w, np.logaddexp(0.0, eta)) - np.dot(self.wy, eta)
        p = 0.5 * (1.0 + np.tanh(0.5 * eta))  # σ(η) without overflow
        r = self.w * p - self.wy
        rg = r * gamma
        g_s = np.bincount(self.a, rg, self.n_cand) - np.bincount(self.b, rg, self.n_cand)
        grad = [self.C.T @ g_s]
        if self.learn_gamma:
            grad.append(np.bincount(self.k, rg * d, self.n_judge)[self.free_v])
        for ix, z in zip(self.bias_index, self.z):
            grad.append(np.bincount(self.k, r * z, self.n_judge)[ix])
        return loss + 0.5 * self.ridge * theta @ theta, np.concatenate(grad) + self.ridge * theta

    def hessian(self, theta):
        """Exact penalized Hessian: Σ_c [w p(1−p) r rᵀ + (w p − wy) ∂²η] + λI, r = ∂η/∂φ.

        Built in φ = (s, v, biases per judge): each cell touches slots (a, b, v_k, bias_k…);
        one bincount per pair of local slots, then θ-space by J = ∂φ/∂θ.
        """
        eta, gamma, d, _ = self._eta(theta)
        p = 0.5 * (1.0 + np.tanh(0.5 * eta))
        h = self.w * p * (1.0 - p)
        res = self.w * p - self.wy
        K, c = self.n_judge, self.n_cand
        idx, rows = [self.a, self.b], [gamma, -gamma]
        off = c
        if self.learn_gamma:
            idx.append(off + self.k)
            rows.append(gamma * d)
            off += K
        for z in self.z:
            idx.append(off + self.k)
            rows.append(z)
            off += K
        n_phi = off
        hp = np.zeros(n_phi * n_phi)
        for i in range(len(idx)):
            for j in range(i, len(idx)):
                vals = h * rows[i] * rows[j]
                if self.learn_gamma and 2 in (i, j):  # ∂²η/∂v∂s_a = γ, ∂²η/∂v∂s_b = −γ, ∂²η/∂v² = γ d
                    other = j if i == 2 else i
                    vals = vals + res * (rows[other] if other < 3 else 0.0)
                flat = idx[i] * n_phi + idx[j]
                acc = np.bincount(flat, vals, n_phi * n_phi)
                hp += acc
                if i != j:
                    hp += acc.reshape(n_phi, n_phi).T.ravel()
        hp = hp.reshape(n_phi, n_phi)
        jac = self._jacobian(n_phi)
        return jac.T @ hp @ jac + self.ridge * np.eye(self.n_theta)

    def _jacobian(self, n_phi):
        jac = np.zeros((n_phi, self.n_theta))
        c, K = self.n_cand, self.n_judge
        jac[:c, : self.n_u] = self.C
        col, off = self.n_u, c
        if self.learn_gamma:
            jac[off + self.free_v, col + np.arange(self.n_v)] = 1.0
            col, off = col + self.n_v, off + K
        for ix in self.bias_index:
            jac[off + ix, col + np.arange(len(ix))] = 1.0
            col, off = col + len(ix), off + K
        return jac

    def projected_grad_inf(self, theta):
        _, g = self.value_grad(theta)
        lo = np.array([b[0] if b[0] is not None else -np.inf for b in self.bounds()])
        hi = np.array([b[1] if b[1] is not None else np.inf for b in self.bounds()])
        held = ((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0))
        return float(np.max(np.abs(np.where(held, 0.0, g)), initial=0.0))


def fit_cells(obj: CellObjective, x0=None, *, method: str = "lbfgsb", gtol: float = B3_GTOL, maxiter: int = 20000):
    """Minimize ``obj`` from ``x0`` (default zero) until ‖∇‖ ≤ ``gtol``·N (B.3: 1e-7).

    ``method``: ``"lbfgsb"`` (L-BFGS-B, bounds on v; ``ftol`` = 0 so only the projected
    gradient stops it) or ``"trust-exact"`` (exact Hessian; the v bounds are checked after
    the fact: they are inactive on every benchmark input).
    """
    x0 = np.zeros(obj.n_theta) if x0 is None else np.asarray(x0, float)
    tol = gtol * max(obj.weight, 1.0)
    if method == "lbfgsb":
        return minimize(obj.value_grad, x0, jac=True, method="L-BFGS-B", bounds=obj.bounds(),
                        options={"maxiter": maxiter, "maxfun": 2 * maxiter, "ftol": 0.0, "gtol": tol})
    if method == "trust-exact":
        res = minimize(obj.value_grad, x0, jac=True, hess=obj.hessian, method="trust-exact",
                       options={"gtol": tol, "maxiter": maxiter})
        v = res.x[obj.n_u: obj.n_u + obj.n_v]
        if np.any(np.abs(v) > obj.v_bound):
            res.success = False
            res.message = "a log-sensitivity left its bound (trust-exact ignores bounds)"
        return res
    raise ValueError(f"method {method!r}: expected 'lbfgsb' or 'trust-exact'")


def from_design(design, spec, stats=None) -> CellObjective:
    """The objective of ``spec`` (a fractional-tie model) on a Design's cells.

    ``stats`` (C_, 3) overrides the cells' (w, wy, wt) (e.g. a bootstrap replicate's).
    """
    arr = design.arrays
    z = np.asarray(arr.z)
    st = np.asarray(arr.stats if stats is None else stats)
    return CellObjective(np.asarray(arr.a), np.asarray(arr.b), np.asarray(arr.k), z[:, 0], z[:, 1], st[:, 0],
                         st[:, 1], design.n_cand, design.n_judge, design.reference, terms=spec.terms,
                         learn_gamma=spec.learn_gamma, ridge=spec.ridge, v_bound=spec.v_bound)


class ScipyFit(CellObjective):
    """Per-record interface (a labelled extra row: every record its own cell, unit weights).

    a, b, k : (N,) int; y : (N,) in [0, 1]; L, F : (N,) covariates; w : (N,) record weights.
    ``fit(starts, seed)`` runs L-BFGS-B from zero and ``starts − 1`` N(0, 0.08²) draws at the
    matched tolerance and keeps the smallest objective.
    """

    def __init__(self, a, b, k, y, L, F, n_cand, n_judge, ref, terms=_BIAS, learn_gamma=True, ridge=0.05,
                 v_bound=15.0, w=None):
        y = np.asarray(y, dtype=float)
        w = np.ones_like(y) if w is None else np.asarray(w, dtype=float)
        super().__init__(a, b, k, L, F, w, w * y, n_cand, n_judge, ref, terms=terms, learn_gamma=learn_gamma,
                         ridge=ridge, v_bound=v_bound)

    def objective(self, theta):
        return self.value_grad(theta)

    def fit(self, starts=1, seed=0, x0=None, method="lbfgsb"):
        rng = np.random.default_rng(seed)
        first = np.zeros(self.n_theta) if x0 is None else np.asarray(x0, float)
        best = None
        for x in [first] + [rng.normal(0.0, 0.08, self.n_theta) for _ in range(starts - 1)]:
            res = fit_cells(self, x, method=method)
            if best is None or res.fun < best.fun:
                best = res
        return best
