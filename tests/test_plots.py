"""Figures: each writes a real PNG from a FitResult or from plain interval tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

import oscar_jax as oj
from oscar_jax.attenuation import attenuation
from oscar_jax.report.leaderboard import arena_leaderboard
from oscar_jax.report.plots import OKABE_ITO, attenuation_scatter, forest_plot, judge_panel, win_heatmap, write_fit_plots
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_real_png(path: Path, min_side: int = 250):
    """A PNG with content: not blank, not a single colour, at a readable size."""
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = imread(path)
    assert min(image.shape[:2]) >= min_side
    rgb = image[..., :3].reshape(-1, 3)
    assert rgb.std() > 0.05
    # Text, markers and axes give many distinct colours; a blank canvas gives one.
    assert len(np.unique((rgb * 255).astype(np.uint8), axis=0)) > 20


@pytest.fixture(scope="module")
def fits():
    pos = oj.fit(ARENA_EXAMPLE, "j+p")
    return pos, oj.fit(pos.design, "j")


def test_write_fit_plots_from_fits(fits, tmp_path):
    pos, j = fits
    board = arena_leaderboard(pos, scale="elo", anchor="gpt-4-0314")
    written = write_fit_plots(pos, tmp_path, board=board, j_fit=j)
    assert sorted(written) == ["attenuation", "forest", "judge_panel", "win_heatmap"]
    for path in written.values():
        assert path.parent == tmp_path
        assert_real_png(path)


def test_plots_from_plain_tables(fits, tmp_path):
    """Bootstrap/Bayes commands pass their own (asymmetric) intervals as tables."""
    pos, j = fits
    table = pd.DataFrame({"candidate": ["a", "b", "c"], "score": [0.4, 0.0, -0.4],
                          "score_lo": [0.1, -0.5, -0.6], "score_hi": [0.9, 0.2, -0.3]})
    assert_real_png(forest_plot(table, tmp_path / "forest.png", xlabel="logit"))
    q = np.array([[0.5, 0.6, 0.7], [0.4, 0.5, 0.6], [0.3, 0.4, 0.5]])
    assert_real_png(win_heatmap(q, tmp_path / "heat.png", names=["a", "b", "c"], lo=q - 0.1, hi=q + 0.1))
    long = pos.win_matrix()
    assert_real_png(win_heatmap(long, tmp_path / "heat_long.png"))
    assert_real_png(judge_panel(pos.judges(), tmp_path / "judges.png", j_fit=j.judges(), model_name="J+P"))
    assert_real_png(attenuation_scatter(attenuation(j, pos), tmp_path / "att.png"))
    with pytest.raises(OscarInputError, match="names="):
        win_heatmap(q, tmp_path / "bad.png")
    with pytest.raises(OscarInputError, match="adjusted="):
        attenuation_scatter(j, tmp_path / "bad.png")


def test_palette_is_okabe_ito():
    assert OKABE_ITO[:3] == ("#000000", "#E69F00", "#56B4E9") and len(OKABE_ITO) == 8
