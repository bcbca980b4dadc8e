"""FitResult: estimates, intervals, checks and tidy tables of one penalized fit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from statistics import NormalDist

from ..infer.fit_core import STATIONARITY_TOL, FitCore
from ..model.design import Design
from ..model.params import Layout, Params
from ..infer.sandwich import Covariances, covariances_program, target_se, targets_jit
from ..infer.solver import STATUS
from .intervals import interval_request
from ..model.links import net_preference, sigmoid
from ..model.spec import ModelSpec
from ..runtime.validate import check_choice

__all__ = ["FitResult", "prepare_report_programs"]

_CI_KINDS = ("sandwich", "model")


def _z(ci_prob: float) -> float:
    return NormalDist().inv_cdf(0.5 + ci_prob / 2.0)


def _exp(x):
    # A separated or unidentified quantity can have a log-scale SE in the hundreds; the
    # interval is then flagged (oscar_jax.infer.identification), and exp must not overflow.
    return np.exp(np.clip(x, -745.0, 709.0))


def _covariances_call(design: Design, layout: Layout, ridge, theta, mask, hess, info, omega):
    """(program, args, keywords) of the cluster sandwich: the one call both
    :attr:`FitResult.cov` and :func:`prepare_report_programs` make."""
    return (covariances_program(design.n_cells), (theta, mask, hess, info, design.arrays, omega),
            dict(layout=layout, n_clusters=design.n_clusters, ridge=ridge))


def prepare_report_programs(design: Design, layout: Layout, ridge) -> None:
    """Compile ahead (:func:`~oscar_jax.runtime.program_cache.compile_ahead`) the programs that
    :class:`FitResult` reports with on a fit of this shape: covariances, targets and their
    delta-method SEs, with the argument types :attr:`FitResult.cov` and the rest pass."""
    vec, mat = (jax.ShapeDtypeStruct(shape, np.float64) for shape in ((layout.n_theta,), (layout.n_theta,) * 2))
    omega = jax.ShapeDtypeStruct((design.n_clusters,), np.float64)
    program, args, kw = _covariances_call(design, layout, ridge, vec, vec, mat, mat, omega)
    program.prepare(*args, **kw)
    target_se.prepare(vec, mat, layout)
    targets_jit.prepare(vec, layout)


@dataclass(frozen=True, eq=False)
class FitResult:
    """Immutable result of :func:`~oscar_jax.fit`.

    Attributes
    ----------
    design, spec, effective_spec
        The data, the requested model and the model actually fitted (terms the data
        cannot support removed; see ``notes``).
    core
        Raw arrays from the fit core (θ̂, mask, objective, checks).
    cov
        Cluster-robust (``cov.cluster``) and model-based (``cov.model``) covariance of
        θ̂, or None when the curvature check failed.
    """

    design: Design
    spec: ModelSpec
    effective_spec: ModelSpec
    layout: Layout
    core: FitCore
    notes: tuple[str, ...]
    ci_prob: float = 0.95

    @cached_property
    def cov(self) -> Covariances | None:
        """Cluster-robust and model-based covariance of θ̂ (None if the curvature check failed)."""
        if not bool(self.core.curvature_ok):
            return None
        c = self.core
        # Host arrays go to the jitted function as they are (jnp.asarray would compile a copy
        # program per shape in every new process).
        program, args, kw = _covariances_call(self.design, self.layout, self.effective_spec.ridge, c.theta, c.mask,
                                              c.hess, c.info, np.ones(self.design.n_clusters))
        cov = program(*args, **kw)
        return jax.tree_util.tree_map(np.asarray, cov)

    def __repr__(self) -> str:
        from ..report.result_display import fit_repr

        return fit_repr(self)

    def _repr_html_(self) -> str:
        from ..report.result_display import fit_repr_html

        return fit_repr_html(self)

    # ---------------------------------------------------------------- estimates
    @property
    def model(self) -> str:
        return self.spec.name

    @property
    def theta(self) -> np.ndarray:
        return np.asarray(self.core.theta)

    @cached_property
    def params(self) -> Params:
        return self.layout.unpack(self.theta)

    @property
    def objective(self) -> float:
        return float(self.core.objective)

    @cached_property
    def targets(self):
        """Targets at θ̂ (:class:`~oscar_jax.infer.sandwich.Targets`: s, x, h, field, log γ, log κ, γ̄)."""
        t = targets_jit(self.theta, self.layout)
        return jax.tree_util.tree_map(np.asarray, t)

    @property
    def scores(self) -> np.ndarray:
        return self.targets.s

    @property
    def gamma(self) -> np.ndarray:
        return self.params.gamma

    @property
    def kappa(self) -> np.ndarray:
        """κ_k = γ_k · RMS(s): sensitivity on a scale-invariant footing (Section 6.2)."""
        return np.exp(self.targets.log_kappa)

    @property
    def D(self) -> np.ndarray:
        """D_k = tanh(β_pos,k / 2): net first-slot preference (Section 3.2)."""
        return net_preference(self.params.beta_pos)

    @property
    def gamma_bar(self) -> float:
        return float(self.targets.gamma_bar)

    @property
    def win_prob(self) -> np.ndarray:
        """q_ij = σ(γ̄ (s_i − s_j)), bias terms at zero (Eq. 3)."""
        return sigmoid(self.targets.h)

    # ---------------------------------------------------------------- inference
    def covariance(self, kind: str = "sandwich") -> np.ndarray:
        check_choice("ci", kind, _CI_KINDS)
        if self.cov is None:
            return np.full((self.layout.n_theta,) * 2, np.nan)
        return self.cov.cluster if kind == "sandwich" else self.cov.model

    def _se(self, kind: str):
        cache = self.__dict__.setdefault("_se_cache", {})
        if kind not in cache:
            cov = self.covariance(kind)
            theta = self.theta
            se_t = target_se(theta, cov, self.layout)
            se_theta = np.sqrt(np.maximum(np.diag(np.asarray(cov)), 0.0))
            cache[kind] = (jax.tree_util.tree_map(np.asarray, se_t), se_theta)
        return cache[kind]

    @property
    def z(self) -> float:
        return _z(self.ci_prob)

    def _request(self, ci, ci_prob) -> tuple[str, float]:
        kind, prob = interval_request(ci, ci_prob, kinds=_CI_KINDS, default_prob=self.ci_prob)
        return kind, _z(prob)

    def bias_se(self, kind: str, term: str) -> np.ndarray:
        """(K,) standard errors of one bias term's coefficients (``"cov"``: (K, n_cov)); NaN if absent."""
        _, se_theta = self._se(kind)
        tb = self.layout.theta_blocks
        if term not in tb:
            return np.full(self.design.n_judge, np.nan)
        out = se_theta[tb[term]]
        if term == "cov":
            return out.reshape(self.design.n_judge, self.layout.n_cov)
        return out

    def kept(self, term: str) -> np.ndarray:
        """(K,) whether each judge's coefficient of ``term`` was estimated (B.2 column selection)."""
        tb = self.layout.theta_blocks
        if term not in tb:
            return np.zeros(self.design.n_judge, bool)
        m = np.asarray(self.core.mask)[tb[term]] > 0
        return m.reshape(self.design.n_judge, -1).any(axis=1) if term == "cov" else m

    # ---------------------------------------------------------------- identification
    @cached_property
    def identification(self):
        """Separation, contraction and flags per candidate and judge (:mod:`oscar_jax.infer.identification`).

        Computed on first use (host numpy on the cell table; an LP only when the cheap
        certificate of no separation fails).
        """
        from ..infer.identification import identify

        return identify(self)

    def flags(self, ci: str = "sandwich") -> tuple[list[list[str]], list[list[str]]]:
        """(candidate flags, judge flags): the identification flags plus "zero variance"
        where the interval of a free quantity has zero width for lack of residual variation."""
        ident = self.identification
        cand = [list(f) for f in ident.candidate_flags]
        judges = [list(f) for f in ident.judge_flags]
        if self.cov is not None:
            se_t, _ = self._se(ci)
            tiny = 1e-9
            for i, se in enumerate(np.asarray(se_t.s)):
                if not se > tiny and "separated" not in cand[i]:
                    cand[i].append("zero variance")
            for kk, se in enumerate(np.asarray(se_t.log_kappa)):
                if not se > tiny and "separated" not in judges[kk]:
                    judges[kk].append("zero variance")
        return cand, judges

    def identification_check(self, ci: str = "sandwich") -> dict:
        """A B.3-style check: ok only when no candidate or judge is flagged."""
        from ..infer.identification import zero_variance_message

        ident = self.identification
        cand, judges = self.flags(ci)
        flagged = {"candidates": {c: f for c, f in zip(self.design.candidates, cand) if f},
                   "judges": {j: f for j, f in zip(self.design.judges, judges) if f}}
        return {"ok": not (flagged["candidates"] or flagged["judges"]), "separated": bool(ident.separated),
                "method": ident.method, "separated_quantities": list(ident.separated_quantities),
                "penalty_dominated": list(ident.penalty_dominated), "flagged": flagged,
                "messages": ident.messages(self.design.candidates, self.design.judges)
                + ([zero_variance_message([n for n, f in zip(self.design.candidates + self.design.judges, cand + judges)
                                           if "zero variance" in f])]
                   if any("zero variance" in f for f in cand + judges) else [])}

    # ---------------------------------------------------------------- checks
    def checks(self) -> dict:
        """Appendix B.3 checks, as plain Python values."""
        c = self.core
        lo, hi = float(c.min_eig), float(c.max_eig)
        return {
            "converged": bool(c.converged),
            "solver_status": STATUS.get(int(c.status), str(int(c.status))),
            "n_iter": int(c.n_iter),
            "stationarity": {"ok": bool(c.stationary), "grad_inf_over_n": float(c.grad_inf) / max(float(c.weight), 1e-300),
                             "tol": STATIONARITY_TOL},
            "identification": {"ok": bool(c.identified), "rank": int(c.n_identified), "dim_theta": int(c.n_free)},
            "curvature": {"ok": bool(c.curvature_ok), "min_eig": lo, "max_eig": hi},
            "bounds": {"ok": not bool(c.at_bound), "v_bound": self.effective_spec.v_bound},
            "clusters": {"ok": bool(c.clusters_ok), "G": int(c.n_clusters), "dim_theta": int(c.n_free)},
            "connected": {"ok": bool(c.connected)},
            # a start not run (the zero start settled: ``fit(starts=None)``) is left out
            "start_objectives": [float(x) for x in np.atleast_1d(c.start_objectives) if not np.isnan(x)],
            "all_ok": bool(c.ok),
        }

    def failed_checks(self) -> list[str]:
        ch = self.checks()
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

    # ---------------------------------------------------------------- tables
    def leaderboard(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """Candidates by score: rank, score with CI, win probability against the field with CI.

        ``score`` is the average-judge logit x_i = γ̄ s_i (so σ(x_i − x_j) = q_ij), the
        same whichever judge is the reference and the ``score`` of ``oscar fit``; its
        interval is the delta method's for x itself. The raw parameter s (reference-judge
        scale, :attr:`scores`) and its interval are ``s``, ``s_lo``, ``s_hi``; for γ ≡ 1
        models x = s. ``ci``: ``"sandwich"`` (default) or ``"model"``; ``ci_prob``: the
        level (default the fit's). ``q_field`` is the mean over the other candidates of
        q_ij, the probability that a judge of average sensitivity prefers this candidate
        to a random other one.
        """
        ci, z = self._request(ci, ci_prob)
        se_t, _ = self._se(ci)
        t = self.targets
        names = self.design.candidates
        frame = pd.DataFrame({
            "candidate": names,
            "score": t.x,
            "score_lo": t.x - z * se_t.x,
            "score_hi": t.x + z * se_t.x,
            "s": t.s,
            "s_lo": t.s - z * se_t.s,
            "s_hi": t.s + z * se_t.s,
            "q_field": sigmoid(t.field),
            "q_field_lo": sigmoid(t.field - z * se_t.field),
            "q_field_hi": sigmoid(t.field + z * se_t.field),
            "votes": [self.design.counts["candidate_votes"][c] for c in names],
            "contraction": self.identification.candidate_contraction,
            "flags": [",".join(f) for f in self.flags(ci)[0]],
        })
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        return frame

    def judges(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """Per judge: n, γ, κ (with CIs), β_pos, D (with CI), β_len, β_fam, kept columns."""
        ci, z = self._request(ci, ci_prob)
        se_t, _ = self._se(ci)
        p = self.params
        t = self.targets
        se_pos = self.bias_se(ci, "pos")
        kept = {term: self.kept(term) for term in ("pos", "len", "fam", "cov")}
        ref = self.design.reference
        rows = {
            "judge": list(self.design.judges),
            "n": [self.design.counts["judge_records"][j] for j in self.design.judges],
            "reference": [k == ref for k in range(self.design.n_judge)],
            "gamma": p.gamma,
            "gamma_lo": _exp(t.log_gamma - z * se_t.log_gamma),
            "gamma_hi": _exp(t.log_gamma + z * se_t.log_gamma),
            "kappa": np.exp(t.log_kappa),
            "kappa_lo": _exp(t.log_kappa - z * se_t.log_kappa),
            "kappa_hi": _exp(t.log_kappa + z * se_t.log_kappa),
            "beta_pos": np.where(kept["pos"], p.beta_pos, np.nan),
            "D": np.where(kept["pos"], net_preference(p.beta_pos), np.nan),
            "D_lo": np.where(kept["pos"], net_preference(p.beta_pos - z * se_pos), np.nan),
            "D_hi": np.where(kept["pos"], net_preference(p.beta_pos + z * se_pos), np.nan),
            "beta_len": np.where(kept["len"], p.beta_len, np.nan),
            "beta_fam": np.where(kept["fam"], p.beta_fam, np.nan),
        }
        if self.layout.structure.davidson:
            rows["tau"] = p.tau
        for j, name in enumerate(self.design.covariates):
            if "cov" in self.layout.theta_blocks:
                m = np.asarray(self.core.mask)[self.layout.theta_blocks["cov"]].reshape(self.design.n_judge, -1)[:, j] > 0
                se_c = self.bias_se(ci, "cov")[:, j]
                rows[f"beta_{name}"] = np.where(m, p.beta_cov[:, j], np.nan)
                rows[f"beta_{name}_lo"] = np.where(m, p.beta_cov[:, j] - z * se_c, np.nan)
                rows[f"beta_{name}_hi"] = np.where(m, p.beta_cov[:, j] + z * se_c, np.nan)
        rows["columns"] = [",".join(tm for tm in ("pos", "len", "fam", "cov") if kept[tm][k]) or "-"
                           for k in range(self.design.n_judge)]
        for term, values in self.identification.judge_contraction.items():
            rows[f"contraction_{term}"] = values
        rows["flags"] = [",".join(f) for f in self.flags(ci)[1]]
        return pd.DataFrame(rows)

    def win_matrix(self, ci: str | None = None, long: bool = True, wide: bool = False, *,
                   ci_prob: float | None = None) -> pd.DataFrame:
        """q_ij with delta-method intervals σ(ĥ ± z·se) (Eq. 10), for every ordered pair.

        ``wide=True``: the C×C matrix P(row beats column), rows and columns ordered by
        score (best first), diagonal NaN. ``long=False``: the same matrix in data order,
        diagonal ½.
        """
        if wide:
            order = np.argsort(-self.scores, kind="mergesort")
            names = [self.design.candidates[i] for i in order]
            q = self.win_prob[np.ix_(order, order)].copy()
            np.fill_diagonal(q, np.nan)
            return pd.DataFrame(q, index=pd.Index(names, name="row beats column"), columns=names)
        ci, z = self._request(ci, ci_prob)
        se_t, _ = self._se(ci)
        h = self.targets.h
        names = self.design.candidates
        if not long:
            return pd.DataFrame(sigmoid(h), index=names, columns=names)
        i, j = np.where(~np.eye(len(names), dtype=bool))
        return pd.DataFrame({
            "a": [names[x] for x in i], "b": [names[x] for x in j],
            "q": sigmoid(h[i, j]),
            "lo": sigmoid(h[i, j] - z * se_t.h[i, j]),
            "hi": sigmoid(h[i, j] + z * se_t.h[i, j]),
            "se_logit": se_t.h[i, j],
        })

    def predict(self, design: Design | None = None) -> np.ndarray:
        """Tie-adjusted slot-A probability of every *record* of ``design`` (default: own)."""
        from ..infer.derivatives import cell_probabilities

        design = design or self.design
        p = np.asarray(cell_probabilities(jnp.asarray(self.theta), design.arrays, self.layout))
        return p[design.record_cell]

    def to_dict(self, ci: str = "sandwich", *, intervals: dict | None = None) -> dict:
        """JSON-ready summary: model, sizes, objective, candidates, judges, win_prob, diagnostics.

        ``intervals``: percentile intervals from θ draws
        (:func:`oscar_jax.report.draw_sources.draw_intervals`) that replace the Wald intervals of
        scores, q against the field, κ and win probabilities.
        """
        from .fit_json import fit_payload

        return fit_payload(self, ci, intervals)
