"""Forest plot of audit effects with intervals (PNG).

Drawn on a ``matplotlib.figure.Figure`` with the Agg canvas directly, as every oscar_jax
figure: no pyplot, so no global backend or figure state is touched.
"""

from __future__ import annotations

import numpy as np

from ..report.figures import OKABE_ITO, SERIES, new_figure, save_png
from .inference import METRIC_LABEL, PERCENT_METRICS

__all__ = ["OKABE_ITO", "plot_effects"]

_METHOD_LABEL = {"ttest_runs": "t-test across runs (paper)", "bootstrap_items": "paired item bootstrap",
                 "bayes_ordinal": "Bayesian ordinal model", "bayes_logit": "Bayesian logit model"}
_MARKERS = {"ttest_runs": "s", "bootstrap_items": "o", "bayes_ordinal": "D", "bayes_logit": "D"}


def plot_effects(result, path, methods=("ttest_runs", "bootstrap_items", "bayes_ordinal", "bayes_logit")):
    """One panel per metric; conditions on the y axis, one colour and marker per method.

    Returns the written path.
    """
    eff = result.effects_frame
    eff = eff[eff["method"].isin(methods) & (np.isfinite(eff["lo"]) | np.isfinite(eff["hi"]))]
    metrics = list(dict.fromkeys(eff["metric"]))
    if not metrics:
        metrics = ["none"]
    # Room for every condition's label: the height grows with the longest condition list.
    n_cond = max([eff.loc[eff["metric"] == m, "condition"].nunique() for m in metrics] + [8])
    fig = new_figure(4.2 * len(metrics) + 1.5, 0.45 * n_cond + 1.6, layout=None)
    axes = fig.subplots(1, len(metrics), squeeze=False)
    colour = {m: SERIES[i % len(SERIES)] for i, m in enumerate(methods)}
    for ax, metric in zip(axes[0], metrics):
        block = eff[eff["metric"] == metric]
        conds = list(dict.fromkeys(block["condition"]))
        pct = metric in PERCENT_METRICS
        scale = 100.0 if pct else 1.0
        present = [m for m in methods if m in set(block["method"])]
        for j, method in enumerate(present):
            rows = block[block["method"] == method]
            y = np.array([conds.index(c) for c in rows["condition"]], float)
            y = y + (j - (len(present) - 1) / 2) * 0.18
            est = rows["estimate"].to_numpy(float) * scale
            lo = rows["lo"].to_numpy(float) * scale
            hi = rows["hi"].to_numpy(float) * scale
            # One-sided intervals are drawn to the data edge, not to infinity.
            span = np.nanmax(np.abs(np.concatenate([est, lo[np.isfinite(lo)], hi[np.isfinite(hi)]]))) or 1.0
            lo = np.where(np.isfinite(lo), lo, est - 2 * span)
            hi = np.where(np.isfinite(hi), hi, est + 2 * span)
            ax.errorbar(est, y, xerr=[est - lo, hi - est], fmt=_MARKERS.get(method, "o"), color=colour[method],
                        capsize=2.5, lw=1.2, ms=5, label=_METHOD_LABEL.get(method, method))
        ax.axvline(0.0, color="0.4", lw=0.8, ls="--")
        ax.set_yticks(range(len(conds)))
        ax.set_yticklabels(conds)
        ax.invert_yaxis()
        base = block["baseline"].iloc[0] if len(block) else result.reference
        if pct:
            ax.set_xlabel(f"{METRIC_LABEL.get(metric, metric)}: condition − {base} (percentage points)")
        else:
            ax.set_xlabel(f"effect δ vs {base} ({METRIC_LABEL.get(metric, metric)})")
        ax.set_title(METRIC_LABEL.get(metric, metric))
        ax.grid(axis="x", color="0.9")
    axes[0][0].set_ylabel(result.data.attribute or "condition")
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle(f"Condition effects vs {result.reference} ({int(100 * result.ci_prob)}% intervals)")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    return save_png(fig, path)
