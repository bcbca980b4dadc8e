"""BootstrapResult: percentile intervals, rank distributions and JSON around the full-data fit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ..infer.batch_fit import BatchFit
from ..infer.sandwich import targets_batch_jit
from ..model.design import Design
from ..model.links import net_preference, sigmoid
from ..model.params import Layout
from ..runtime.lazy_jax import jax
from .boards import scale_note, score_board
from .checks import Status
from .fit import FitResult
from .intervals import Draws, draw_ranks, few_draws_note, interval_request, mcse_of_mean, p_best, percentiles
from .schema import CI_LABELS, payload, rank_table, table

__all__ = ["BootstrapResult"]


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """A prompt bootstrap of one fit: percentile intervals around the full-data estimate.

    The point estimate in every table is the full-data fit (``full``), never a bootstrap
    mean or median; intervals are the (1 − ci_prob)/2 and (1 + ci_prob)/2 percentiles of
    the replicates that passed the B.3 point-estimate checks (``batch.valid``). Replicates
    that failed are counted (``failed``, ``batch.failure_counts()``), never averaged in.
    """

    full: FitResult
    batch: BatchFit
    seed: int
    ci_prob: float = 0.95

    @property
    def replicates(self) -> int:
        return self.batch.n

    @property
    def failed(self) -> int:
        return self.batch.n_failed

    @property
    def notes(self) -> tuple[str, ...]:
        """The full fit's notes, and one when too few replicates passed for percentile tails."""
        few = few_draws_note(self.replicates - self.failed, self.ci_prob, "replicates", "--replicates")
        return tuple(self.full.notes) + ((few,) if few else ())

    @property
    def design(self) -> Design:
        return self.full.design

    @property
    def layout(self) -> Layout:
        return self.full.layout

    @property
    def scores(self) -> np.ndarray:
        """(C,) the full-data fit's s (the point estimate)."""
        return self.full.scores

    # The draw protocol (oscar_jax.results.intervals.Draws): the point estimate is the
    # full-data fit; the draws are the replicates that passed B.3 (failures counted).
    @property
    def point_fit(self) -> FitResult:
        return self.full

    def theta_draws(self) -> Draws:
        """The valid replicates' θ (B_valid, P) and targets, as :class:`~oscar_jax.results.intervals.Draws`."""
        theta = np.asarray(self.batch.theta, dtype=float)
        ok = np.all(np.isfinite(theta), axis=1) & np.asarray(self.batch.valid, dtype=bool)
        return Draws(theta=theta[ok], targets=jax.tree_util.tree_map(lambda a: np.asarray(a)[ok], self.targets),
                     kind="percentile", source="bootstrap", n_failed=int((~ok).sum()))

    def status(self, ci=None) -> Status:
        """Every interval shown: percentiles of the replicates (see :mod:`oscar_jax.results.checks`)."""
        return Status.shown(self.design.n_cand, self.design.n_judge)

    @cached_property
    def targets(self):
        """Targets of every replicate, γ̄ over the full-data fit's judges (:attr:`FitResult.gbar_weights`):
        the average-judge scale is one estimand, not a set of judges chosen anew per replicate."""
        theta = np.asarray(self.batch.theta)
        return jax.tree_util.tree_map(np.asarray, targets_batch_jit(theta, self.layout, self.full.gbar_weights))

    def _draws(self, name: str) -> np.ndarray:
        v = self.batch.valid
        t = self.targets
        if name == "s":
            return t.s[v]
        if name == "x":
            return t.x[v]
        if name == "gamma":
            return np.exp(t.log_gamma[v])
        if name == "kappa":
            return np.exp(t.log_kappa[v])
        if name == "q":
            return sigmoid(t.h[v])
        if name == "field":
            return sigmoid(t.field[v])
        if name == "D":
            return net_preference(self.batch.coefficient("pos")[v])
        return self.batch.coefficient(name)[v]

    def _level(self, ci, ci_prob) -> float:
        return interval_request(ci, ci_prob, kinds=("percentile",), default_prob=self.ci_prob)[1]

    def _ci(self, name: str, prob: float):
        return percentiles(self._draws(name), prob)

    @cached_property
    def ranks(self) -> np.ndarray:
        """(B_valid, C) rank of each candidate in each valid replicate (1 = highest score)."""
        return draw_ranks(self._draws("s"))

    def rank_distribution(self) -> pd.DataFrame:
        """P(rank = r) for every candidate and rank with Monte Carlo SEs, and the expected rank.

        Rows follow the full-data ranking; columns ``p_rank_1`` … ``p_rank_C``, each with
        its ``_mcse`` (√(p(1 − p)/B): replicates are independent).
        """
        return rank_table(self.design.candidates, self.ranks, self.full.scores, independent=True)

    def leaderboard(self, ci: str | None = None, *, ci_prob: float | None = None, scale: str = "logit",
                    anchor=None) -> pd.DataFrame:
        """Candidates by full-data score with percentile intervals, P(best) and rank interval.

        ``score`` is the average-judge logit x = γ̄·s, as in :meth:`FitResult.leaderboard`,
        or on ``scale`` relative to ``anchor`` (:mod:`oscar_jax.results.boards`); the raw
        s is ``s``, ``s_lo``, ``s_hi``. ``ci``: ``"percentile"`` (the only kind);
        ``ci_prob``: the level (default the result's).
        """
        prob = self._level(ci, ci_prob)
        board = score_board(self, ci_prob=prob, scale=scale, anchor=anchor)
        s_lo, s_hi = self._ci("s", prob)
        q_lo, q_hi = self._ci("field", prob)
        ranks = self.ranks.astype(float)
        r_lo, r_hi = percentiles(ranks, prob, method="inverted_cdf")  # ranks stay integers
        if np.all(np.isfinite(r_lo)) and np.all(np.isfinite(r_hi)):
            r_lo, r_hi = r_lo.astype(int), r_hi.astype(int)
        frame = table("candidates", {
            **{c: board[c].to_numpy() for c in board.columns}, "s": self.full.scores, "s_lo": s_lo, "s_hi": s_hi,
            "q_field": sigmoid(self.full.targets.field), "q_field_lo": q_lo, "q_field_hi": q_hi,
            "p_best": p_best(ranks), "p_best_mcse": mcse_of_mean((self.ranks == 1)[None], independent=True),
            "rank_lo": r_lo, "rank_hi": r_hi,
            "votes": [self.design.counts["candidate_votes"][c] for c in self.design.candidates],
            "interval": [x or "ok" for x in self.status().candidates]}, sort=True)
        frame.attrs = board.attrs
        return frame

    def summary(self, scale: str = "logit", anchor=None):
        """The tables ``oscar bootstrap`` prints (percentile leaderboard on ``scale`` with P(best)
        and rank intervals, judges, rank distribution); ``print(boot.summary())`` shows them."""
        from ..report.text import Summary, bootstrap_report

        return Summary(bootstrap_report(self, scale=scale, anchor=anchor))

    def judges(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """Per judge: γ, κ, β_pos, D, β_len, β_fam (τ for Davidson) with percentile intervals.

        A coefficient whose column the full-data fit dropped (B.2) is NaN; a replicate that
        dropped a column the full fit kept does not contribute to that interval.
        """
        prob = self._level(ci, ci_prob)
        full = self.full
        p = full.params
        kept = {t: full.kept(t) for t in ("pos", "len", "fam")}
        rows = {
            "judge": list(self.design.judges),
            "n": [self.design.counts["judge_records"][j] for j in self.design.judges],
            "reference": [k == self.design.reference for k in range(self.design.n_judge)],
        }

        def add(name, point, draws_name, keep=None):
            lo, hi = self._ci(draws_name, prob)
            if keep is not None:
                point, lo, hi = (np.where(keep, v, np.nan) for v in (point, lo, hi))
            rows.update({name: point, f"{name}_lo": lo, f"{name}_hi": hi})

        add("gamma", full.gamma, "gamma")
        add("kappa", full.kappa, "kappa")
        for term in ("pos", "len", "fam"):
            add(f"beta_{term}", getattr(p, f"beta_{term}"), term, kept[term])
        add("D", net_preference(p.beta_pos), "D", kept["pos"])
        if full.layout.structure.davidson:
            add("tau", p.tau, "tau")
        return table("judges", rows)

    def win_matrix(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """q_ij = σ(γ̄(s_i − s_j)) for every ordered pair with percentile intervals."""
        lo, hi = self._ci("q", self._level(ci, ci_prob))
        q = self.full.win_prob
        names = self.design.candidates
        i, j = np.where(~np.eye(len(names), dtype=bool))
        return table("pairs", {"a": [names[x] for x in i], "b": [names[x] for x in j],
                               "q": q[i, j], "q_lo": lo[i, j], "q_hi": hi[i, j]})

    def to_dict(self, ci: str | None = None, *, ci_prob: float | None = None, scale: str = "logit",
                anchor=None) -> dict:
        """JSON-ready (:func:`oscar_jax.results.schema.payload`): replicates, failures, ``scale``,
        ``candidates``, ``judges``, ``win_prob``, ``rank_distribution``, the full fit's ``checks``, ``notes``."""
        prob = self._level(ci, ci_prob)
        lb = self.leaderboard(ci_prob=prob, scale=scale, anchor=anchor)
        eff = self.full.effective_spec
        valid = self.replicates - self.failed
        header = {"model": self.full.spec.name, "fitted_model": eff.name, "estimator": "prompt-bootstrap",
                  "estimand": {"model": f"{eff.name}, penalized maximum likelihood (ridge {eff.ridge:g})",
                               "point": "the full-data fit",
                               "intervals": f"{CI_LABELS['bootstrap']}: {valid} valid of {self.replicates} replicates "
                                            "(multinomial prompt weights)",
                               "probabilities": "p_best, p_rank_r: shares of the valid replicates, ranked by s",
                               "mcse": "√(p(1 − p)/B): the replicates are independent"},
                  "n_records": int(self.design.n_records), "n_prompts": int(self.design.n_clusters),
                  "reference_judge": self.design.judges[self.design.reference], "replicates": self.replicates,
                  "failed": self.failed, "valid": valid, "failures": self.batch.failure_counts(), "seed": self.seed,
                  "ci": "percentile", "ci_prob": prob}
        return payload(header=header, scale=scale_note(lb.attrs), leaderboard=lb, judges=self.judges(ci_prob=prob),
                       win=self.win_matrix(ci_prob=prob), status=self.status(), design=self.design,
                       checks=self.full.checks(), notes=self.notes,
                       sections={"rank_distribution": self.rank_distribution()})

