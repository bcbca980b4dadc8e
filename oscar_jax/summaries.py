"""Human-readable reports of fits (80-column text)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from .report import fmt_ci, render_table, shorten
from .results import FitResult

__all__ = ["fit_report", "header", "leaderboard_text", "judges_text", "win_text"]

_CI_NAME = {"sandwich": "prompt-cluster sandwich",
            "model": "model-based: assumes independent records; too narrow under prompt dependence"}


def header(result: FitResult) -> str:
    d = result.design
    checks = result.failed_checks()
    lines = [
        f"{result.effective_spec.name} — {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges",
        f"reference judge: {d.judges[d.reference]}",
        f"objective {result.objective:.4f} · checks (B.3): {'all passed' if not checks else 'FAILED'}",
    ]
    if d.report is not None:
        lines.append(f"data: {d.report.summary()}")
    lines += [f"note: {n}" for n in result.notes]
    lines += [f"warning: {c}" for c in checks]
    return "\n".join(textwrap.fill(line, 80, subsequent_indent="  ") for line in lines)


def leaderboard_text(result: FitResult, ci: str = "sandwich") -> str:
    lb = result.leaderboard(ci)
    lb = lb.assign(score_ci=[fmt_ci(lo, hi) for lo, hi in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(lo, hi, 3) for lo, hi in zip(lb.q_field_lo, lb.q_field_hi)])
    pct = int(round(100 * result.ci_prob))
    title = f"Leaderboard ({pct}% CI, {_CI_NAME[ci]}; q = win prob. against the field)"
    table = render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""), ("score", "score", ".3f"),
                              ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% CI", ""),
                              ("votes", "votes", "d")], name_col="candidate")
    return title + "\n" + table


def judges_text(result: FitResult, ci: str = "sandwich") -> str:
    jt = result.judges(ci)
    jt = jt.assign(kappa_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.D_lo, jt.D_hi)],
                   name=[("*" if r else "") + j for j, r in zip(jt.judge, jt.reference)])
    cols = [("name", "judge (*=ref)", ""), ("n", "n", "d"), ("kappa", "κ", ".3f"), ("kappa_ci", "κ CI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D CI", "")]
    if jt["beta_len"].notna().any():
        cols.append(("beta_len", "β_len", ".2f"))
    if jt["beta_fam"].notna().any():
        cols.append(("beta_fam", "β_fam", ".2f"))
    title = "Judges (κ = γ·RMS(s): sensitivity; D = tanh(β_pos/2): first-slot preference)"
    return title + "\n" + render_table(jt, cols, name_col="name")


def win_text(result: FitResult, ci: str = "sandwich", max_matrix: int = 8) -> str:
    names = result.design.candidates
    order = np.argsort(-result.scores, kind="mergesort")
    parts = []
    pct = int(round(100 * result.ci_prob))
    if len(names) <= max_matrix:
        q = result.win_prob[np.ix_(order, order)]
        short = [shorten(names[i], 9) for i in order]
        frame = pd.DataFrame(q, columns=short)
        frame.insert(0, "row beats col", short)
        cols = [("row beats col", "row beats col", "")] + [(c, c, ".2f") for c in short]
        parts.append("Win probability q_ij (average-sensitivity judge, biases at zero)\n" + render_table(frame, cols, width=200))
    wm = result.win_matrix(ci)
    key = {(a, b): r for a, b, r in zip(wm.a, wm.b, range(len(wm)))}
    rows = []
    for x, y in zip(order[:-1], order[1:]):
        r = wm.iloc[key[(names[x], names[y])]]
        rows.append({"pair": f"{shorten(names[x], 24)} > {shorten(names[y], 24)}", "q": r.q, "ci": fmt_ci(r.lo, r.hi, 3)})
    adj = pd.DataFrame(rows)
    parts.append(f"Adjacent ranks ({pct}% CI, {_CI_NAME[ci]})\n"
                 + render_table(adj, [("pair", "pair", ""), ("q", "q", ".3f"), ("ci", f"{pct}% CI", "")], name_col="pair"))
    return "\n\n".join(parts)


def fit_report(result: FitResult, ci: str = "sandwich") -> str:
    return "\n\n".join([header(result), leaderboard_text(result, ci), judges_text(result, ci), win_text(result, ci)])
