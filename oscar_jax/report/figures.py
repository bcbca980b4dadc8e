"""Figures without pyplot: a ``matplotlib.figure.Figure`` on its own Agg canvas, saved atomically.

No global backend switch and no figure registry: nothing is left open between calls, and
figures can be drawn from threads and in a process that already uses pyplot elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["DPI", "new_figure", "save_png"]

DPI = 120


def new_figure(width: float, height: float, *, layout: str | None = "constrained") -> Figure:
    """A Figure of ``width`` × ``height`` inches on an Agg canvas (constrained layout by default)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path) -> Path:
    """Write ``fig`` as PNG to ``path`` (atomically: a reader never sees a partial file)."""
    from ..runtime.validate import atomic_write

    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI))
