"""What the data determine: separation and penalty dominance of every estimated quantity.

The ridge λ/2‖θ‖² keeps every estimate finite, so a fit always "succeeds" — including
when the data alone would send a coefficient to ±∞ (a judge that always picks slot A; a
candidate that wins every comparison) or say almost nothing about it (a judge with three
records). Such numbers are set by λ, not by the data, and are flagged here.

**Separation** (Albert & Anderson 1984; the linear-programming check of Konis 2007, as in
R's ``detectseparation``). Linearise η at θ̂: cell c has covariate row x_c = ∂η_c/∂φ
(γ_k and −γ_k on the two scores, γ_k(s_a − s_b) on v_k, 1 / L / F / X on the bias
coefficients; exact for everything but γ, which enters through the product γ_k s). The
unpenalized likelihood has a direction of recession δ ≠ 0 — the MLE is infinite along
it — when x_cᵀδ ≥ 0 for every cell with a slot-A win (weight wy > 0) and ≤ 0 for every
cell with a slot-B win (w − wy > 0), ties (½) forcing = 0, with some inequality strict.
The LP maximises Σ ±x_cᵀδ over the box |δ| ≤ 1 (with Σ δ_s = 0); a positive optimum
means separation and the non-zero coordinates of δ name the separated quantities.

A cheaper exact certificate runs first. By Stiemke's lemma there is no such δ if strictly
positive α (A-wins) and β (B-wins) exist with Σ αx − Σ βx = 0. The penalized fit nearly
gives them: at θ̂, α_c = wy_c(1 − p_c), β_c = (w_c − wy_c) p_c satisfy
Σ αx − Σ βx = λθ̂; the weighted minimum-norm correction t_c = x_cᵀζ with
Σ (α_c + β_c) x_c x_cᵀ ζ = −λθ̂ keeps them positive when max |t_c| < 1. That holds on
well-posed data (one small linear solve), so the LP — and the import of
``scipy.optimize`` — is needed only when the certificate fails.

**Penalty dominance.** With the ridge read as a N(0, λ⁻¹I) prior on θ and the expected
information I(θ̂) as the data's precision, the posterior covariance is (I + λI)⁻¹ and the
*contraction* of a linear quantity a = cᵀθ is

    contraction(a) = 1 − Var_post(a) / Var_prior(a) = 1 − λ cᵀ(I + λI)⁻¹c / cᵀc,

for a coordinate 1 − λ[(I + λI)⁻¹]_jj (posterior contraction, as in Betancourt's and
Gelman et al.'s prior-sensitivity checks). It is 1 when the data determine the quantity
and 0 when only the ridge does. A quantity with contraction < 0.9 — the ridge supplies
more than a tenth of its precision — is flagged "penalty-dominated": on the released
datasets every well-informed coordinate has contraction ≥ 0.95, while a log-sensitivity
heading to −∞ (γ_k → 0: a judge whose verdicts say nothing about quality once position
is accounted for, such as zai-org on MT-Bench, contraction 0.55) falls below. Scores use
c = the Helmert row of candidate i.

Flags per candidate and judge: ``separated``, ``penalty-dominated``, ``few records``
(a candidate in fewer than :data:`MIN_VOTES` records; a judge with fewer than
:data:`RECORDS_PER_COEF` records per coefficient it owns) and ``zero variance`` (a
prompt-cluster sandwich variance of zero: every residual is zero, so the interval has no
width for lack of information, not for certainty).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from ..runtime.program_cache import persistent_jit
from .derivatives import grouped_max_along, grouped_weighted_sums

__all__ = ["CONTRACTION_MIN", "INTERVAL_FLAGS", "Identification", "MIN_VOTES", "RECORDS_PER_COEF", "identify",
           "interval_status"]

CONTRACTION_MIN = 0.9   # below: the ridge supplies more than a tenth of the precision
MIN_VOTES = 10          # records a candidate needs before its score is worth reading alone
RECORDS_PER_COEF = 10   # records a judge needs per coefficient it owns (γ and each bias)
_LP_TOL = 1e-7
# Flags under which a quantity's interval is not shown as a number.
INTERVAL_FLAGS = ("separated", "penalty-dominated", "zero variance")

_TERM_LABEL = {"v": "γ", "pos": "β_pos", "len": "β_len", "fam": "β_fam", "cov": "β_cov", "tau": "τ"}


@dataclass
class Identification:
    """Identification diagnostics of one fit (see the module docstring)."""

    separated: bool
    method: str                                  # "certificate" (no separation proved) or "lp"
    candidate_flags: list[list[str]]
    judge_flags: list[list[str]]
    candidate_contraction: np.ndarray            # (C,)
    judge_contraction: dict[str, np.ndarray]     # term → (K,), NaN where the judge has no free coordinate
    separated_quantities: list[str] = field(default_factory=list)
    penalty_dominated: list[str] = field(default_factory=list)
    judge_flag_terms: list[dict[str, list[str]]] = field(default_factory=list)

    @property
    def any_flag(self) -> bool:
        return any(self.candidate_flags_any) or any(bool(f) for f in self.judge_flags)

    @property
    def candidate_flags_any(self) -> list[bool]:
        return [bool(f) for f in self.candidate_flags]

    def messages(self, candidates, judges) -> list[str]:
        """One line per kind of flag, naming the quantities (for headers and warnings)."""
        out = []
        if self.separated_quantities:
            out.append("separation: the likelihood keeps rising as " + ", ".join(self.separated_quantities[:8])
                       + (" …" if len(self.separated_quantities) > 8 else "")
                       + " move towards ±∞, so the data do not determine them (only the ridge keeps them "
                       "finite); their intervals are not shown")
        if self.penalty_dominated:
            out.append(f"penalty-dominated (contraction < {CONTRACTION_MIN}, in brackets): "
                       + ", ".join(self.penalty_dominated[:8]) + (" …" if len(self.penalty_dominated) > 8 else "")
                       + " — set more by the ridge than by the data")
        few_c = [c for c, f in zip(candidates, self.candidate_flags) if "few records" in f]
        few_j = [j for j, f in zip(judges, self.judge_flags) if "few records" in f]
        if few_c or few_j:
            out.append("few records: " + ", ".join(few_c[:5] + few_j[:5]))
        return out


def zero_variance_message(names) -> str:
    return ("zero variance: every residual is zero (e.g. all ties or one outcome repeated), so the sandwich "
            "intervals of " + ", ".join(list(names)[:5]) + (" …" if len(names) > 5 else "")
            + " would have no width for lack of information, not for certainty; not estimable")


def _linear_rows(design, layout, theta, mask):
    """Cell statistics and the linearised covariate rows x_c = ∂η_c/∂φ as a sparse matrix."""
    arr = design.arrays
    eta, x_phi = _rows_at(layout, theta, arr.a, arr.b, arr.k, np.asarray(arr.z, dtype=float))
    return np.asarray(arr.stats, dtype=float), eta, x_phi


def _rows_at(layout, theta, a, b, k, z):
    """(η, x = ∂η/∂φ as a sparse (n × n_phi) matrix) of rows (a, b, k) with covariates z (n, 2+U)."""
    from scipy.sparse import csr_matrix

    a, b, k = (np.asarray(x, dtype=np.int64) for x in (a, b, k))
    phi = layout.jacobian @ theta
    pb = layout.phi_blocks
    s = phi[pb["s"]]
    gamma = np.exp(phi[pb["v"]]) if layout.structure.learn_gamma else np.ones(layout.n_judge)
    g = gamma[k]
    rows, cols, vals = [], [], []
    n = len(a)
    idx = np.arange(n)
    eta = g * (s[a] - s[b])

    def add(col, val):
        rows.append(idx)
        cols.append(np.asarray(col, dtype=np.int64))
        vals.append(np.broadcast_to(np.asarray(val, dtype=float), (n,)))

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
    x_phi = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(n, layout.n_phi))
    return eta, x_phi


def _stiemke_cells(eta, S):
    """Per cell: (observed wins whose multiplier is not positive, α + β, α − β) at η̂, with
    α = wy(1 − p), β = (w − wy)p (the module docstring); cells without weight count 0."""
    from ..model.links import sigmoid

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
        from ..model.likelihood import record_covariates

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
    from ..model.links import sigmoid

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


def _contraction(info, mask, ridge, layout):
    """Contraction 1 − λ·cᵀ(I + λI)⁻¹c / cᵀc of every θ coordinate and every score."""
    p = layout.n_theta
    free = np.flatnonzero(mask > 0)
    cov = np.zeros((p, p))
    if free.size:
        block = info[np.ix_(free, free)] + ridge * np.eye(free.size)
        cov[np.ix_(free, free)] = np.linalg.inv(block)
    coord = np.where(mask > 0, 1.0 - ridge * np.diag(cov), np.nan)
    u = layout.theta_blocks["u"]
    helm = layout.helmert
    var_s = np.einsum("ij,jk,ik->i", helm, cov[u, u], helm)
    prior = np.einsum("ij,ij->i", helm, helm)
    scores = 1.0 - ridge * var_s / np.where(prior > 0, prior, 1.0)
    return np.clip(coord, 0.0, 1.0), np.clip(scores, 0.0, 1.0)


def identify(result) -> Identification:
    """Separation, contraction and flags of a :class:`~oscar_jax.results.fit.FitResult`."""
    design, layout = result.design, result.layout
    theta = np.asarray(result.theta, dtype=float)
    mask = np.asarray(result.core.mask, dtype=float)
    ridge = float(result.effective_spec.ridge)
    info = np.asarray(result.core.info, dtype=float)
    n_c, n_k = design.n_cand, design.n_judge
    cand, judges = design.candidates, design.judges

    free_theta = np.flatnonzero(mask > 0)
    separated = False
    method = "certificate"
    delta_phi = np.zeros(layout.n_phi)
    proved = False
    grouped = design.arrays.group_cell is not None
    if not grouped:
        stats, eta, x_phi = _linear_rows(design, layout, theta, mask)
    if not layout.structure.davidson:
        if grouped:
            proved = _grouped_certificate(design, layout, theta, free_theta)
        else:
            x_theta = np.asarray((x_phi @ layout.jacobian))[:, free_theta]
            proved = _certificate(stats, eta, x_theta, theta[free_theta], ridge)
    if not proved:
        method = "lp"
        free_phi = _free_phi(layout, mask)
        delta = (_grouped_lp_direction(_Grouped(design, layout, theta), free_phi, n_c) if grouped
                 else _lp_direction(stats, x_phi, free_phi, n_c))
        if delta is not None:
            separated = True
            delta_phi[free_phi] = delta

    coord, score_c = _contraction(info, mask, ridge, layout)
    cand_flags = [[] for _ in range(n_c)]
    judge_flags = [[] for _ in range(n_k)]
    judge_terms = [{} for _ in range(n_k)]
    sep_q, pen_q = [], []

    if separated:
        ds = delta_phi[layout.phi_blocks["s"]]
        centre = np.median(ds)
        for i in np.flatnonzero(np.abs(ds - centre) > 1e-6):
            cand_flags[i].append("separated")
            sep_q.append(f"score[{cand[i]}] ({'+' if ds[i] > centre else '−'}∞)")
    for i in np.flatnonzero(score_c < CONTRACTION_MIN):
        if "separated" not in cand_flags[i]:
            cand_flags[i].append("penalty-dominated")
            pen_q.append(f"score[{cand[i]}] ({score_c[i]:.2f})")

    judge_c = {}
    tb, pb = layout.theta_blocks, layout.phi_blocks
    for term in ["v"] + [t for t in layout.bias_terms]:
        if term not in tb:
            continue
        vals = np.full(n_k, np.nan)
        width = layout.n_cov if term == "cov" else 1
        block = coord[tb[term]]
        if term == "v":
            free_k = [kk for kk in range(n_k) if kk != layout.ref]
            vals[free_k] = block
            dphi = delta_phi[pb["v"]]
        else:
            b2 = block.reshape(n_k, width)
            finite = np.isfinite(b2)
            vals = np.where(finite.any(axis=1), np.where(finite, b2, np.inf).min(axis=1), np.nan)
            dphi = np.abs(delta_phi[pb[term]]).reshape(n_k, width).max(axis=1)
        judge_c["gamma" if term == "v" else term] = vals
        label = _TERM_LABEL[term]
        for kk in range(n_k):
            if separated and abs(dphi[kk]) > 1e-6:
                judge_terms[kk].setdefault("separated", []).append(label)
                sep_q.append(f"{label}[{judges[kk]}]")
            elif np.isfinite(vals[kk]) and vals[kk] < CONTRACTION_MIN:
                judge_terms[kk].setdefault("penalty-dominated", []).append(label)
                pen_q.append(f"{label}[{judges[kk]}] ({vals[kk]:.2f})")
    for kk in range(n_k):
        for flag in ("separated", "penalty-dominated"):
            if flag in judge_terms[kk]:
                judge_flags[kk].append(flag)

    votes = design.counts.get("candidate_votes", {})
    for i, c in enumerate(cand):
        if votes.get(c, MIN_VOTES) < MIN_VOTES:
            cand_flags[i].append("few records")
    n_records = design.counts.get("judge_records", {})
    per_judge = np.zeros(n_k)
    for term in ["v"] + list(layout.bias_terms):
        if term not in tb:
            continue
        m = mask[tb[term]]
        if term == "v":
            per_judge[[kk for kk in range(n_k) if kk != layout.ref]] += m
        else:
            per_judge += m.reshape(n_k, -1).sum(axis=1)
    for kk, j in enumerate(judges):
        if per_judge[kk] > 0 and n_records.get(j, 0) < RECORDS_PER_COEF * per_judge[kk]:
            judge_flags[kk].append("few records")

    return Identification(separated=separated, method=method, candidate_flags=cand_flags, judge_flags=judge_flags,
                          candidate_contraction=score_c, judge_contraction=judge_c, separated_quantities=sep_q,
                          penalty_dominated=pen_q, judge_flag_terms=judge_terms)


def _status(flags) -> str | None:
    if "separated" in flags:
        return "unbounded"
    if any(f in flags for f in INTERVAL_FLAGS):
        return "not estimable"
    return None


def interval_status(result, ci: str = "sandwich") -> dict:
    """How to show each interval: None (a number), "unbounded" or "not estimable".

    Returns {"candidates": [C], "kappa": [K], "D": [K], "any_candidate_separated": bool}.
    κ_k = γ_k·RMS(s) inherits a separated score (RMS(s) grows without bound), so every
    judge's κ interval is unbounded then; a judge's D follows its own β_pos.
    """
    ident = result.identification
    cand_flags, judge_flags = result.flags(ci)
    cand = [_status(f) for f in cand_flags]
    any_sep = any("separated" in f for f in cand_flags)
    se_pos = result.bias_se(ci, "pos") if result.cov is not None else np.full(result.design.n_judge, np.nan)
    kappa, d = [], []
    for kk, flags in enumerate(judge_flags):
        terms = ident.judge_flag_terms[kk] if kk < len(ident.judge_flag_terms) else {}
        if any_sep or "γ" in terms.get("separated", []):
            kappa.append("unbounded")
        elif "γ" in terms.get("penalty-dominated", []) or "zero variance" in flags:
            kappa.append("not estimable")
        else:
            kappa.append(None)
        if "β_pos" in terms.get("separated", []):
            d.append("unbounded")
        elif "β_pos" in terms.get("penalty-dominated", []) or not (se_pos[kk] > 1e-9 or np.isnan(se_pos[kk])):
            d.append("not estimable")
        else:
            d.append(None)
    return {"candidates": cand, "kappa": kappa, "D": d, "any_candidate_separated": any_sep}
