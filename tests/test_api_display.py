"""The Python API a notebook user meets: short repr, HTML repr, notes as warnings, wide win matrix."""

from __future__ import annotations

import importlib
import inspect
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import oscar_jax as oj
from helpers import ARENA_EXAMPLE

fit_module = importlib.import_module("oscar_jax.fit")  # the module (oscar_jax.fit is the function)

DATA = Path(__file__).resolve().parent / "data"
BATTLES = ARENA_EXAMPLE


@pytest.fixture(scope="module")
def result():
    return oj.fit(BATTLES, "oscar")  # the data have no lengths: a "length term dropped" note


def test_repr_is_short_and_informative(result):
    text = repr(result)
    assert len(text) < 600 and "\n" not in text
    assert text.startswith("<FitResult OSCAR: 240 records, 20 prompts, 4 candidates, 2 judges; checks passed")
    assert "1 note(s) in .notes" in text
    top = result.leaderboard().candidate[0]
    assert f"top (average-judge logit): {top} +" in text


def test_repr_html_is_valid_and_lists_the_board(result):
    page = result._repr_html_()
    cells = []

    class Cells(HTMLParser):
        def handle_data(self, data):
            cells.append(data)

    Cells().feed(page)
    assert set(result.design.candidates) <= set(cells)
    assert any("length term dropped" in c for c in cells)
    x = result.gamma_bar * result.scores
    assert f"{x.max():.3f}" in cells


def test_notes_warn_once_per_session(monkeypatch):
    monkeypatch.setattr(fit_module, "_NOTES_SHOWN", set())
    with pytest.warns(oj.OscarNoteWarning, match="length term dropped"):
        oj.fit(BATTLES, "oscar")
    with warnings.catch_warnings():
        warnings.simplefilter("error", oj.OscarNoteWarning)
        oj.fit(BATTLES, "oscar")  # the same note again: no second warning
        oj.fit(BATTLES, "oscar", warn=False)


def test_every_fit_parameter_is_documented():
    doc = inspect.cleandoc(oj.fit.__doc__)
    for name, param in inspect.signature(oj.fit).parameters.items():
        name = f"**{name}" if param.kind == param.VAR_KEYWORD else name
        assert f"\n{name}\n" in doc or f"\n{name}, " in doc, name
    # The set-up keywords fit passes on to prepare are each named in its documentation.
    from oscar_jax.io.data import load_judgments

    setup = ["ridge", "reference_judge", "family_map", "covariates",
             *(k for k in inspect.signature(load_judgments).parameters if k not in ("source", "keep_columns"))]
    assert [k for k in setup if f"``{k}``" not in doc] == []
    assert "Elo" in doc and "average-judge logit" in doc


def test_win_matrix_wide(result):
    wide = result.win_matrix(wide=True)
    order = np.argsort(-result.scores, kind="mergesort")
    names = [result.design.candidates[i] for i in order]
    assert list(wide.index) == names and list(wide.columns) == names
    assert np.isnan(np.diag(wide.to_numpy())).all()
    q = wide.to_numpy()
    off = ~np.eye(len(names), dtype=bool)
    np.testing.assert_allclose(q[off] + q.T[off], 1.0, atol=1e-12)
    long = result.win_matrix()
    row = long[(long.a == names[0]) & (long.b == names[1])].iloc[0]
    assert wide.iloc[0, 1] == pytest.approx(row.q, abs=1e-12)
