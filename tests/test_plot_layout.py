"""Every figure renders at 3, 10 and 25 judges/candidates with no two text boxes overlapping.

Text extents come from matplotlib's renderer: every Text drawn in the figure's final draw
(tick labels, titles, legends, point labels, heatmap cells) is measured in pixels and the
boxes are compared pairwise.
"""

from __future__ import annotations

import itertools
import types

import matplotlib.figure
import matplotlib.text
import numpy as np
import pandas as pd
import pytest

from oscar_jax.report.figures import OKABE_ITO, SERIES, place_labels
from oscar_jax.report.plots import attenuation_scatter, forest_plot, judge_panel, win_heatmap
from oscar_jax.sweep import SweepResult

SIZES = (3, 10, 25)
ORGS = ("meta-llama", "mistralai", "Qwen", "google", "zai-org", "")


class Drawn:
    """Records the figures saved and the texts drawn in each figure's last draw."""

    def __init__(self, monkeypatch):
        self.figures, self.texts, self.renderers = [], {}, {}
        drawn = self
        fig_draw, text_draw, savefig = (matplotlib.figure.Figure.draw, matplotlib.text.Text.draw,
                                        matplotlib.figure.Figure.savefig)

        def draw_fig(fig, renderer):
            drawn.texts[id(fig)] = []
            drawn.renderers[id(fig)] = renderer
            drawn._current = fig
            return fig_draw(fig, renderer)

        def draw_text(text, renderer):
            out = text_draw(text, renderer)
            fig = getattr(drawn, "_current", None)
            if fig is not None and text.get_visible() and text.get_text().strip():
                drawn.texts[id(fig)].append((text, text.get_window_extent(renderer)))
            return out

        def save(fig, *args, **kwargs):
            drawn.figures.append(fig)
            return savefig(fig, *args, **kwargs)

        monkeypatch.setattr(matplotlib.figure.Figure, "draw", draw_fig)
        monkeypatch.setattr(matplotlib.text.Text, "draw", draw_text)
        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", save)

    def last(self):
        fig = self.figures[-1]
        return fig, self.texts[id(fig)]


def overlaps(boxes, tol: float = 0.5):
    """Pairs of drawn texts whose boxes intersect by more than ``tol`` pixels each way."""
    out = []
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        if min(a.x1, b.x1) - max(a.x0, b.x0) > tol and min(a.y1, b.y1) - max(a.y0, b.y0) > tol:
            out.append((ta.get_text(), tb.get_text()))
    return out


@pytest.fixture
def drawn(monkeypatch):
    return Drawn(monkeypatch)


def names(n, stem="model"):
    """Realistic names up to 24 characters (shown unshortened): organisation prefixes, long and short."""
    out = []
    for i in range(n):
        org = ORGS[i % len(ORGS)]
        base = f"{stem}-{i}-inst" if i % 3 else f"{stem}{i}"
        out.append(f"{org}/{base}" if org else base)
    assert max(map(len, out)) <= 24
    return out


def check(drawn, min_texts: int):
    fig, texts = drawn.last()
    assert len(texts) >= min_texts
    assert overlaps(texts) == []
    return fig, texts


@pytest.mark.parametrize("n", SIZES)
def test_forest(drawn, tmp_path, n):
    rng = np.random.default_rng(n)
    score = np.sort(rng.normal(size=n))[::-1]
    table = pd.DataFrame({"candidate": names(n), "score": score, "score_lo": score - 0.3, "score_hi": score + 0.3})
    forest_plot(table, tmp_path / "forest.png")
    check(drawn, n + 3)


@pytest.mark.parametrize("n", SIZES)
def test_win_heatmap(drawn, tmp_path, n):
    s = np.linspace(1.5, -1.5, n)
    q = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))
    win_heatmap(q, tmp_path / "heat.png", names=names(n), lo=q - 0.05, hi=np.minimum(q + 0.05, 1.0))
    fig, texts = check(drawn, n * (n - 1))
    cells = [t for t, _ in texts if t in fig.axes[0].texts]
    assert len(cells) == n * (n - 1)
    assert {t.get_fontsize() for t in cells} == {8.0}  # readable at any size, 20 models included


@pytest.mark.parametrize("n", SIZES)
def test_judge_panel(drawn, tmp_path, n):
    rng = np.random.default_rng(n)
    # Crowded on purpose: most judges have κ near 1 under both models, as on real data.
    kappa = 1.0 + 0.05 * rng.normal(size=n)
    d = rng.uniform(-0.3, 0.5, size=n)
    judges = names(n, "judge")
    table = pd.DataFrame({"judge": judges, "kappa": kappa, "kappa_lo": kappa - 0.2, "kappa_hi": kappa + 0.2,
                          "D": d, "D_lo": d - 0.1, "D_hi": d + 0.1, "beta_pos": 2 * np.arctanh(d),
                          "beta_len": rng.normal(0, 0.2, n), "beta_fam": rng.normal(0, 0.3, n)})
    j_table = table.assign(kappa=kappa * (1 - d ** 2), kappa_lo=kappa * (1 - d ** 2) - 0.2,
                           kappa_hi=kappa * (1 - d ** 2) + 0.2)
    judge_panel(table, tmp_path / "judges.png", j_fit=j_table, model_name="OSCAR")
    fig, texts = check(drawn, n + 6)
    shown = [t.get_text() for t, _ in texts]
    # Judge names appear once as tick labels (panel (b)); panel (c) shares them.
    for name in judges:
        assert shown.count(name) <= 2  # tick label in (b), at most one point label in (a)
    assert sum(name in shown for name in judges) == n
    if n == 3:  # room for every point label
        assert all(shown.count(name) == 2 for name in judges)


@pytest.mark.parametrize("n", SIZES)
def test_attenuation(drawn, tmp_path, n):
    rng = np.random.default_rng(n)
    d = rng.uniform(0.0, 0.45, size=n)
    predicted = 1 - d ** 2
    ratio = predicted * np.exp(rng.normal(0, 0.03, size=n))
    table = pd.DataFrame({"judge": names(n, "judge"), "predicted": predicted, "ratio": ratio,
                          "log_discrepancy": np.log(ratio) - np.log(predicted)})
    attenuation_scatter(table, tmp_path / "att.png")
    fig, texts = check(drawn, 5)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    for legend in fig.legends:  # the legend sits outside the data area
        box = legend.get_window_extent(renderer)
        assert box.y1 <= frame.y0 + 0.5
    labelled = [t.get_text() for t, _ in texts if t.get_text() in set(table.judge)]
    assert len(labelled) >= min(n, 3)
    note = [t.get_text() for t, _ in texts if "unlabelled" in t.get_text()]
    assert len(labelled) + sum(int(s.split()[0]) for s in note) == n  # every judge labelled or counted


def _sweep_stub(methods):
    rows = []
    for m_i, m in enumerate(methods):
        for n in (1000, 3000, 10000):
            row = {"n": n, "c": 1.0, "rho": 0.6, "method": m}
            for metric, base in (("q_rmse", 0.1), ("coverage_cluster", 0.93), ("coverage_model", 0.85),
                                 ("kappa_rmse", 0.2), ("kendall_tau", 0.8)):
                v = base * (1 + 0.02 * m_i) * (1 if "coverage" in metric or metric == "kendall_tau" else 3000 / n)
                row.update({metric: v, f"{metric}_lo": v - 0.01, f"{metric}_hi": v + 0.01})
            rows.append(row)
    frame = pd.DataFrame(rows)
    return types.SimpleNamespace(methods=tuple(methods), reps=10, table=lambda level=0.95: frame)


@pytest.mark.parametrize("n_methods", (3, 8))
def test_simulation_figures_keep_legend_off_the_lines(drawn, tmp_path, n_methods):
    """Fig. 3(b): the legend sits below the panels, so it covers no line (e.g. J's)."""
    methods = ["J", "J+P", "J+L", "J+F", "OSCAR", "BT+PLF", "Davidson+PLF", "J+P+L"][:n_methods]
    written = SweepResult.plot(_sweep_stub(methods), tmp_path)
    assert len(written) == 2 and len(drawn.figures) == 2
    for fig in drawn.figures:
        texts = drawn.texts[id(fig)]
        assert overlaps(texts) == []
        renderer = drawn.renderers[id(fig)]  # pyplot swaps the canvas out on close
        assert len(fig.legends) == 1
        box = fig.legends[0].get_window_extent(renderer)
        for ax in fig.axes:
            frame = ax.get_window_extent(renderer)
            assert box.y1 <= frame.y0 + 0.5


def test_place_labels_reports_what_does_not_fit(tmp_path):
    """Fifty points on one spot: a few labels fit, the rest are returned, none overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = matplotlib.figure.Figure(figsize=(3, 3), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xlim(0, 2)
    ax.set_ylim(0, 2)
    left_out = place_labels(ax, np.ones(50), np.ones(50), [f"judge {i}" for i in range(50)])
    renderer = fig.canvas.get_renderer()
    boxes = [(t, t.get_window_extent(renderer)) for t in ax.texts]
    assert 1 <= len(boxes) < 50 and len(boxes) + len(left_out) == 50
    assert overlaps(boxes) == []


def test_one_palette():
    assert OKABE_ITO[:3] == ("#000000", "#E69F00", "#56B4E9") and len(OKABE_ITO) == 8
    assert set(SERIES) == set(OKABE_ITO)
    from oscar_jax.report import plots
    from oscar_jax.audit import plot as audit_plot

    assert plots.OKABE_ITO is OKABE_ITO
    assert set(audit_plot.OKABE_ITO) == set(OKABE_ITO)
