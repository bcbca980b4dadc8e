"""A fit's checks, and what each interval of a result may show, decided once per result.

:func:`fit_checks` are the paper's Appendix B.3 checks of a fit (convergence,
stationarity, identification, curvature, bounds, clusters, connectedness). They pass
more often than they should mean "all is well": the ridge keeps every estimate finite,
also where the data would send a quantity to ±∞ or say almost nothing about it
(:mod:`oscar_jax.infer.identification`). Such a quantity's interval is not a confident
number: :class:`Status` records, per candidate and judge, whether its interval is shown
or withheld and why, and every output (text, JSON, CSV, HTML) reads it from the result
(``result.status(ci)``) instead of deciding again. A result with nothing flagged has
:meth:`Status.shown`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..infer.fit_core import STATIONARITY_TOL
from ..infer.identification import INTERVAL_FLAGS, zero_variance_message
from ..infer.solver import STATUS

__all__ = ["Status", "failed_checks", "fit_checks", "fit_status", "identification_check", "withheld"]

_TINY_SE = 1e-9  # a sandwich SE below this is zero: no residual variation, not certainty


@dataclass(frozen=True)
class Status:
    """How each interval of one result may be shown: None (a number) or why not.

    ``candidates`` covers each candidate's score, s and q_field intervals; ``gamma``,
    ``kappa``, ``D`` (with β_pos), ``beta_len`` and ``beta_fam`` each judge's; a pair's q
    interval is withheld when either candidate's is, unless ``pairs`` is False (draw
    intervals bound a pair's q where the Wald interval cannot). ``candidate_flags`` and
    ``judge_flags`` are the flags behind it.
    """

    candidates: tuple
    gamma: tuple
    kappa: tuple
    D: tuple
    beta_len: tuple = ()
    beta_fam: tuple = ()
    candidate_flags: tuple = ()
    judge_flags: tuple = ()
    any_candidate_separated: bool = False
    pairs: bool = True

    @classmethod
    def shown(cls, n_cand: int, n_judge: int) -> Status:
        """Every interval shown: a result with nothing flagged."""
        c, k = (None,) * n_cand, (None,) * n_judge
        return cls(candidates=c, gamma=k, kappa=k, D=k, beta_len=k, beta_fam=k, candidate_flags=((),) * n_cand,
                   judge_flags=((),) * n_judge)

    def under_draws(self) -> Status:
        """The status when κ and q intervals come from draws, which bound them whatever the flags."""
        return replace(self, kappa=(None,) * len(self.kappa), pairs=False)

    def pair(self, a: int, b: int) -> str | None:
        """Why the q interval of candidates ``a`` and ``b`` (data-order indices) is withheld, or None."""
        return (self.candidates[a] or self.candidates[b]) if self.pairs else None


def withheld(flags) -> str | None:
    """Why a quantity with these flags gets no interval (None: it gets one)."""
    if "separated" in flags:
        return "unbounded"
    if any(f in flags for f in INTERVAL_FLAGS):
        return "not estimable"
    return None


def fit_status(result, ci: str) -> Status:
    """The :class:`Status` of a :class:`~oscar_jax.results.fit.FitResult`'s ``ci`` intervals.

    The identification flags plus "zero variance" where a free quantity's sandwich SE is
    zero. A flagged candidate's intervals are "unbounded" when separated, "not estimable"
    when penalty-dominated or of zero variance. κ_k = γ_k·RMS(s) inherits a separated
    score (RMS(s) grows without bound), so every judge's κ interval is unbounded then; a
    judge's D and β_pos follow its own β_pos, β_len and β_fam their own coefficients.
    """
    ident = result.identification
    cand = [list(f) for f in ident.candidate_flags]
    judges = [list(f) for f in ident.judge_flags]
    se_bias = {t: np.full(result.design.n_judge, np.nan) for t in ("pos", "len", "fam")}
    if result.cov is not None:
        se_t = result.target_se(ci)
        for flags, se in [*zip(cand, np.asarray(se_t.s)), *zip(judges, np.asarray(se_t.log_kappa))]:
            if not se > _TINY_SE and "separated" not in flags:
                flags.append("zero variance")
        se_bias = {t: result.bias_se(ci, t) for t in se_bias}
    any_sep = any("separated" in f for f in cand)
    kappa, bias = [], {t: [] for t in se_bias}
    for kk, flags in enumerate(judges):
        terms = ident.judge_flag_terms[kk] if kk < len(ident.judge_flag_terms) else {}
        if any_sep or "γ" in terms.get("separated", []):
            kappa.append("unbounded")
        elif "γ" in terms.get("penalty-dominated", []) or "zero variance" in flags:
            kappa.append("not estimable")
        else:
            kappa.append(None)
        for t, label in (("pos", "β_pos"), ("len", "β_len"), ("fam", "β_fam")):
            se = se_bias[t][kk]
            if label in terms.get("separated", []):
                bias[t].append("unbounded")
            elif label in terms.get("penalty-dominated", []) or not (se > _TINY_SE or np.isnan(se)):
                bias[t].append("not estimable")
            else:
                bias[t].append(None)
    return Status(candidates=tuple(withheld(f) for f in cand), gamma=tuple(kappa), kappa=tuple(kappa),
                  D=tuple(bias["pos"]), beta_len=tuple(bias["len"]), beta_fam=tuple(bias["fam"]),
                  candidate_flags=tuple(map(tuple, cand)), judge_flags=tuple(map(tuple, judges)),
                  any_candidate_separated=any_sep)


def identification_check(result, ci: str) -> dict:
    """A B.3-style check of a fit: ok only when no candidate or judge is flagged."""
    ident, design = result.identification, result.design
    st = result.status(ci)
    names = list(design.candidates) + list(design.judges)
    flags = list(st.candidate_flags) + list(st.judge_flags)
    flagged = {"candidates": {c: list(f) for c, f in zip(design.candidates, st.candidate_flags) if f},
               "judges": {j: list(f) for j, f in zip(design.judges, st.judge_flags) if f}}
    zero = [n for n, f in zip(names, flags) if "zero variance" in f]
    return {"ok": not (flagged["candidates"] or flagged["judges"]), "separated": bool(ident.separated),
            "method": ident.method, "separated_quantities": list(ident.separated_quantities),
            "penalty_dominated": list(ident.penalty_dominated), "flagged": flagged,
            "messages": ident.messages(design.candidates, design.judges)
            + ([zero_variance_message(zero)] if zero else [])}


def fit_checks(result) -> dict:
    """Appendix B.3 checks of a :class:`~oscar_jax.results.fit.FitResult`, as plain Python values."""
    c = result.core
    lo, hi = float(c.min_eig), float(c.max_eig)
    return {
        "converged": bool(c.converged),
        "solver_status": STATUS.get(int(c.status), str(int(c.status))),
        "n_iter": int(c.n_iter),
        "stationarity": {"ok": bool(c.stationary), "grad_inf_over_n": float(c.grad_inf) / max(float(c.weight), 1e-300),
                         "tol": STATIONARITY_TOL},
        "identification": {"ok": bool(c.identified), "rank": int(c.n_identified), "dim_theta": int(c.n_free)},
        "curvature": {"ok": bool(c.curvature_ok), "min_eig": lo, "max_eig": hi},
        "bounds": {"ok": not bool(c.at_bound), "v_bound": result.effective_spec.v_bound},
        "clusters": {"ok": bool(c.clusters_ok), "G": int(c.n_clusters), "dim_theta": int(c.n_free)},
        "connected": {"ok": bool(c.connected)},
        # a start not run (the zero start settled: ``fit(starts=None)``) is left out
        "start_objectives": [float(x) for x in np.atleast_1d(c.start_objectives) if not np.isnan(x)],
        "all_ok": bool(c.ok),
    }


def failed_checks(ch: dict) -> list[str]:
    """One sentence per failed check of :func:`fit_checks`."""
    out = []
    if not ch["converged"]:
        out.append(f"solver did not converge ({ch['solver_status']})")
    if not ch["stationarity"]["ok"]:
        out.append(f"stationarity failed: ‖∇L‖∞/N = {ch['stationarity']['grad_inf_over_n']:.2e} > 1e-7")
    if not ch["identification"]["ok"]:
        out.append(f"identification failed: R̂ᵀŴR̂ has rank {ch['identification']['rank']} < dim θ = "
                   f"{ch['identification']['dim_theta']} (some parameters are not identified by the data)")
    if not ch["curvature"]["ok"]:
        out.append(f"curvature failed: smallest Hessian eigenvalue {ch['curvature']['min_eig']:.3e}")
    if not ch["bounds"]["ok"]:
        out.append("a log-sensitivity v_k is at its bound ±15 (a judge with ~zero or huge sensitivity)")
    if not ch["clusters"]["ok"]:
        out.append(f"G = {ch['clusters']['G']} prompt clusters ≤ dim θ = {ch['clusters']['dim_theta']}: "
                   "cluster-robust inference for the full vector is unreliable")
    if not ch["connected"]["ok"]:
        out.append("comparison graph is not connected")
    return out
