"""The prompt bootstrap (Section 5; method §5): percentile intervals around the full-data fit.

Every resampling scheme in the package is a (B, G) matrix of prompt-cluster weights ω on
one fixed :class:`~oscar_jax.design.Design` (:mod:`oscar_jax.weights`), and all its
refits are one compiled batch (:mod:`oscar_jax.batch_fit`). :func:`bootstrap` draws
multinomial prompt counts, refits every replicate warm-started at the full-data θ̂ and
returns :class:`BootstrapResult`: percentile intervals and rank distributions around
the full-data fit.

The weight generators and the batched fit are re-exported here under their documented
``oscar_jax.resample`` names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from . import _x64  # noqa: F401
from .batch_fit import (REPLICATE_CHECKS, BatchFit, auto_chunk_size, batched_fit_core, batched_fit_core_jit,
                        fit_batch, fit_problem_batch)
from .design import Design
from .fit import fit_problem
from .intervals import percentiles
from .json_rows import json_records
from .links import net_preference, sigmoid
from .problem import prepare
from .results import FitResult
from .spec import ModelSpec
from .validate import OscarInputError, check_ci_prob, check_positive_int
from .weights import (bootstrap_indices, bootstrap_weights, fold_masks, prompt_folds, replicate_key,
                      within_fold_weights)

__all__ = [
    "BatchFit",
    "BootstrapResult",
    "REPLICATE_CHECKS",
    "auto_chunk_size",
    "batched_fit_core",
    "batched_fit_core_jit",
    "bootstrap",
    "bootstrap_indices",
    "bootstrap_weights",
    "fit_batch",
    "fold_masks",
    "prompt_folds",
    "within_fold_weights",
]


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
    def design(self) -> Design:
        return self.full.design

    def _draws(self, name: str) -> np.ndarray:
        v = self.batch.valid
        t = self.batch.targets
        if name == "s":
            return t.s[v]
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

    def _ci(self, name: str):
        return percentiles(self._draws(name), self.ci_prob)

    @cached_property
    def ranks(self) -> np.ndarray:
        """(B_valid, C) rank of each candidate in each valid replicate (1 = highest score)."""
        s = self._draws("s")
        order = np.argsort(-s, axis=1, kind="stable")
        ranks = np.empty_like(order)
        rows = np.arange(s.shape[0])[:, None]
        ranks[rows, order] = np.arange(1, s.shape[1] + 1)[None, :]
        return ranks

    def rank_distribution(self) -> pd.DataFrame:
        """P(rank = r) for every candidate and rank, P(best) and the expected rank.

        Rows follow the full-data ranking; columns ``p_rank_1`` … ``p_rank_C``.
        """
        c = self.design.n_cand
        ranks = self.ranks
        n = max(ranks.shape[0], 1)
        probs = np.stack([(ranks == r).sum(axis=0) / n for r in range(1, c + 1)], axis=1)
        if ranks.shape[0] == 0:
            probs[:] = np.nan
        frame = pd.DataFrame(probs, columns=[f"p_rank_{r}" for r in range(1, c + 1)])
        frame.insert(0, "candidate", list(self.design.candidates))
        frame["p_best"] = probs[:, 0]
        frame["expected_rank"] = probs @ np.arange(1, c + 1) if ranks.shape[0] else np.nan
        frame.insert(1, "score", self.full.scores)
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, c + 1))
        return frame.drop(columns="score")

    def leaderboard(self) -> pd.DataFrame:
        """Candidates by full-data score with percentile intervals, P(best) and rank interval."""
        s_lo, s_hi = self._ci("s")
        q_lo, q_hi = self._ci("field")
        ranks = self.ranks.astype(float)
        r_lo, r_hi = percentiles(ranks, self.ci_prob, method="inverted_cdf")  # ranks stay integers
        if np.all(np.isfinite(r_lo)) and np.all(np.isfinite(r_hi)):
            r_lo, r_hi = r_lo.astype(int), r_hi.astype(int)
        names = self.design.candidates
        p_best = (ranks == 1).mean(axis=0) if ranks.shape[0] else np.full(len(names), np.nan)
        frame = pd.DataFrame({
            "candidate": names,
            "score": self.full.scores,
            "score_lo": s_lo,
            "score_hi": s_hi,
            "q_field": sigmoid(self.full.targets.field),
            "q_field_lo": q_lo,
            "q_field_hi": q_hi,
            "p_best": p_best,
            "rank_lo": r_lo,
            "rank_hi": r_hi,
            "votes": [self.design.counts["candidate_votes"][c] for c in names],
        })
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        return frame

    def judges(self) -> pd.DataFrame:
        """Per judge: γ, κ, β_pos, D, β_len, β_fam (τ for Davidson) with percentile intervals.

        A coefficient whose column the full-data fit dropped (B.2) is NaN; a replicate that
        dropped a column the full fit kept does not contribute to that interval.
        """
        full = self.full
        p = full.params
        kept = {t: full.kept(t) for t in ("pos", "len", "fam")}
        rows = {
            "judge": list(self.design.judges),
            "n": [self.design.counts["judge_records"][j] for j in self.design.judges],
            "reference": [k == self.design.reference for k in range(self.design.n_judge)],
        }

        def add(name, point, draws_name):
            lo, hi = self._ci(draws_name)
            rows[name], rows[f"{name}_lo"], rows[f"{name}_hi"] = point, lo, hi

        add("gamma", full.gamma, "gamma")
        add("kappa", full.kappa, "kappa")
        for term in ("pos", "len", "fam"):
            point = np.where(kept[term], getattr(p, f"beta_{term}"), np.nan)
            lo, hi = self._ci(term)
            rows[f"beta_{term}"] = point
            rows[f"beta_{term}_lo"] = np.where(kept[term], lo, np.nan)
            rows[f"beta_{term}_hi"] = np.where(kept[term], hi, np.nan)
            if term == "pos":
                d_lo, d_hi = self._ci("D")
                rows["D"] = np.where(kept["pos"], net_preference(p.beta_pos), np.nan)
                rows["D_lo"] = np.where(kept["pos"], d_lo, np.nan)
                rows["D_hi"] = np.where(kept["pos"], d_hi, np.nan)
        if full.layout.structure.davidson:
            add("tau", p.tau, "tau")
        return pd.DataFrame(rows)

    def win_matrix(self) -> pd.DataFrame:
        """q_ij = σ(γ̄(s_i − s_j)) for every ordered pair with percentile intervals."""
        lo, hi = self._ci("q")
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
                  "hi": r["score_hi"], "p_best": r["p_best"], "q_field": r["q_field"],
                  "q_field_lo": r["q_field_lo"], "q_field_hi": r["q_field_hi"],
                  "rank_lo": r["rank_lo"], "rank_hi": r["rank_hi"]} for r in json_records(lb)]
        judges = []
        for r in json_records(jt):
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
            "win_prob": json_records(self.win_matrix()),
            "rank_distribution": json_records(self.rank_distribution()),
            "full_fit_checks": self.full.checks(),
            "notes": list(self.full.notes),
        }


def bootstrap(data, model: str | ModelSpec = "oscar", replicates: int = 500, seed: int = 0, *,
              ci_prob: float = 0.95, full: FitResult | None = None, chunk_size: int | None = None,
              max_iter: int = 100, reference_judge: str | None = None, family_map=None, covariates=(),
              schema: str | None = None, bothbad: str = "tie", ridge: float | None = None,
              show_progress: bool | None = None, warn: bool = True,
              vmap_width: int | None = None) -> BootstrapResult:
    """Prompt bootstrap of a fit (method §5): refit on multinomial prompt weights in compiled batches.

    Parameters
    ----------
    data
        A Design, path, DataFrame or records (as for :func:`~oscar_jax.fit`).
    model
        Model string or ModelSpec (default ``"oscar"``).
    replicates
        B, number of bootstrap replicates (500 in the paper).
    seed
        Seeds both the random second start of the full-data fit and the resampling
        (``jax.random.PRNGKey(seed)`` folded with 1); same seed, same result.
    full
        An existing full-data :class:`~oscar_jax.results.FitResult` of this design and
        model to reuse (else :func:`~oscar_jax.fit` is called with ``seed``).
    chunk_size
        Replicates per compiled call (bounded memory; default automatic).
    vmap_width
        Replicates solved side by side within a call (default: 1 on CPU, the whole chunk
        on an accelerator; see :mod:`oscar_jax.batching`). The estimates do not depend on it.

    Notes
    -----
    Every replicate is warm-started at the full-data θ̂: the solver is a damped Newton
    with the exact Hessian, so from θ̂ it converges in a few iterations to the replicate's
    own minimum (the starting point changes the cost, not the estimate). Column selection
    (B.2) and every B.3 check are redone per replicate.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from oscar_jax import simulate_design
    >>> from oscar_jax.resample import bootstrap
    >>> boot = bootstrap(simulate_design(seed=0, n_prompts=300), "j+p", replicates=20, seed=0)
    >>> boot.leaderboard().columns[:4].tolist()
    ['rank', 'candidate', 'score', 'score_lo']
    """
    ci_prob = check_ci_prob(ci_prob)
    replicates = check_positive_int("replicates", replicates, minimum=2)
    max_iter = check_positive_int("max_iter", max_iter)
    problem = prepare(data, model, ridge=ridge, schema=schema, reference_judge=reference_judge,
                      family_map=family_map, covariates=covariates, bothbad=bothbad)
    design, eff = problem.design, problem.effective_spec
    chunk = chunk_size if chunk_size is not None else min(replicates, auto_chunk_size(design, problem.layout))
    chunk = check_positive_int("chunk_size", chunk)
    if full is None:
        full = fit_problem(problem, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn)
    elif full.design is not design or full.effective_spec.structure() != eff.structure():
        raise OscarInputError("full= must be a fit of the same Design object and model as the bootstrap")
    omega = np.asarray(bootstrap_weights(replicate_key(seed, 1), design.n_clusters, replicates))
    # The batch carries the full fit's notes: they describe the data and model every replicate shares.
    batch = fit_problem_batch(problem, omega, starts=full.theta, chunk_size=chunk, max_iter=max_iter,
                              show_progress=show_progress, desc=f"{eff.name} bootstrap", vmap_width=vmap_width,
                              notes=full.notes)
    return BootstrapResult(full=full, batch=batch, seed=int(seed), ci_prob=ci_prob)
