"""Figures 3 and 4 of the simulation study: metrics against N, one PNG pair per (c, ρ).

Drawn on a ``matplotlib.figure.Figure`` with the Agg canvas directly (no pyplot, no
global backend switch), in the package palette (:mod:`oscar_jax.report.figures`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..report.figures import GREY, SERIES, new_figure, save_png

__all__ = ["plot_sweep"]

# Panels per figure: (metric, y label, title); "coverage" draws both covariances.
PANELS = {
    "fig3": [("q_rmse", "RMSE of q", "(a) win-probability RMSE"),
             ("coverage", "coverage of 95% CIs for q", "(b) interval coverage")],
    "fig4": [("kappa_rmse", "RMSE of κ", "(a) sensitivity RMSE"),
             ("kendall_tau", "Kendall τ_b with true order", "(b) ranking recovery")],
}


def _panel(ax, grp, methods, colour, metric, ylabel, title):
    for m in methods:
        rows = grp[grp.method == m].sort_values("n")
        if rows.empty:
            continue
        kinds = [("coverage_cluster", "-", ""), ("coverage_model", "--", " (model)")] \
            if metric == "coverage" else [(metric, "-", "")]
        for col, style, suffix in kinds:
            yerr = np.vstack([rows[col] - rows[f"{col}_lo"], rows[f"{col}_hi"] - rows[col]])
            ax.errorbar(rows.n, rows[col], yerr=yerr, color=colour[m], linestyle=style,
                        marker="o", markersize=3, capsize=2, label=m + suffix)
    if metric == "coverage":
        ax.axhline(0.95, color=GREY, linestyle=":", linewidth=1)
    ns = sorted(grp.n.unique())
    ax.set_xscale("log")
    ax.set_xticks(ns)
    ax.set_xticklabels([f"{n:,}" for n in ns])
    ax.minorticks_off()
    ax.set_xlabel("N (judgments)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def plot_sweep(result, out_dir, level: float = 0.95) -> list[Path]:
    """PNG figures against N for every (c, ρ) with at least two N (Figures 3 and 4).

    ``result``: a :class:`~oscar_jax.sweep.SweepResult` (its ``methods``, ``reps`` and
    ``table(level)``). ``simulation_fig3_c{c}_rho{ρ}.png``: (a) q RMSE, (b) coverage
    (cluster solid, model-based dashed, nominal 95% dotted); ``simulation_fig4_…``:
    (a) κ RMSE, (b) Kendall τ_b. Error bars are the t intervals of ``table``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tab = result.table(level)
    colour = {m: SERIES[i % len(SERIES)] for i, m in enumerate(result.methods)}
    written = []
    for (c, rho), grp in tab.groupby(["c", "rho"], sort=False):
        if grp.n.nunique() < 2:
            continue
        for fig_name, spec in PANELS.items():
            fig = new_figure(10, 4.8)
            axes = fig.subplots(1, 2)
            for ax, (metric, ylabel, title) in zip(axes, spec):
                _panel(ax, grp, result.methods, colour, metric, ylabel, title)
            # One legend below both panels: inside a panel it covered the J line.
            handles = {}
            for ax in axes:
                for h, lab in zip(*ax.get_legend_handles_labels()):
                    handles.setdefault(lab, h)
            fig.legend(list(handles.values()), list(handles), loc="outside lower center", fontsize=8,
                       ncol=min(len(handles), 5), frameon=False)
            fig.suptitle(f"Simulation, c = {c:g}, ρ = {rho:g}, {result.reps} replicates")
            path = out / f"simulation_{fig_name}_c{c:g}_rho{rho:g}.png"
            save_png(fig, path)
            written.append(path)
    return written
