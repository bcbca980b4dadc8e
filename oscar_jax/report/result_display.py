"""Short text and HTML summaries of a FitResult, for the REPL and notebooks.

The dataclass default repr printed every array of the fit (24 KB on Chatbot Arena); these
show what a user looks at first: the model, the data size, the checks and the top of the
leaderboard on the average-judge logit scale (reference-free), with where to find the rest.
"""

from __future__ import annotations

import html

import numpy as np

__all__ = ["fit_repr", "fit_repr_html"]

_TOP = 5


def _top(result, n: int = _TOP):
    x = np.asarray(result.targets.x)
    order = np.argsort(-x, kind="mergesort")[:n]
    return [(result.design.candidates[i], float(x[i])) for i in order]


def _status(result) -> str:
    failed = result.failed_checks()
    return "checks passed" if not failed else f"{len(failed)} check(s) FAILED"


def fit_repr(result) -> str:
    d = result.design
    top = ", ".join(f"{name} {x:+.3f}" for name, x in _top(result))
    more = f", … ({d.n_cand - _TOP} more)" if d.n_cand > _TOP else ""
    notes = f", {len(result.notes)} note(s) in .notes" if result.notes else ""
    return (f"<FitResult {result.effective_spec.name}: {d.n_records:,} records, {d.n_clusters:,} prompts, "
            f"{d.n_cand} candidates, {d.n_judge} judges; {_status(result)}{notes}; "
            f"top (average-judge logit): {top}{more}; see .leaderboard(), .judges(), .win_matrix()>")


def fit_repr_html(result) -> str:
    d = result.design
    e = html.escape
    lb = result.leaderboard()
    x = lb["score"].to_numpy()
    rows = "".join(
        f"<tr><td>{int(r)}</td><td style='text-align:left'>{e(str(c))}</td><td>{xi:.3f}</td>"
        f"<td>{q:.3f}</td><td>{int(v):,}</td></tr>"
        for r, c, xi, q, v in zip(lb["rank"], lb["candidate"], x, lb["q_field"], lb["votes"]))
    notes = "".join(f"<li>{e(str(n))}</li>" for n in result.notes)
    failed = "".join(f"<li><b>{e(f)}</b></li>" for f in result.failed_checks())
    return (
        f"<div><b>FitResult</b> {e(result.effective_spec.name)}: {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges · reference judge {e(d.judges[d.reference])} · "
        f"{e(_status(result))}"
        f"<table><thead><tr><th>rank</th><th>candidate</th><th>score (average-judge logit)</th>"
        f"<th>q vs field</th><th>votes</th></tr></thead><tbody>{rows}</tbody></table>"
        + (f"<ul>{failed}</ul>" if failed else "") + (f"<ul>{notes}</ul>" if notes else "")
        + "<small>Intervals: .leaderboard(), .judges(), .win_matrix(); Elo: "
          "oscar_jax.arena_leaderboard(result, scale='elo')</small></div>"
    )
