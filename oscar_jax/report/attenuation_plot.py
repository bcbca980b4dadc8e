"""The attenuation figure (the paper's Fig. 1(c)): observed κ ratio without/with position against 1 − D²."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .figures import COLOURS, new_figure, place_labels, save_png
from .render import shorten_names
from ..runtime.validate import OscarInputError

__all__ = ["attenuation_scatter"]


def attenuation_scatter(table, path, *, adjusted=None, title: str | None = None) -> Path:
    """Observed κ ratio without/with position against the predicted attenuation 1 − D².

    Parameters
    ----------
    table
        Output of :func:`oscar_jax.attenuation.attenuation` (columns ``judge``,
        ``ratio``, ``predicted``), or the naive (no-position) FitResult together with
        ``adjusted=`` (a fit with the position term on the same data).
    """
    from ..attenuation import attenuation, median_abs_log_discrepancy

    if adjusted is not None:
        table = attenuation(table, adjusted)
    elif not hasattr(table, "columns"):
        raise OscarInputError("attenuation_scatter(naive_fit, path) needs adjusted= (a fit with the position term)")
    x = table["predicted"].to_numpy(dtype=float)
    y = table["ratio"].to_numpy(dtype=float)
    names = shorten_names(table["judge"].astype(str), 24)
    fig = new_figure(6.4, 6.4)
    ax = fig.add_subplot()
    ax.set_box_aspect(1.0)
    # Ratios live on log axes (the paper's Fig. 1(c)): a ratio r and 1/r lie equally far from
    # the diagonal, and the many judges near (1, 1) spread out.
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    ax.scatter(x[ok], y[ok], color=COLOURS["blue"], s=30, zorder=3)
    finite = np.concatenate([x[ok], y[ok], [1.0]])
    lo, hi = float(finite.min()) / 1.12, float(finite.max()) * 1.12
    ax.plot([lo, hi], [lo, hi], color="0.4", linestyle="--", linewidth=1, label="observed = predicted (Eq. 5)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    _ratio_ticks(ax, lo, hi)
    ax.set_xlabel("predicted attenuation 1 − D²  (D from the fit with position)")
    ax.set_ylabel("observed κ ratio: without / with position")
    ax.grid(color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    med = median_abs_log_discrepancy(table)
    ax.set_title(title or f"Attenuation by omitted position\n(median |log discrepancy| {med:.3f}; log axes)",
                 fontsize=10)
    fig.legend(loc="outside lower center", fontsize=8, frameon=False)
    # The corner note is laid out first (at its longest) so that labels keep clear of it.
    note = ax.text(0.98, 0.02, f"{len(names)} crowded points unlabelled", transform=ax.transAxes, ha="right",
                   va="bottom", fontsize=6.5, color="0.4")
    left_out = place_labels(ax, x[ok], y[ok], [n for n, o in zip(names, ok) if o], fontsize=6.5, avoid=[note])
    if left_out:
        note.set_text(f"{len(left_out)} crowded point{'s' if len(left_out) > 1 else ''} unlabelled")
    else:
        note.remove()
    return save_png(fig, path)


_NICE_RATIOS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0,
                10.0, 20.0, 50.0, 100.0)


def _ratio_ticks(ax, lo: float, hi: float, most: int = 7):
    """Plain-number ticks (0.5, 0.8, 1, 1.25, …) on log ratio axes, thinned to ``most``."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ticks = [t for t in _NICE_RATIOS if lo <= t <= hi]
    while len(ticks) > most:
        ticks = ticks[::2] if 1.0 in ticks[::2] else ticks[1::2]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_locator(NullLocator())
