"""BootstrapResult: percentile intervals, rank distributions and JSON around the full-data fit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ..infer.batch_fit import BatchFit
from ..model.design import Design
from .intervals import draw_ranks, interval_request, p_best, percentiles, rank_probabilities
from .jsonable import records
from ..model.links import net_preference, sigmoid
from .fit import FitResult

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
    batch: "BatchFit"  # oscar_jax.bootstrap.BatchFit (not imported: resample builds this class)
    seed: int
    ci_prob: float = 0.95

    @property
    def replicates(self) -> int:
        return self.batch.n

    @property
    def failed(self) -> int:
        return self.batch.n_failed

    @property
    def design(self) -> Design:
        return self.full.design

    def _draws(self, name: str) -> np.ndarray:
        v = self.batch.valid
        t = self.batch.targets
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
        """P(rank = r) for every candidate and rank, P(best) and the expected rank.

        Rows follow the full-data ranking; columns ``p_rank_1`` … ``p_rank_C``.
        """
        c = self.design.n_cand
        ranks = self.ranks
        probs = rank_probabilities(ranks)
        frame = pd.DataFrame(probs, columns=[f"p_rank_{r}" for r in range(1, c + 1)])
        frame.insert(0, "candidate", list(self.design.candidates))
        frame["p_best"] = probs[:, 0]
        frame["expected_rank"] = probs @ np.arange(1, c + 1) if ranks.shape[0] else np.nan
        frame.insert(1, "score", self.full.scores)
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, c + 1))
        return frame.drop(columns="score")

    def leaderboard(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """Candidates by full-data score with percentile intervals, P(best) and rank interval.

        ``score`` is the average-judge logit x = γ̄·s, as in :meth:`FitResult.leaderboard`;
        the raw s is ``s``, ``s_lo``, ``s_hi``. ``ci``: ``"percentile"`` (the only kind);
        ``ci_prob``: the level (default the result's).
        """
        prob = self._level(ci, ci_prob)
        x_lo, x_hi = self._ci("x", prob)
        s_lo, s_hi = self._ci("s", prob)
        q_lo, q_hi = self._ci("field", prob)
        ranks = self.ranks.astype(float)
        r_lo, r_hi = percentiles(ranks, prob, method="inverted_cdf")  # ranks stay integers
        if np.all(np.isfinite(r_lo)) and np.all(np.isfinite(r_hi)):
            r_lo, r_hi = r_lo.astype(int), r_hi.astype(int)
        names = self.design.candidates
        frame = pd.DataFrame({
            "candidate": names,
            "score": self.full.targets.x,
            "score_lo": x_lo,
            "score_hi": x_hi,
            "s": self.full.scores,
            "s_lo": s_lo,
            "s_hi": s_hi,
            "q_field": sigmoid(self.full.targets.field),
            "q_field_lo": q_lo,
            "q_field_hi": q_hi,
            "p_best": p_best(ranks),
            "rank_lo": r_lo,
            "rank_hi": r_hi,
            "votes": [self.design.counts["candidate_votes"][c] for c in names],
        })
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        return frame

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

        def add(name, point, draws_name):
            lo, hi = self._ci(draws_name, prob)
            rows[name], rows[f"{name}_lo"], rows[f"{name}_hi"] = point, lo, hi

        add("gamma", full.gamma, "gamma")
        add("kappa", full.kappa, "kappa")
        for term in ("pos", "len", "fam"):
            point = np.where(kept[term], getattr(p, f"beta_{term}"), np.nan)
            lo, hi = self._ci(term, prob)
            rows[f"beta_{term}"] = point
            rows[f"beta_{term}_lo"] = np.where(kept[term], lo, np.nan)
            rows[f"beta_{term}_hi"] = np.where(kept[term], hi, np.nan)
            if term == "pos":
                d_lo, d_hi = self._ci("D", prob)
                rows["D"] = np.where(kept["pos"], net_preference(p.beta_pos), np.nan)
                rows["D_lo"] = np.where(kept["pos"], d_lo, np.nan)
                rows["D_hi"] = np.where(kept["pos"], d_hi, np.nan)
        if full.layout.structure.davidson:
            add("tau", p.tau, "tau")
        return pd.DataFrame(rows)

    def win_matrix(self, ci: str | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """q_ij = σ(γ̄(s_i − s_j)) for every ordered pair with percentile intervals."""
        lo, hi = self._ci("q", self._level(ci, ci_prob))
        q = self.full.win_prob
        names = self.design.candidates
        i, j = np.where(~np.eye(len(names), dtype=bool))
        return pd.DataFrame({"a": [names[x] for x in i], "b": [names[x] for x in j],
                             "q": q[i, j], "lo": lo[i, j], "hi": hi[i, j]})

    def to_dict(self) -> dict:
        """JSON-ready: replicates, failed, candidates, judges, win_prob, failures, notes."""
        lb = self.leaderboard()
        jt = self.judges()
        cands = [{"name": r["candidate"], "rank": r["rank"], "score": r["score"], "lo": r["score_lo"],
                  "hi": r["score_hi"], "s": r["s"], "s_lo": r["s_lo"], "s_hi": r["s_hi"],
                  "p_best": r["p_best"], "q_field": r["q_field"],
                  "q_field_lo": r["q_field_lo"], "q_field_hi": r["q_field_hi"],
                  "rank_lo": r["rank_lo"], "rank_hi": r["rank_hi"]} for r in records(lb)]
        judges = []
        for r in records(jt):
            row = {"name": r["judge"], "reference": r["reference"], "n": r["n"], "kappa": r["kappa"],
                   "lo": r["kappa_lo"], "hi": r["kappa_hi"], "D": r["D"], "D_lo": r["D_lo"], "D_hi": r["D_hi"],
                   "gamma": r["gamma"], "gamma_lo": r["gamma_lo"], "gamma_hi": r["gamma_hi"]}
            for term in ("pos", "len", "fam"):
                for suffix in ("", "_lo", "_hi"):
                    row[f"beta_{term}{suffix}"] = r[f"beta_{term}{suffix}"]
            if "tau" in r:
                row.update(tau=r["tau"], tau_lo=r["tau_lo"], tau_hi=r["tau_hi"])
            judges.append(row)
        return {
            "model": self.full.spec.name,
            "fitted_model": self.full.effective_spec.name,
            "method": "prompt bootstrap (multinomial prompt weights), percentile intervals",
            "replicates": self.replicates,
            "failed": self.failed,
            "valid": self.replicates - self.failed,
            "failures": self.batch.failure_counts(),
            "seed": self.seed,
            "ci_prob": self.ci_prob,
            "n_records": int(self.design.n_records),
            "n_prompts": int(self.design.n_clusters),
            "reference_judge": self.design.judges[self.design.reference],
            "candidates": cands,
            "judges": judges,
            "win_prob": records(self.win_matrix()),
            "rank_distribution": records(self.rank_distribution()),
            "full_fit_checks": self.full.checks(),
            "notes": list(self.full.notes),
        }
