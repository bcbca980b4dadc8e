"""Arena-style leaderboards: ``Rank (UB) | Model | Score | CI (+x/−y) | Votes`` and FastChat's columns.

The numbers are the result's own leaderboard on a scale (``result.leaderboard(scale=…,
anchor=…)``, :mod:`oscar_jax.results.boards`: average-judge logit, Elo, win rate, anchored
contrasts); this module only chooses columns and prints them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..results.boards import ELO_BASE, ELO_SLOPE
from ..results.schema import CI_LABELS
from ..runtime.validate import OscarInputError
from .render import render_table, shorten

__all__ = ["ARENA_COLUMNS", "arena_leaderboard", "arena_text", "fastchat_table", "fmt_pm", "scale_label"]

ARENA_COLUMNS = ("rank_ub", "rank", "candidate", "score", "score_lo", "score_hi", "votes", "se_logit", "interval")
_DRAW_SOURCES = ("bootstrap", "bayes")


def arena_leaderboard(result, *, ci: str | None = None, scale: str = "elo", anchor=None, draws=None,
                      ci_prob: float | None = None) -> pd.DataFrame:
    """The Arena view of ``result.leaderboard``: Rank (UB), rank, candidate, score and interval, votes.

    Parameters
    ----------
    result
        A fit, bootstrap or posterior result (its ``leaderboard`` gives every number).
    ci
        A fit's interval kind: ``"sandwich"`` (default) or ``"model"``, or ``"bootstrap"``
        / ``"bayes"`` with ``draws``.
    scale
        ``"elo"`` (1000 + 400/ln 10 · x, default), ``"logit"`` (x = γ̄ s) or ``"winrate"``.
    anchor
        None, ``"NAME"``, ``"NAME=VALUE"`` or ``(name, value)``: pin that candidate at
        ``value`` (default 1000 Elo / 0 logit; the baseline of ``winrate``); intervals are
        those of the anchored contrast.
    draws
        A bootstrap or posterior result, or (B, P) θ draws, for a fit's draw-based ``ci``.
    ci_prob
        Interval level (default: the result's).

    Returns
    -------
    DataFrame
        One row per candidate, best first: ``rank_ub``, ``rank``, ``candidate``, ``score``,
        ``score_lo``, ``score_hi`` (on ``scale``), ``votes``, and ``se_logit`` (Wald) and
        ``interval`` where the result has them. ``frame.attrs`` holds scale, ci, ci_prob, anchor.

    Examples
    --------
    >>> from oscar_jax import fit, simulate_design
    >>> board = arena_leaderboard(fit(simulate_design(seed=0, n_prompts=400), "j"))
    >>> board.columns[:4].tolist()
    ['rank_ub', 'rank', 'candidate', 'score']
    """
    kw = {"ci_prob": ci_prob, "scale": scale, "anchor": anchor}
    if ci in _DRAW_SOURCES:
        if draws is None:
            raise OscarInputError(f"ci={ci!r} needs draws=: a bootstrap or posterior result, or (B, P) θ draws")
        ci = None
    if draws is not None:
        kw["draws"] = draws
    lb = result.leaderboard(ci, **kw)
    board = lb[[c for c in ARENA_COLUMNS if c in lb.columns]]
    board.attrs = dict(lb.attrs)
    return board


def fmt_pm(point: float, lo: float, hi: float, digits: int = 1) -> str:
    """``+x/−y`` with x = hi − point, y = point − lo (Arena's way of printing a CI)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "–"
    up = max(hi - point, 0.0)
    down = max(point - lo, 0.0)
    return f"+{up:.{digits}f}/−{down:.{digits}f}"


def scale_label(scale: str, baseline: str | None = None) -> str:
    """How a table title names the scale of its scores."""
    return {"logit": "score: average-judge logit", "elo": f"score: Elo ({ELO_BASE:g} + {ELO_SLOPE:.2f}·logit)",
            "winrate": f"score: win rate % vs {baseline}"}[scale]


def arena_text(table: pd.DataFrame, *, title: str | None = None, width: int | None = None) -> str:
    """Render an :func:`arena_leaderboard` table as ``Rank (UB) | Model | Score | CI | Votes``.

    A candidate whose intervals the result withholds (``interval`` not "ok") gets a "!"
    and the reason instead of an interval.
    """
    attrs = table.attrs
    pct = f"{100 * attrs.get('ci_prob', 0.95):g}%"
    scale = attrs.get("scale", "elo")
    digits = 1 if scale in ("elo", "winrate") else 3
    anchor = attrs.get("anchor")
    status = ({c: s for c, s in zip(table.candidate, table.interval) if s != "ok"} if "interval" in table.columns
              else {})
    shown = table.assign(ci_text=["(anchor)" if c == anchor else status.get(c) or fmt_pm(s, lo, hi, digits)
                                  for c, s, lo, hi in zip(table.candidate, table.score, table.score_lo, table.score_hi)],
                         candidate=[("!" if status.get(c) else "") + c for c in table.candidate])
    score_fmt = {"elo": ".0f", "winrate": ".1f"}.get(scale, ".3f")
    cols = [("rank_ub", "Rank (UB)", "d"), ("candidate", "Model", ""), ("score", "Score", score_fmt),
            ("ci_text", f"{pct} CI (+x/−y)", ""), ("votes", "Votes", "d")]
    if title is None:
        what = (f"Elo = {ELO_BASE:g} + {ELO_SLOPE:.2f}·logit" if scale == "elo"
                else f"win rate % against {attrs.get('baseline')}" if scale == "winrate"
                else "average-judge logit γ̄·s")
        source = CI_LABELS.get(attrs.get("ci", "sandwich"), attrs.get("ci", ""))
        if attrs.get("n_draws"):
            source += f", {attrs['n_draws']} draws"
        title = f"Arena-style leaderboard ({pct} CI, {source}; {what})"
        if anchor and scale != "winrate":
            unit = "" if scale == "elo" else " logit"
            title += (f"\nanchored: {shorten(anchor, 40)} = {attrs['anchor_value']:g}{unit} "
                      "(intervals are for the contrast with the anchor)")
    return title + "\n" + render_table(shown, cols, width=width, name_col="candidate")


def fastchat_table(board: pd.DataFrame) -> pd.DataFrame:
    """FastChat's ``leaderboard_table_df`` from an Elo board: rating, its interval, battles and Rank (UB).

    ``variance`` is the delta-method variance of the rating (NaN for draw-based
    intervals, which have no single variance); ``final_ranking`` is Rank (UB).
    """
    if board.attrs.get("scale") != "elo":
        raise OscarInputError("fastchat_table needs a board on the Elo scale: result.leaderboard(scale='elo')")
    se = board["se_logit"] if "se_logit" in board.columns else np.full(len(board), np.nan)
    return pd.DataFrame({
        "model": board["candidate"],
        "rating": board["score"],
        "variance": (ELO_SLOPE * se) ** 2,
        "rating_q975": board["score_hi"],
        "rating_q025": board["score_lo"],
        "num_battles": board["votes"].astype(int),
        "final_ranking": board["rank_ub"].astype(int),
    })
