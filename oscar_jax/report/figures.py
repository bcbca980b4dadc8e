"""Figures without pyplot, in one palette, with labels that overlap nothing.

Every figure is a ``matplotlib.figure.Figure`` on its own Agg canvas (:func:`new_figure`),
saved atomically (:func:`save_png`): no global backend switch and no figure registry, so
nothing is left open between calls, and figures can be drawn from threads and in a process
that already uses pyplot elsewhere.

The palette is Okabe & Ito (2008), "Color universal design": its eight colours stay
distinguishable under the common colour-vision deficiencies. ``OKABE_ITO`` lists them in
the published order (black first, for single-series plots); ``SERIES`` is the order for
several series (methods, interval kinds), starting with the colours that differ most;
``COLOURS`` names each. Diverging maps (win probabilities) use matplotlib's ``RdBu``,
readable in grey scale as distance from ½.

Matplotlib places an annotation wherever it is told, so dense scatters (many judges near
κ ratio 1) print stacks of unreadable text, and labels land on legends. :func:`place_labels`
measures each candidate position of each label with the figure's renderer and keeps the
first that stays inside the axes and clear of the other labels, the markers and the
legend; a label with no free position is left out and reported, never drawn on top of
another.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

__all__ = ["COLOURS", "DPI", "GREY", "OKABE_ITO", "SERIES", "freeze_layout", "new_figure", "place_labels", "save_png"]

OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
COLOURS = {"black": OKABE_ITO[0], "orange": OKABE_ITO[1], "sky": OKABE_ITO[2], "green": OKABE_ITO[3],
           "yellow": OKABE_ITO[4], "blue": OKABE_ITO[5], "vermillion": OKABE_ITO[6], "purple": OKABE_ITO[7]}
GREY = "#7F7F7F"  # reference lines and secondary marks, outside the eight data colours
SERIES = tuple(COLOURS[c] for c in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black"))
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


# Offsets tried, in points, nearest first: the four diagonals, then the sides, then farther out.
_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
_ALIGN = {1: "left", -1: "right", 0: "center"}
_VALIGN = {1: "bottom", -1: "top", 0: "center"}


def freeze_layout(fig) -> None:
    """Run the layout engine once and fix the axes where it put them.

    Label positions are measured in display units; a later layout pass (constrained
    layout runs again at save time) could move the axes under the labels.
    """
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def _overlaps(box: Bbox, others) -> bool:
    return any(box.x0 < o.x1 and o.x0 < box.x1 and box.y0 < o.y1 and o.y0 < box.y1 for o in others)


def place_labels(ax, xs, ys, names, *, fontsize: float = 7.0, marker_px: float = 4.0, pad: float = 3.0,
                 avoid=()) -> list[str]:
    """Label the points (xs, ys) of ``ax`` without overlaps; return the names left out.

    Call it after everything else is drawn on the figure (it freezes the layout).
    ``avoid`` adds artists (e.g. a legend) whose extents labels must keep clear of; the
    axes' own legend is always avoided.
    """
    fig = ax.figure
    freeze_layout(fig)
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    blocked = [a.get_window_extent(renderer) for a in avoid]
    if ax.get_legend() is not None:
        blocked.append(ax.get_legend().get_window_extent(renderer))
    pts = []
    for x0, y0 in zip(xs, ys):
        ok = np.isfinite(x0) and np.isfinite(y0)
        pts.append(ax.transData.transform((x0, y0)) if ok else None)
    blocked += [Bbox.from_extents(p[0] - marker_px, p[1] - marker_px, p[0] + marker_px, p[1] + marker_px)
                for p in pts if p is not None]
    # Isolated points first: they have free positions; crowded ones take what is left.
    crowd = [np.inf if p is None else sum(1 for q in pts if q is not None and np.hypot(*(p - q)) < 40) for p in pts]
    left_out = []
    for k in np.argsort(crowd, kind="mergesort"):
        if pts[k] is None:
            continue
        placed = None
        for reach in (1.0, 2.2, 3.6):
            for dx, dy in _DIRECTIONS:
                off = (dx * pad * reach + dx * (marker_px / 2), dy * pad * reach + dy * (marker_px / 2))
                text = ax.annotate(str(names[k]), (xs[k], ys[k]), xytext=off, textcoords="offset points",
                                   fontsize=fontsize, ha=_ALIGN[dx], va=_VALIGN[dy], annotation_clip=False)
                box = text.get_window_extent(renderer)
                inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
                if inside and not _overlaps(box, blocked):
                    placed = box
                    break
                text.remove()
            if placed is not None:
                break
        if placed is None:
            left_out.append(str(names[k]))
        else:
            blocked.append(placed)
    return left_out
