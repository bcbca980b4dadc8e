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

import numpy as np

__all__ = ["CONTRACTION_MIN", "INTERVAL_FLAGS", "Identification", "MIN_VOTES", "RECORDS_PER_COEF", "identify",
           "zero_variance_message"]

CONTRACTION_MIN = 0.9   # below: the ridge supplies more than a tenth of the precision
MIN_VOTES = 10          # records a candidate needs before its score is worth reading alone
RECORDS_PER_COEF = 10   # records a judge needs per coefficient it owns (γ and each bias)
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

    from .separation import separation  # the numeric stack: only once a fit exists

    separated, method, delta_phi = separation(design, layout, theta, mask, ridge)

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
