"""Figures of a fit (matplotlib, PNG): CI forest, win-probability heatmap, judge panel, 1 − D².

Every function takes either a result (a fit, bootstrap or posterior: what it draws comes
from the result's own ``leaderboard()``, ``win_matrix()`` or ``judges()``) or plain
tables of estimates and intervals, writes one PNG to ``path`` and returns that path. Figures are
drawn on a ``matplotlib.figure.Figure`` with the Agg canvas directly: no pyplot, no
global backend switch, nothing left open. Colours are the Okabe–Ito palette
(distinguishable under the common colour-vision deficiencies); the heatmap uses the
diverging ``RdBu`` map centred at q = ½, readable in grey scale as distance from ½.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .attenuation_plot import attenuation_scatter
from .figures import OKABE_ITO, new_figure, place_labels, save_png
from .render import shorten, shorten_names
from ..runtime.validate import OscarInputError

__all__ = ["OKABE_ITO", "attenuation_scatter", "forest_plot", "judge_panel", "win_heatmap", "write_fit_plots"]

_BLUE, _ORANGE, _VERMILION, _GREEN, _PURPLE = OKABE_ITO[5], OKABE_ITO[1], OKABE_ITO[6], OKABE_ITO[3], OKABE_ITO[7]
_NAME_WIDTH = 32


def _col(table: pd.DataFrame, *names):
    for n in names:
        if n in table.columns:
            return table[n].to_numpy(dtype=float)
    raise OscarInputError(f"the table needs one of the columns {list(names)}; it has {list(table.columns)}")


# ---------------------------------------------------------------------------------------
# Forest plot
# ---------------------------------------------------------------------------------------

def forest_plot(table, path, *, xlabel: str | None = None, title: str | None = None,
                label: str = "candidate") -> Path:
    """Candidates' scores with interval bars, best at the top.

    Parameters
    ----------
    table
        A result (its ``leaderboard()``: a fit's on the logit scale with sandwich
        intervals) or a table with a ``label`` column, ``score``, ``score_lo`` and
        ``score_hi`` (any ``leaderboard()``, e.g. with bootstrap percentile intervals).
    path
        PNG file to write.
    xlabel, title
        Defaults describe the scale and interval kind recorded in ``table.attrs``.
    """
    if hasattr(table, "leaderboard"):
        table = table.leaderboard()
    attrs = getattr(table, "attrs", {}) or {}
    score = _col(table, "score")
    lo = _col(table, "score_lo")
    hi = _col(table, "score_hi")
    names = shorten_names(table[label].astype(str), _NAME_WIDTH)
    order = np.argsort(-score, kind="mergesort")
    n = len(order)
    fig = new_figure(7.0, max(2.6, 0.32 * n + 1.4))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    ax.errorbar(score[order], y, xerr=[score[order] - lo[order], hi[order] - score[order]], fmt="o",
                color=_BLUE, ecolor=_BLUE, elinewidth=1.6, capsize=3, markersize=5)
    ax.set_yticks(y, [names[i] for i in order])
    ax.set_ylim(-0.7, n - 0.3)
    scale = attrs.get("scale", "logit")
    pct = f"{100 * attrs.get('ci_prob', 0.95):g}%"
    if xlabel is None:
        if "scale" not in attrs:
            xlabel = "score"
        elif scale == "elo":
            xlabel = "Elo (1000 + 173.72 · average-judge logit)"
        else:
            xlabel = "score (average-judge logit γ̄·s)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel("candidate")
    ax.grid(axis="x", color="0.85", linewidth=0.8)
    ax.set_axisbelow(True)
    if title is None:
        title = f"Candidate scores with {pct} intervals" + (f" ({attrs['ci']})" if "ci" in attrs else "")
        if attrs.get("anchor"):
            title += f"\nanchored at {shorten(attrs['anchor'], 30)}"
    ax.set_title(title, fontsize=10)
    return save_png(fig, path)


# ---------------------------------------------------------------------------------------
# Win-probability heatmap
# ---------------------------------------------------------------------------------------

def _matrix_from_long(long: pd.DataFrame, names):
    index = {n: i for i, n in enumerate(names)}
    c = len(names)
    q = np.full((c, c), np.nan)
    lo = np.full((c, c), np.nan)
    hi = np.full((c, c), np.nan)
    for a, b, qq, ll, hh in zip(long["a"], long["b"], long["q"], long.get("q_lo", long["q"]),
                                long.get("q_hi", long["q"])):
        i, j = index[a], index[b]
        q[i, j], lo[i, j], hi[i, j] = qq, ll, hh
    return q, lo, hi


def win_heatmap(source, path, *, ci: str | None = None, names=None, lo=None, hi=None,
                title: str | None = None, show_ci: bool | None = None) -> Path:
    """P(row beats column) for every pair, with its interval printed in each cell.

    Parameters
    ----------
    source
        A result (q_ij = σ(γ̄(s_i − s_j)) with ``result.win_matrix(ci)`` intervals, rows
        ordered by score), a long table with columns ``a, b, q`` and optionally
        ``q_lo, q_hi`` (e.g. bootstrap intervals), or a (C, C) array of q with ``names``.
    lo, hi
        (C, C) interval bounds when ``source`` is an array.
    show_ci
        Print ``[lo, hi]`` under each q; default: when C ≤ 10 (the text would not fit
        in larger cells at the default size).
    """
    if hasattr(source, "win_matrix"):
        order = np.argsort(-np.asarray(source.scores), kind="mergesort")
        names = [source.design.candidates[i] for i in order]
        q, lo, hi = _matrix_from_long(source.win_matrix(ci), names)
        title = title or f"P(row beats column), {100 * source.ci_prob:g}% intervals" + (f" ({ci})" if ci else "")
    elif isinstance(source, pd.DataFrame):
        if names is None:
            names = list(dict.fromkeys(list(source["a"]) + list(source["b"])))
        q, lo, hi = _matrix_from_long(source, names)
    else:
        q = np.asarray(source, dtype=float)
        if names is None or q.ndim != 2 or q.shape != (len(names), len(names)):
            raise OscarInputError("win_heatmap(array, ...) needs a square (C, C) array and names= of length C")
        lo = np.full_like(q, np.nan) if lo is None else np.asarray(lo, dtype=float)
        hi = np.full_like(q, np.nan) if hi is None else np.asarray(hi, dtype=float)
    c = len(names)
    if show_ci is None:
        show_ci = c <= 10
    # Cells keep a fixed size (0.75 in with intervals, 0.5 in without) so the numbers stay
    # at 8 pt however many candidates there are; the figure grows instead.
    cell = 0.75 if show_ci else 0.5
    side = max(4.5, cell * c + 2.6)
    fig = new_figure(side + 1.2, side)
    ax = fig.add_subplot()
    shown = np.where(np.eye(c, dtype=bool), np.nan, q)
    image = ax.imshow(shown, cmap="RdBu", vmin=0.0, vmax=1.0)
    short = shorten_names(names, 22)
    # Vertical column names: at 45° long names run into their neighbours' boxes.
    ax.set_xticks(np.arange(c), short, rotation=90)
    ax.set_yticks(np.arange(c), short)
    ax.tick_params(labelsize=9)
    ax.set_xlabel("column: candidate B")
    ax.set_ylabel("row: candidate A")
    size = 8
    for i in range(c):
        for j in range(c):
            if i == j or not np.isfinite(q[i, j]):
                continue
            text = f"{q[i, j]:.2f}"
            if show_ci and np.isfinite(lo[i, j]) and np.isfinite(hi[i, j]):
                text += f"\n[{lo[i, j]:.2f}, {hi[i, j]:.2f}]"
            # White text on the saturated ends of RdBu, black in the pale middle.
            colour = "white" if abs(q[i, j] - 0.5) > 0.3 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=colour)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("P(row beats column)")
    ax.set_title(title or "P(row beats column)", fontsize=10)
    return save_png(fig, path)


# ---------------------------------------------------------------------------------------
# Judge panel
# ---------------------------------------------------------------------------------------

def judge_panel(source, path, *, j_fit=None, ci: str | None = None, model_name: str | None = None,
                title: str | None = None) -> Path:
    """Three panels per judge: κ under J vs the chosen model, D with CI, bias coefficients.

    Parameters
    ----------
    source
        The chosen model's result (a fit, bootstrap or posterior), or its judge table
        (columns ``judge``, ``kappa``, ``kappa_lo``, ``kappa_hi``, ``D``, ``D_lo``,
        ``D_hi``, ``beta_pos``, ``beta_len``, ``beta_fam`` and optionally ``beta_*_lo/_hi``).
    j_fit
        The J fit on the same data (a result or its judge table); the first panel is left
        with a note when absent.
    ci
        Interval kind of the results' ``judges(ci)`` (default: each result's own).
    model_name
        Label of the chosen model (default: the fit's name).
    """
    if hasattr(source, "judges"):
        model_name = model_name or source.effective_spec.name
        table = source.judges(ci)
    else:
        table = source.copy()
        model_name = model_name or "model"
    j_table = j_fit.judges(ci) if hasattr(j_fit, "judges") else j_fit
    judges = shorten_names(table["judge"].astype(str), 26)
    k = len(judges)
    fig = new_figure(14.0, max(4.6, 0.3 * k + 2.6))
    # (b) and (c) share the judge axis: names are printed once, left of (b).
    ax_k, ax_d, ax_b = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.25, 1.0, 1.1]})
    ax_b.sharey(ax_d)
    ax_k.set_box_aspect(1.0)  # a square scatter, however many judges lengthen (b) and (c)

    # (a) κ under J against κ under the chosen model, with both intervals.
    if j_table is not None:
        jk = j_table.set_index("judge").reindex(table["judge"])
        xk, xlo, xhi = (jk[c].to_numpy(dtype=float) for c in ("kappa", "kappa_lo", "kappa_hi"))
        yk, ylo, yhi = (table[c].to_numpy(dtype=float) for c in ("kappa", "kappa_lo", "kappa_hi"))
        ax_k.errorbar(xk, yk, xerr=[xk - xlo, xhi - xk], yerr=[yk - ylo, yhi - yk], fmt="o", color=_BLUE,
                      ecolor="0.6", elinewidth=0.9, capsize=2, markersize=5)
        top = np.nanmax(np.concatenate([xhi, yhi, xk, yk])) * 1.05
        ax_k.plot([0, top], [0, top], color="0.4", linestyle="--", linewidth=1, label="κ equal (a)")
        ax_k.set_xlim(0, top)
        ax_k.set_ylim(0, top)
    else:
        ax_k.text(0.5, 0.5, "no J fit given", ha="center", va="center", transform=ax_k.transAxes)
    ax_k.set_xlabel("κ under J (no bias terms)")
    ax_k.set_ylabel(f"κ under {model_name}")
    ax_k.set_title("(a) judge sensitivity κ = γ·RMS(s)", fontsize=10)

    # (b) D = tanh(β_pos/2) with interval, one row per judge.
    y = np.arange(k)[::-1]
    d = table["D"].to_numpy(dtype=float)
    if np.isfinite(d).any():
        dlo, dhi = table["D_lo"].to_numpy(dtype=float), table["D_hi"].to_numpy(dtype=float)
        ax_d.errorbar(d, y, xerr=[d - dlo, dhi - d], fmt="s", color=_VERMILION, ecolor=_VERMILION,
                      elinewidth=1.4, capsize=3, markersize=5)
    else:
        ax_d.text(0.5, 0.5, f"no position term in {model_name}", ha="center", va="center",
                  transform=ax_d.transAxes)
    ax_d.axvline(0.0, color="0.4", linewidth=1)
    ax_d.set_yticks(y, judges)
    ax_d.set_xlim(-1.08, 1.08)  # D ∈ (−1, 1); room for a marker at the edge
    ax_d.set_xlabel("D = tanh(β_pos/2)  (> 0: prefers the first-shown answer)")
    ax_d.set_title("(b) net first-slot preference D", fontsize=10)

    # (c) bias coefficients, one marker per term, offset vertically so they do not overlap.
    terms = [("beta_pos", "β_pos (position)", _VERMILION, "s"), ("beta_len", "β_len (length)", _GREEN, "^"),
             ("beta_fam", "β_fam (own family)", _PURPLE, "D")]
    drawn = 0
    for shift, (col, label, colour, marker) in zip((0.22, 0.0, -0.22), terms):
        est = table[col].to_numpy(dtype=float) if col in table.columns else np.full(k, np.nan)
        if not np.isfinite(est).any():
            continue
        lo_c, hi_c = f"{col}_lo", f"{col}_hi"
        if lo_c in table.columns and hi_c in table.columns:
            err = [est - table[lo_c].to_numpy(dtype=float), table[hi_c].to_numpy(dtype=float) - est]
        else:
            err = None
        ax_b.errorbar(est, y + shift, xerr=err, fmt=marker, color=colour, ecolor=colour, elinewidth=1.2,
                      capsize=2, markersize=5, label=label + " (c)")
        drawn += 1
    if not drawn:
        ax_b.text(0.5, 0.5, f"{model_name} has no bias terms", ha="center", va="center", transform=ax_b.transAxes)
    ax_b.axvline(0.0, color="0.4", linewidth=1)
    ax_b.tick_params(labelleft=False)
    ax_b.set_xlabel("coefficient on the logit scale")
    ax_b.set_title("(c) bias coefficients", fontsize=10)
    for ax in (ax_d, ax_b):
        ax.grid(axis="x", color="0.88", linewidth=0.8)
        ax.set_axisbelow(True)
    # One legend for all panels, below them, where it covers no data.
    handles, labels = [], []
    for ax in (ax_k, ax_b):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.append(h)
            labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(title or f"Judges under {model_name}", fontsize=11)
    if j_table is not None:
        place_labels(ax_k, xk, yk, judges, fontsize=6.5)
    return save_png(fig, path)


# ---------------------------------------------------------------------------------------
# All figures of one fit
# ---------------------------------------------------------------------------------------

def write_fit_plots(result, out_dir, *, board: pd.DataFrame | None = None, j_fit=None, pos_fit=None,
                    ci: str = "sandwich", win_table: pd.DataFrame | None = None) -> dict[str, Path]:
    """Write ``forest.png``, ``win_heatmap.png``, ``judge_panel.png``, ``attenuation.png``.

    Parameters
    ----------
    result
        The chosen model's fit.
    board
        Leaderboard for the forest plot (default: the fit's, logit scale, sandwich intervals).
    j_fit
        J fit for the judge panel and as the no-position fit of the attenuation plot
        (default: ``result`` itself when it is J).
    pos_fit
        Fit with the position term for the attenuation plot (default: ``result`` when it
        has one). The attenuation plot is skipped when either fit is missing.
    ci
        ``"sandwich"`` or ``"model"`` for the FitResult-based panels.
    win_table
        Long table (a, b, q, q_lo, q_hi) for the heatmap, e.g. bootstrap intervals.

    Returns
    -------
    dict
        Figure name → written path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"forest": forest_plot(board if board is not None else result, out / "forest.png")}
    if win_table is not None:
        order = np.argsort(-result.scores, kind="mergesort")
        names = [result.design.candidates[i] for i in order]
        written["win_heatmap"] = win_heatmap(win_table, out / "win_heatmap.png", names=names,
                                             title=f"P(row beats column), {100 * result.ci_prob:g}% intervals")
    else:
        written["win_heatmap"] = win_heatmap(result, out / "win_heatmap.png", ci=ci)
    if j_fit is None and not result.effective_spec.terms and result.effective_spec.learn_gamma:
        j_fit = result
    written["judge_panel"] = judge_panel(result, out / "judge_panel.png", j_fit=j_fit, ci=ci)
    if pos_fit is None and "pos" in result.effective_spec.terms:
        pos_fit = result
    if j_fit is not None and pos_fit is not None and "pos" in pos_fit.effective_spec.terms:
        written["attenuation"] = attenuation_scatter(j_fit, out / "attenuation.png", adjusted=pos_fit)
    return written
