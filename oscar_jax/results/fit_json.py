"""The JSON summary of a fit: tables as records, flagged intervals as null, draw intervals merged in."""

from __future__ import annotations

from ..infer.identification import interval_status
from .jsonable import records

__all__ = ["fit_payload", "merge_board", "with_draw_intervals"]


def _with_flags(frame) -> list[dict]:
    out = records(frame)
    for row in out:
        if "flags" in row:
            row["flags"] = [f for f in str(row["flags"] or "").split(",") if f]
    return out


def fit_payload(result, ci: str = "sandwich", intervals: dict | None = None) -> dict:
    """``FitResult.to_dict``: see there."""
    lb = result.leaderboard(ci)
    jt = result.judges(ci)
    wm = result.win_matrix(ci)

    status = interval_status(result, ci)
    candidates, judges, win = _with_flags(lb), _with_flags(jt), _with_flags(wm)
    # Flagged quantities get no interval: null, with the reason, never a confident number.
    by_name = dict(zip(result.design.candidates, status["candidates"]))
    for row in candidates:
        row["interval"] = by_name[row["candidate"]] or "ok"
        if by_name[row["candidate"]]:
            row.update(score_lo=None, score_hi=None, s_lo=None, s_hi=None, q_field_lo=None, q_field_hi=None)
    for row, kap, d in zip(judges, status["kappa"], status["D"]):
        if kap:
            row.update(gamma_lo=None, gamma_hi=None, kappa_lo=None, kappa_hi=None)
        if d:
            row.update(D_lo=None, D_hi=None)
    for row in win:
        if by_name[row["a"]] or by_name[row["b"]]:
            row.update(lo=None, hi=None, se_logit=None)
    if intervals is not None:
        with_draw_intervals(result, intervals, candidates, judges, win)
    return {
        "model": result.spec.name,
        "fitted_model": result.effective_spec.name,
        "n_records": int(result.design.n_records),
        "n_prompts": int(result.design.n_clusters),
        "n_cells": int(result.design.n_cells),
        "reference_judge": result.design.judges[result.design.reference],
        "objective": result.objective,
        "ridge": result.effective_spec.ridge,
        "ci_prob": result.ci_prob,
        "ci": ci,
        "gamma_bar": result.gamma_bar,
        "candidates": candidates,
        "judges": judges,
        "win_prob": win,
        "diagnostics": {**result.checks(), "flags": result.identification_check(ci)},
        "notes": list(result.notes),
    }


def with_draw_intervals(result, intervals: dict, candidates: list[dict], judges: list[dict], win: list[dict]) -> None:
    """Replace the Wald intervals of scores (x and s), q against the field, κ and q_ij by percentile ones.

    A flagged candidate keeps no interval; the win-probability and κ rows take the draws'
    intervals whatever their flags (the draws bound them where the Wald interval cannot).
    """
    index = {c: i for i, c in enumerate(result.design.candidates)}
    x_lo, x_hi = intervals["x"]
    s_lo, s_hi = intervals["s"]
    f_lo, f_hi = intervals["q_field"]
    for cand in candidates:
        i = index[cand["candidate"]]
        if cand.get("interval", "ok") != "ok":
            continue
        cand["score_lo"], cand["score_hi"] = float(x_lo[i]), float(x_hi[i])
        cand["s_lo"], cand["s_hi"] = float(s_lo[i]), float(s_hi[i])
        cand["q_field_lo"], cand["q_field_hi"] = float(f_lo[i]), float(f_hi[i])
    q_lo, q_hi = intervals["q"]
    for row in win:
        i, j = index[row["a"]], index[row["b"]]
        row["lo"], row["hi"] = float(q_lo[i, j]), float(q_hi[i, j])
        row["se_logit"] = None
    k_lo, k_hi = intervals["kappa"]
    jindex = {j: n for n, j in enumerate(result.design.judges)}
    for row in judges:
        n = jindex[row["judge"]]
        row["kappa_lo"], row["kappa_hi"] = float(k_lo[n]), float(k_hi[n])


def merge_board(payload: dict, board, scale: str):
    """Add rank_ub and the chosen scale's score/interval fields to each candidate record."""
    rows = board.set_index("candidate")
    keys = ("elo", "elo_lo", "elo_hi") if scale == "elo" else ("logit", "logit_lo", "logit_hi")
    for cand in payload["candidates"]:
        row = rows.loc[cand["candidate"]]
        cand["name"] = cand["candidate"]
        cand["rank_ub"] = int(row["rank_ub"])
        for k in keys:
            cand[k] = float(row[k])
        # One scale per output: score is on the board's scale; the raw s keeps its own name.
        cand["score"], cand["score_lo"], cand["score_hi"] = float(row["score"]), float(row["lo"]), float(row["hi"])
        cand["plus"], cand["minus"] = float(row["plus"]), float(row["minus"])
        if cand.get("interval", "ok") != "ok":  # flagged (oscar_jax.infer.identification): no interval
            cand.update({k: None for k in keys[1:]}, score_lo=None, score_hi=None, plus=None, minus=None)
