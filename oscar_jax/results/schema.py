"""The one schema of every result's tables and JSON: one name per quantity, one status per interval.

:class:`~oscar_jax.results.fit.FitResult`, :class:`~oscar_jax.results.bootstrap.BootstrapResult`
and :class:`~oscar_jax.bayes.BayesResult` build their ``leaderboard()``, ``judges()``,
``win_matrix()`` and ``rank_distribution()`` tables through :func:`table` and their
``to_dict()`` through :func:`payload`, so a quantity has the same column in every table,
the same key in every JSON (a JSON row is the table row) and no second name. An interval
is ``<quantity>_lo`` / ``<quantity>_hi``; a posterior sd ``<quantity>_sd``; the Monte
Carlo standard error of a probability ``<quantity>_mcse``.

A result's :class:`~oscar_jax.results.checks.Status` says, per quantity, whether its
interval may be shown as a number or is withheld and why ("unbounded", "not
estimable"); each result computes it once (``result.status(ci)``) and :func:`payload`
nulls what it withholds.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..infer.sandwich import INDEPENDENCE_NOTE
from .intervals import mcse_of_mean, rank_probabilities
from .jsonable import records

__all__ = ["CANDIDATE_COLUMNS", "CI_LABELS", "JUDGE_COLUMNS", "JUDGE_PAIR_COLUMNS", "PAIR_COLUMNS", "RANK_COLUMNS",
           "is_column", "payload", "rank_table", "table"]

# name → meaning; the order is the tables' column order. Names with "<…>" are families.
CANDIDATE_COLUMNS = {
    "rank": "1 = highest score",
    "candidate": "the candidate, as written in the data",
    "score": "the score on the board's scale (default: average-judge logit x = γ̄·s); see the JSON 'scale'",
    "score_sd": "posterior sd of the score",
    "score_lo": "lower end of the score's interval",
    "score_hi": "upper end of the score's interval",
    "se_logit": "delta-method SE of the score's logit contrast (Wald intervals only)",
    "rank_ub": "Rank (UB): 1 + the number of candidates whose lower bound exceeds this one's upper bound",
    "s": "per-candidate parameter s on the reference judge's scale (changes with the reference judge)",
    "s_sd": "posterior sd of s",
    "s_lo": "lower end of the interval of s",
    "s_hi": "upper end of the interval of s",
    "q_field": "win probability against the field: mean over the other candidates of q_ij",
    "q_field_lo": "lower end of the interval of q_field",
    "q_field_hi": "upper end of the interval of q_field",
    "p_best": "probability of rank 1: share of the draws (replicates) in which the candidate ranks first",
    "p_best_mcse": "Monte Carlo standard error of p_best",
    "rank_lo": "lower end of the percentile interval of the rank",
    "rank_hi": "upper end of the percentile interval of the rank",
    "expected_rank": "mean rank over the draws",
    "votes": "records in which the candidate appears",
    "contraction": "1 − posterior/prior variance of the score under the ridge read as a prior (1: set by the data)",
    "flags": "identification flags (oscar_jax.infer.identification)",
    "interval": "'ok', or why the intervals are withheld ('unbounded', 'not estimable')",
}
JUDGE_COLUMNS = {
    "judge": "the judge, as written in the data",
    "n": "records of the judge",
    "reference": "the reference judge (γ = 1)",
    "gamma": "sensitivity γ_k relative to the reference judge",
    "gamma_lo": "", "gamma_hi": "",
    "kappa": "κ_k = γ_k·RMS(s): sensitivity on a scale-invariant footing",
    "kappa_sd": "posterior sd of κ",
    "kappa_lo": "", "kappa_hi": "",
    "beta_pos": "position coefficient β_pos (logit of the first slot's advantage)",
    "beta_pos_lo": "", "beta_pos_hi": "",
    "D": "D = tanh(β_pos/2): net first-slot preference",
    "D_sd": "posterior sd of D",
    "D_lo": "", "D_hi": "",
    "beta_len": "length coefficient β_len", "beta_len_lo": "", "beta_len_hi": "",
    "beta_fam": "own-family coefficient β_fam", "beta_fam_lo": "", "beta_fam_hi": "",
    "tau": "Davidson tie parameter τ", "tau_lo": "", "tau_hi": "",
    "beta_<covariate>": "coefficient of a covariate column (with _lo, _hi)",
    "columns": "bias terms estimated for the judge (column selection B.2)",
    "contraction_<term>": "contraction of the judge's coefficient of <term> (see the candidates' contraction)",
    "flags": "identification flags",
}
PAIR_COLUMNS = {
    "a": "row candidate", "b": "column candidate",
    "q": "q_ab = σ(γ̄ (s_a − s_b)): P(a beats b) for a judge of average sensitivity, biases at zero",
    "q_sd": "posterior sd of q", "q_mcse": "Monte Carlo standard error of q",
    "q_lo": "", "q_hi": "",
    "se_logit": "delta-method SE of logit q (Wald intervals only)",
    "p_a_better": "P(s_a > s_b): share of the draws in which a has the higher s",
    "p_a_better_mcse": "Monte Carlo standard error of p_a_better",
}
RANK_COLUMNS = {  # P(best) is p_rank_1 here (the candidates' p_best)
    "rank": CANDIDATE_COLUMNS["rank"], "candidate": CANDIDATE_COLUMNS["candidate"],
    "p_rank_<r>": "P(rank = r)", "p_rank_<r>_mcse": "Monte Carlo standard error of P(rank = r)",
    "expected_rank": CANDIDATE_COLUMNS["expected_rank"],
}
JUDGE_PAIR_COLUMNS = {"judge_a": "row judge", "judge_b": "column judge",
                      "p_kappa_greater": "P(κ_a > κ_b) = P(γ_a > γ_b): share of the posterior draws",
                      "p_kappa_greater_mcse": "Monte Carlo standard error of p_kappa_greater"}
_KINDS = {"candidates": CANDIDATE_COLUMNS, "judges": JUDGE_COLUMNS, "pairs": PAIR_COLUMNS, "ranks": RANK_COLUMNS,
          "judge_pairs": JUDGE_PAIR_COLUMNS}
_FAMILY = {"<covariate>": r"[^\s]+?", "<term>": r"[a-z]+", "<r>": r"\d+"}

# Where a table's intervals come from (the estimand's "intervals"; text and HTML titles).
CI_LABELS = {"sandwich": "prompt-cluster sandwich", "model": f"model-based: {INDEPENDENCE_NOTE}",
             "bootstrap": "prompt bootstrap, percentile", "bayes": "posterior, equal-tailed",
             "hdi": "posterior, highest density"}


def is_column(kind: str, name: str) -> bool:
    """Whether ``name`` is a registered column of ``kind`` (``"candidates"``, ``"judges"``, ``"pairs"``, …)."""
    try:
        _position(kind, name)
    except KeyError:
        return False
    return True


def _position(kind: str, name: str) -> int:
    """The registry position of a column name (a family member takes its family's); KeyError if unknown."""
    names = list(_KINDS[kind])
    if name in _KINDS[kind]:
        return names.index(name)
    for k, pattern in enumerate(names):
        if "<" in pattern:
            regex = re.escape(pattern)
            for token, part in _FAMILY.items():
                regex = regex.replace(re.escape(token), part)
            if re.fullmatch(regex, name):
                return k
    raise KeyError(f"{name!r} is not a {kind} column of oscar_jax.results.schema")


def table(kind: str, columns: dict, *, sort: bool = False) -> pd.DataFrame:
    """A result table from named columns, in the schema's order; every name must be registered.

    ``sort``: candidates best first (by ``score``, ties in data order) with ``rank`` 1…C.
    """
    order = sorted(columns, key=lambda n: (_position(kind, n), list(columns).index(n)))
    frame = pd.DataFrame({n: columns[n] for n in order if n != "rank"})
    if sort:
        frame = frame.sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    elif "rank" in columns:
        frame.insert(0, "rank", columns["rank"])
    return frame


def rank_table(names, ranks: np.ndarray, order_by: np.ndarray, *, independent: bool, shape=None) -> pd.DataFrame:
    """The rank distribution of (n_draws, C) ``ranks``: P(rank = r) with Monte Carlo SEs and E[rank].

    Rows sorted by ``order_by`` (best first). ``shape`` (chains, draws) restores the chain
    structure for the SEs of Markov chain draws.
    """
    c = len(names)
    probs = rank_probabilities(ranks)
    chains = ranks.reshape(shape + (c,)) if shape is not None else ranks[None]
    cols = {"candidate": list(names), "score": np.asarray(order_by)}
    for r in range(1, c + 1):
        cols[f"p_rank_{r}"] = probs[:, r - 1]
        cols[f"p_rank_{r}_mcse"] = mcse_of_mean((chains == r).astype(float), independent=independent)
    cols["expected_rank"] = probs @ np.arange(1, c + 1) if ranks.shape[0] else np.full(c, np.nan)
    frame = pd.DataFrame(cols).sort_values("score", ascending=False, kind="mergesort").reset_index(drop=True)
    return table("ranks", {"rank": np.arange(1, c + 1), **{k: frame[k].to_numpy() for k in frame if k != "score"}})


_WITHHELD = {"candidates": ("score_lo", "score_hi", "se_logit", "s_lo", "s_hi", "q_field_lo", "q_field_hi"),
             "gamma": ("gamma_lo", "gamma_hi"), "kappa": ("kappa_lo", "kappa_hi"),
             "D": ("D_lo", "D_hi", "beta_pos_lo", "beta_pos_hi"), "beta_len": ("beta_len_lo", "beta_len_hi"),
             "beta_fam": ("beta_fam_lo", "beta_fam_hi"), "pairs": ("q_lo", "q_hi", "se_logit")}


def _rows(frame: pd.DataFrame) -> list[dict]:
    out = records(frame)
    for row in out:
        if "flags" in row:
            row["flags"] = [f for f in str(row["flags"] or "").split(",") if f]
    return out


def _withhold(row: dict, keys) -> None:
    row.update({k: None for k in keys if k in row})


def payload(*, header: dict, scale: dict, leaderboard: pd.DataFrame, judges: pd.DataFrame, win: pd.DataFrame,
            status, design, checks: dict, notes, sections: dict | None = None, tail: dict | None = None) -> dict:
    """A result's JSON: ``header`` keys, ``scale``, the tables as rows, ``sections``, ``checks``, ``notes``.

    Intervals that ``status`` (:class:`~oscar_jax.results.checks.Status`) withholds are
    null, never a confident number; each candidate row says why in ``interval``.
    """
    cand_index = {c: i for i, c in enumerate(design.candidates)}
    judge_index = {j: i for i, j in enumerate(design.judges)}
    cand_rows, judge_rows, pair_rows = _rows(leaderboard), _rows(judges), _rows(win)
    for row in cand_rows:
        if status.candidates[cand_index[row["candidate"]]]:
            _withhold(row, _WITHHELD["candidates"])
    for row in judge_rows:
        k = judge_index[row["judge"]]
        for what in ("gamma", "kappa", "D", "beta_len", "beta_fam"):
            if getattr(status, what)[k]:
                _withhold(row, _WITHHELD[what])
    for row in pair_rows:
        if status.pair(cand_index[row["a"]], cand_index[row["b"]]):
            _withhold(row, _WITHHELD["pairs"])
    return {**header, "scale": scale, "candidates": cand_rows, "judges": judge_rows, "win_prob": pair_rows,
            **{k: (_rows(v) if isinstance(v, pd.DataFrame) else v) for k, v in (sections or {}).items()},
            "checks": checks, **(tail or {}), "notes": list(notes)}
