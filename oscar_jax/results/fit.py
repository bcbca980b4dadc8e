"""FitResult: estimates, intervals, checks and tidy tables of one penalized fit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from statistics import NormalDist

from ..infer.fit_core import FitCore
from ..model.design import Design
from ..model.params import Layout, Params
from ..infer.plain_bt import bt_covariances
from ..infer.sandwich import Covariances, covariances_program, host_target_se, host_targets, meat_blocks
from ..model.links import net_preference, sigmoid
from ..model.spec import ModelSpec
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import check_choice
from .boards import as_draws, memo_board, score_board, scale_note
from .intervals import draw_interval, interval_request
from .schema import CI_LABELS, payload, table
from .checks import Status, failed_checks, fit_checks, fit_status, identification_check

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
            dict(layout=layout, n_clusters=design.n_clusters, ridge=ridge,
                 blocks=meat_blocks(design.arrays.pair_g, design.n_clusters)))


def prepare_report_programs(design: Design, layout: Layout, ridge) -> None:
    """Compile ahead (:func:`~oscar_jax.runtime.batching.compile_ahead`) the program that
    :class:`FitResult` reports with on a fit of this shape, the covariances, with the
    argument types :attr:`FitResult.cov` passes. (The targets and their delta-method SEs
    are dim-θ arithmetic, done in host numpy: :func:`~oscar_jax.infer.sandwich.host_targets`.)"""
    vec, mat = (jax.ShapeDtypeStruct(shape, np.float64) for shape in ((layout.n_theta,), (layout.n_theta,) * 2))
    omega = jax.ShapeDtypeStruct((design.n_clusters,), np.float64)
    program, args, kw = _covariances_call(design, layout, ridge, vec, vec, mat, mat, omega)
    program.prepare(*args, **kw)


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
        c = self.core
        if not bool(c.curvature_ok):
            return None
        if self.layout.structure.plain_bt:  # its meat is residuals by (prompt, candidate): host numpy
            return bt_covariances(c, self.design.arrays, self.layout, self.effective_spec.ridge, self.design.n_clusters)
        # Host arrays as they are (jnp.asarray would compile a copy program per shape in every process).
        program, args, kw = _covariances_call(self.design, self.layout, self.effective_spec.ridge, c.theta, c.mask,
                                              c.hess, c.info, np.ones(self.design.n_clusters))
        cov = program(*args, **kw)
        return jax.tree_util.tree_map(np.asarray, cov)

    def __repr__(self) -> str:
        from ..report.text import fit_repr

        return fit_repr(self)

    def _repr_html_(self) -> str:
        from ..report.text import fit_repr_html

        return fit_repr_html(self)

    def summary(self, ci: str = "sandwich"):
        """The tables ``oscar fit`` prints (header and checks, leaderboard, judges, win
        probabilities with ``ci`` intervals); ``print(result.summary())`` shows them."""
        from ..report.text import Summary, fit_report

        return Summary(fit_report(self, check_choice("ci", ci, _CI_KINDS)))

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
        return host_targets(self.theta, self.layout, self.gbar_weights)

    @cached_property
    def gbar_weights(self) -> np.ndarray:
        """(K,) the judges γ̄ averages: 1 where the data determine γ, 0 where the ridge does
        (:func:`~oscar_jax.infer.identification.average_judge_weights`)."""
        from ..infer.identification import average_judge_weights

        return average_judge_weights(self.identification, self.design.n_judge)

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
            se_t = host_target_se(theta, cov, self.layout, self.gbar_weights)
            se_theta = np.sqrt(np.maximum(np.diag(np.asarray(cov)), 0.0))
            cache[kind] = (se_t, se_theta)
        return cache[kind]

    @property
    def z(self) -> float:
        return _z(self.ci_prob)

    def target_se(self, ci: str = "sandwich"):
        """Delta-method SEs of the :attr:`targets` (a :class:`~oscar_jax.infer.sandwich.Targets` of SEs)."""
        return self._se(check_choice("ci", ci, _CI_KINDS))[0]

    def _level(self, ci, ci_prob) -> tuple[str, float]:
        return interval_request(ci, ci_prob, kinds=_CI_KINDS, default_prob=self.ci_prob)

    # The draw protocol (oscar_jax.results.intervals.Draws): a fit is its own estimate, with no draws.
    @property
    def point_fit(self) -> FitResult:
        return self

    def theta_draws(self):
        return None

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

    def status(self, ci: str = "sandwich") -> Status:
        """How each ``ci`` interval may be shown (:func:`~oscar_jax.results.status.fit_status`), computed once."""
        ci = check_choice("ci", ci, _CI_KINDS)
        cache = self.__dict__.setdefault("_status_cache", {})
        if ci not in cache:
            cache[ci] = fit_status(self, ci)
        return cache[ci]

    def flags(self, ci: str = "sandwich") -> tuple[list[list[str]], list[list[str]]]:
        """(candidate flags, judge flags): the identification flags plus "zero variance"
        where the interval of a free quantity has zero width for lack of residual variation."""
        st = self.status(ci)
        return [list(f) for f in st.candidate_flags], [list(f) for f in st.judge_flags]

    def identification_check(self, ci: str = "sandwich") -> dict:
        """A B.3-style check: ok only when no candidate or judge is flagged."""
        return identification_check(self, ci)

    # ---------------------------------------------------------------- checks
    def checks(self) -> dict:
        """Appendix B.3 checks, as plain Python values."""
        return fit_checks(self)

    def failed_checks(self) -> list[str]:
        """One sentence per failed B.3 check."""
        return failed_checks(self.checks())

    # ---------------------------------------------------------------- tables
    def leaderboard(self, ci: str | None = None, *, ci_prob: float | None = None, scale: str = "logit", anchor=None,
                    draws=None) -> pd.DataFrame:
        """Candidates by score: rank, score with CI, win probability against the field with CI.

        ``score`` is the average-judge logit x_i = γ̄ s_i (so σ(x_i − x_j) = q_ij), the
        same whichever judge is the reference, or on ``scale`` (``"elo"``, ``"winrate"``)
        relative to ``anchor`` (``"NAME"``, ``"NAME=VALUE"``; the baseline of
        ``winrate``): :mod:`oscar_jax.results.boards`. The raw parameter s
        (reference-judge scale, :attr:`scores`) and its interval are ``s``, ``s_lo``,
        ``s_hi``; for γ ≡ 1 models x = s. ``ci``: ``"sandwich"`` (default) or
        ``"model"``; ``ci_prob``: the level (default the fit's); ``draws``: a bootstrap or
        posterior result (or (B, P) θ draws) whose percentiles replace the Wald intervals
        of score, s and q_field. ``q_field`` is the mean over the other candidates of q_ij,
        the probability that a judge of average sensitivity prefers this candidate to a
        random other one. ``interval`` says why a flagged candidate's intervals are not to
        be read (``flags``; the JSON shows them as null).
        """
        ci, prob = self._level(ci, ci_prob)
        if draws is not None:
            return self._leaderboard(ci, prob, scale, anchor, as_draws(draws, self.layout, "bootstrap", self.gbar_weights))
        return memo_board(self, (ci, prob, scale, anchor), lambda: self._leaderboard(ci, prob, scale, anchor, None))

    def _leaderboard(self, ci: str, prob: float, scale: str, anchor, draws) -> pd.DataFrame:
        board = score_board(self, ci=ci, ci_prob=prob, scale=scale, anchor=anchor, draws=draws)
        t = self.targets
        if draws is None:
            z, se_t = _z(prob), self.target_se(ci)
            s_ci = (t.s - z * se_t.s, t.s + z * se_t.s)
            f_ci = (sigmoid(t.field - z * se_t.field), sigmoid(t.field + z * se_t.field))
        else:
            s_ci = draw_interval(draws.targets.s, prob, draws.kind)
            f_ci = draw_interval(sigmoid(draws.targets.field), prob, draws.kind)
        status = self.status(ci)
        frame = table("candidates", {
            **{c: board[c].to_numpy() for c in board.columns}, "s": t.s, "s_lo": s_ci[0], "s_hi": s_ci[1],
            "q_field": sigmoid(t.field), "q_field_lo": f_ci[0], "q_field_hi": f_ci[1],
            "votes": [self.design.counts["candidate_votes"][c] for c in self.design.candidates],
            "contraction": self.identification.candidate_contraction,
            "flags": [",".join(f) for f in status.candidate_flags],
            "interval": [x or "ok" for x in status.candidates]}, sort=True)
        frame.attrs = board.attrs
        return frame

    def judges(self, ci: str | None = None, *, ci_prob: float | None = None, draws=None) -> pd.DataFrame:
        """Per judge: n, γ, κ, β_pos, D, β_len, β_fam, covariate coefficients (each with its CI), kept columns.

        A coefficient the model does not have, or that column selection (B.2) fixed at 0,
        is NaN. ``draws`` (as for :meth:`leaderboard`) give κ's interval; the others stay Wald.
        """
        ci, prob = self._level(ci, ci_prob)
        z = _z(prob)
        se_t, _ = self._se(ci)
        p, t = self.params, self.targets
        kept = {term: self.kept(term) for term in ("pos", "len", "fam", "cov")}
        k_ci = (_exp(t.log_kappa - z * se_t.log_kappa), _exp(t.log_kappa + z * se_t.log_kappa))
        if draws is not None:
            draws = as_draws(draws, self.layout, "bootstrap", self.gbar_weights)
            k_ci = draw_interval(np.exp(draws.targets.log_kappa), prob, draws.kind)
        rows = {
            "judge": list(self.design.judges),
            "n": [self.design.counts["judge_records"][j] for j in self.design.judges],
            "reference": [k == self.design.reference for k in range(self.design.n_judge)],
            "gamma": p.gamma,
            "gamma_lo": _exp(t.log_gamma - z * se_t.log_gamma),
            "gamma_hi": _exp(t.log_gamma + z * se_t.log_gamma),
            "kappa": np.exp(t.log_kappa), "kappa_lo": k_ci[0], "kappa_hi": k_ci[1],
        }
        for term in ("pos", "len", "fam"):
            est = np.where(kept[term], getattr(p, f"beta_{term}"), np.nan)
            se = self.bias_se(ci, term)
            rows.update({f"beta_{term}": est, f"beta_{term}_lo": est - z * se, f"beta_{term}_hi": est + z * se})
        se_pos = self.bias_se(ci, "pos")
        rows.update({"D": np.where(kept["pos"], net_preference(p.beta_pos), np.nan),
                     "D_lo": np.where(kept["pos"], net_preference(p.beta_pos - z * se_pos), np.nan),
                     "D_hi": np.where(kept["pos"], net_preference(p.beta_pos + z * se_pos), np.nan)})
        if self.layout.structure.davidson:
            rows["tau"] = p.tau
        if "cov" in self.layout.theta_blocks:
            mask = np.asarray(self.core.mask)[self.layout.theta_blocks["cov"]].reshape(self.design.n_judge, -1) > 0
            se_c = self.bias_se(ci, "cov")
            for j, name in enumerate(self.design.covariates):
                est = np.where(mask[:, j], p.beta_cov[:, j], np.nan)
                rows.update({f"beta_{name}": est, f"beta_{name}_lo": np.where(mask[:, j], est - z * se_c[:, j], np.nan),
                             f"beta_{name}_hi": np.where(mask[:, j], est + z * se_c[:, j], np.nan)})
        rows["columns"] = [",".join(tm for tm in ("pos", "len", "fam", "cov") if kept[tm][k]) or "-"
                           for k in range(self.design.n_judge)]
        for term, values in self.identification.judge_contraction.items():
            rows[f"contraction_{term}"] = values
        rows["flags"] = [",".join(f) for f in self.status(ci).judge_flags]
        return table("judges", rows)

    def win_matrix(self, ci: str | None = None, long: bool = True, wide: bool = False, *,
                   ci_prob: float | None = None, draws=None) -> pd.DataFrame:
        """q_ij with delta-method intervals σ(ĥ ± z·se) (Eq. 10), for every ordered pair.

        ``wide=True``: the C×C matrix P(row beats column), rows and columns ordered by
        score (best first), diagonal NaN. ``long=False``: the same matrix in data order,
        diagonal ½. ``draws`` (as for :meth:`leaderboard`): percentile intervals instead.
        """
        if wide:
            order = np.argsort(-self.scores, kind="mergesort")
            names = [self.design.candidates[i] for i in order]
            q = self.win_prob[np.ix_(order, order)].copy()
            np.fill_diagonal(q, np.nan)
            return pd.DataFrame(q, index=pd.Index(names, name="row beats column"), columns=names)
        ci, prob = self._level(ci, ci_prob)
        h = self.targets.h
        names = self.design.candidates
        if not long:
            return pd.DataFrame(sigmoid(h), index=names, columns=names)
        i, j = np.where(~np.eye(len(names), dtype=bool))
        if draws is None:
            z, se = _z(prob), self.target_se(ci).h[i, j]
            lo, hi = sigmoid(h[i, j] - z * se), sigmoid(h[i, j] + z * se)
        else:
            draws = as_draws(draws, self.layout, "bootstrap", self.gbar_weights)
            lo, hi = (b[i, j] for b in draw_interval(sigmoid(draws.targets.h), prob, draws.kind))
            se = np.full(len(i), np.nan)
        return table("pairs", {"a": [names[x] for x in i], "b": [names[x] for x in j], "q": sigmoid(h[i, j]),
                               "q_lo": lo, "q_hi": hi, "se_logit": se})

    def predict(self, design: Design | None = None) -> np.ndarray:
        """Tie-adjusted slot-A probability of every *record* of ``design`` (default: own)."""
        from ..infer.derivatives import cell_probabilities

        design = design or self.design
        p = np.asarray(cell_probabilities(jnp.asarray(self.theta), design.arrays, self.layout))
        return p[design.record_cell]

    def to_dict(self, ci: str | None = None, *, ci_prob: float | None = None, scale: str = "logit", anchor=None,
                draws=None) -> dict:
        """JSON-ready summary (:func:`oscar_jax.results.schema.payload`): model, sizes, objective,
        ``scale``, ``candidates``, ``judges``, ``win_prob``, ``checks``, ``notes``.

        Arguments as for :meth:`leaderboard`; with ``draws`` the score, s, q_field, κ and q
        intervals are their percentiles (the root ``ci`` names the draws' source).
        """
        ci, prob = self._level(ci, ci_prob)
        draws = None if draws is None else as_draws(draws, self.layout, "bootstrap", self.gbar_weights)
        lb = self.leaderboard(ci, ci_prob=prob, scale=scale, anchor=anchor, draws=draws)
        status = self.status(ci) if draws is None else self.status(ci).under_draws()
        eff = self.effective_spec
        source = ci if draws is None else draws.source
        header = {"model": self.spec.name, "fitted_model": eff.name, "estimator": "penalized-ml",
                  "estimand": {"model": f"{eff.name}, penalized maximum likelihood (ridge {eff.ridge:g})",
                               "point": "the full-data fit", "intervals": CI_LABELS[source]},
                  "n_records": int(self.design.n_records), "n_prompts": int(self.design.n_clusters),
                  "n_cells": int(self.design.n_cells), "reference_judge": self.design.judges[self.design.reference],
                  "objective": self.objective, "ridge": eff.ridge, "gamma_bar": self.gamma_bar,
                  "ci": source, "ci_prob": prob}
        return payload(header=header, scale=scale_note(lb.attrs), leaderboard=lb,
                       judges=self.judges(ci, ci_prob=prob, draws=draws),
                       win=self.win_matrix(ci, ci_prob=prob, draws=draws), status=status, design=self.design,
                       checks={**self.checks(), "flags": self.identification_check(ci)}, notes=self.notes)
