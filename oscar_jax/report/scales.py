"""One documented scale per output: average-judge logit, Elo, or win rate against a baseline.

Every leaderboard score the CLI prints or writes is on one of these scales, named in the
output (``leaderboard.scale`` in JSON, the table title in text):

* ``logit`` (default): the average-judge logit x_i = γ̄ s_i, so that
  P(i beats j) = σ(x_i − x_j) for a judge of average sensitivity with biases at zero. It
  does not depend on which judge is the reference (s does: s scales with 1/γ_ref).
  Sum zero over candidates; for γ ≡ 1 models it is the plain Bradley–Terry log-strength.
* ``elo``: 1000 + (400 / ln 10)·x (FastChat's "Arena Score").
* ``winrate``: arena-hard-auto's win rate against a baseline, 100·σ(x_i − x_baseline) %,
  with the interval of the contrast mapped through σ (the baseline sits at 50%).

``--format fastchat`` writes FastChat's ``leaderboard_table_df`` columns from the Elo
board: ``model, rating, variance, rating_q975, rating_q025, num_battles, final_ranking``.
The raw per-model parameter s (reference-judge scale) stays available as ``s`` in JSON
and in every ``leaderboard()`` table, and as ``FitResult.scores`` in Python; the Python
tables' ``score`` is the logit scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .leaderboard import ELO_SLOPE, arena_leaderboard, rank_ub
from ..results.intervals import SCORE_SCALES, percentiles
from ..model.links import sigmoid
from ..runtime.validate import OscarInputError

__all__ = ["SCORE_SCALES", "draws_board", "fastchat_table", "on_scale", "put_on_scale", "rescore", "scale_label",
           "scaled_board"]


def scaled_board(result, *, ci: str = "sandwich", scale: str = "logit", anchor=None, baseline: str | None = None,
                 draws=None) -> pd.DataFrame:
    """:func:`~oscar_jax.report.leaderboard.arena_leaderboard` on ``scale``, including ``winrate``.

    For ``winrate``, ``baseline`` names the candidate the others are compared with (the
    board is the logit board anchored at it, mapped through 100·σ); ``anchor`` is not
    allowed with it.
    """
    if scale not in SCORE_SCALES:
        raise OscarInputError(f"scale {scale!r} must be one of {list(SCORE_SCALES)}")
    if scale != "winrate":
        return arena_leaderboard(result, ci=ci, scale=scale, anchor=anchor, draws=draws)
    if baseline is None:
        raise OscarInputError("--scale winrate needs a baseline: the candidate to compare with, e.g. "
                              "--anchor gpt-4-0314 (arena-hard files: --baseline gpt-4-0314)")
    if anchor is not None:
        raise OscarInputError("--scale winrate compares with the baseline; it takes no separate --anchor value")
    board = arena_leaderboard(result, ci=ci, scale="logit", anchor=(baseline, 0.0), draws=draws)
    out = board.copy()
    out["score"], out["lo"], out["hi"] = 100.0 * sigmoid(board["logit"]), 100.0 * sigmoid(board["logit_lo"]), 100.0 * sigmoid(board["logit_hi"])
    out["plus"], out["minus"] = out["hi"] - out["score"], out["score"] - out["lo"]
    out["rank_ub"] = rank_ub(out["lo"], out["hi"])
    out.attrs = dict(board.attrs, scale="winrate", baseline=board.attrs["anchor"])
    return out


def fastchat_table(result, *, ci: str = "sandwich", anchor=None, draws=None, board=None) -> pd.DataFrame:
    """FastChat's ``leaderboard_table_df``: Elo rating, its interval, battles and Rank (UB).

    ``variance`` is the delta-method variance of the rating (NaN for draw-based
    intervals, which have no single variance); ``final_ranking`` is Rank (UB).
    """
    if board is None or board.attrs.get("scale") != "elo":
        board = arena_leaderboard(result, ci=ci, scale="elo", anchor=anchor, draws=draws)
    return pd.DataFrame({
        "model": board["candidate"],
        "rating": board["elo"],
        "variance": (ELO_SLOPE * board["se_logit"]) ** 2,
        "rating_q975": board["elo_hi"],
        "rating_q025": board["elo_lo"],
        "num_battles": board["votes"].astype(int),
        "final_ranking": board["rank_ub"].astype(int),
    })


def draws_board(x_draws, names, votes, *, scale: str = "logit", ci_prob: float = 0.95, anchor=None,
                point=None) -> pd.DataFrame:
    """Leaderboard on ``scale`` from draws (B, C) of the average-judge logits x.

    ``point`` (C,) is the point estimate (default: the mean of the draws, i.e. the
    posterior mean); intervals are equal-tailed percentiles at ``ci_prob``. ``anchor`` is a
    candidate name (or (name, value)): every draw is taken relative to it, so the anchor's
    uncertainty moves onto the others as in :func:`~oscar_jax.report.leaderboard.arena_leaderboard`;
    for ``winrate`` it is the baseline, and required.
    """
    from .leaderboard import ELO_BASE, parse_anchor
    from ..runtime.validate import resolve_name

    if scale not in SCORE_SCALES:
        raise OscarInputError(f"scale {scale!r} must be one of {list(SCORE_SCALES)}")
    names = list(names)
    xs = np.asarray(x_draws, dtype=float)
    x = xs.mean(axis=0) if point is None else np.asarray(point, dtype=float)
    if isinstance(anchor, str):
        anchor = parse_anchor(anchor)
    if scale == "winrate" and anchor is None:
        raise OscarInputError("--scale winrate needs a baseline: the candidate to compare with, e.g. --anchor gpt-4-0314")
    name, value = (None, None) if anchor is None else anchor
    offset = 0.0
    if name is not None:
        name = resolve_name("anchor candidate", str(name), names)
        k = names.index(name)
        xs, x = xs - xs[:, k:k + 1], x - x[k]
        offset = 0.0 if value is None or scale == "winrate" else float(value)
    lo, hi = percentiles(xs, ci_prob)
    if scale == "elo":
        base = offset if name is not None and value is not None else ELO_BASE
        f = lambda v: base + ELO_SLOPE * v  # noqa: E731
    elif scale == "winrate":
        f = lambda v: 100.0 * sigmoid(v)  # noqa: E731
    else:
        f = lambda v: offset + v  # noqa: E731
    frame = pd.DataFrame({"candidate": names, "score": f(x), "lo": f(lo), "hi": f(hi),
                          "logit": x, "logit_lo": lo, "logit_hi": hi, "votes": list(votes)})
    frame["plus"], frame["minus"] = frame["hi"] - frame["score"], frame["score"] - frame["lo"]
    frame["rank_ub"] = rank_ub(frame["lo"], frame["hi"])
    frame = frame.sort_values(["score", "candidate"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    frame.attrs.update({"scale": scale, "ci_prob": ci_prob, "anchor": name, "baseline": name,
                        "anchor_value": value, "n_draws": int(xs.shape[0])})
    return frame


def rescore(frame: pd.DataFrame, board: pd.DataFrame, key: str = "candidate") -> pd.DataFrame:
    """A leaderboard table with ``score``/``score_lo``/``score_hi`` taken from ``board``.

    The table's raw-s columns ``s``, ``s_lo``, ``s_hi`` stay as they are.
    """
    b = board.set_index("candidate").loc[frame[key]]
    return frame.assign(score=b["score"].to_numpy(), score_lo=b["lo"].to_numpy(), score_hi=b["hi"].to_numpy())


def scale_label(scale: str, baseline: str | None = None) -> str:
    """How a table title names the scale of its scores."""
    return {"logit": "score: average-judge logit", "elo": "score: Elo (1000 + 173.72·logit)",
            "winrate": f"score: win rate % vs {baseline}"}[scale]


def on_scale(result, scale: str = "logit", anchor=None, ci_prob: float | None = None):
    """(board, leaderboard) of a bootstrap or posterior on ``scale``, intervals from its draws of x = γ̄·s.

    A :class:`~oscar_jax.bootstrap.BootstrapResult` keeps the full-data fit as the point
    and takes percentiles of its valid replicates (``anchor`` names the baseline of
    ``winrate``); a :class:`~oscar_jax.bayes.BayesResult` gives the posterior mean and
    equal-tailed interval at ``ci_prob`` (default: the result's).
    """
    from ..results.bootstrap import BootstrapResult

    if isinstance(result, BootstrapResult):
        from .draw_sources import theta_draws

        draws, _ = theta_draws(result, result.full.layout, "bootstrap")
        if scale == "winrate":
            name = None if anchor is None else anchor.rpartition("=")[0] or anchor
            board = scaled_board(result.full, ci="bootstrap", scale=scale, baseline=name, draws=draws)
        else:
            board = scaled_board(result.full, ci="bootstrap", scale=scale, anchor=anchor, draws=draws)
        return board, rescore(result.leaderboard(), board)
    ci_prob = result.ci_prob if ci_prob is None else ci_prob
    x = result.draws("x")
    x = x.reshape(-1, x.shape[-1])
    votes = [result.design.counts.get("candidate_votes", {}).get(c, 0) for c in result.design.candidates]
    board = draws_board(x, result.design.candidates, votes, scale=scale, ci_prob=ci_prob, anchor=anchor)
    return board, rescore(result.leaderboard(ci_prob=ci_prob), board)


def put_on_scale(candidates: list[dict], board: pd.DataFrame, raw: tuple[str, ...] = ()) -> None:
    """One scale per output: each JSON candidate's ``score``/``lo``/``hi``/``rank_ub`` from ``board``.

    ``raw`` names the candidate's own fields that the board's replace: each is dropped
    (the raw s keeps its own fields, ``s``…), e.g. ``("mean", "sd")``.
    """
    rows = board.set_index("candidate")
    for cand in candidates:
        for old in raw:
            cand.pop(old)
        row = rows.loc[cand["name"]]
        cand["score"], cand["lo"], cand["hi"] = float(row["score"]), float(row["lo"]), float(row["hi"])
        cand["rank_ub"] = int(row["rank_ub"])
