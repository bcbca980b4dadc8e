"""Smaller first-hour fixes: note order with draw-based intervals, proportions' intervals, flag names."""

from __future__ import annotations

from pathlib import Path

import pytest

from oscar_jax.cli import main
from oscar_jax.sweep import wilson_interval

DATA = Path(__file__).resolve().parent / "data"
BATTLES = str(DATA / "eco_arena.csv")


def test_wilson_interval_stays_in_the_unit_interval():
    lo, hi = wilson_interval(97, 100)
    assert lo == pytest.approx(0.91548, abs=1e-4) and hi == pytest.approx(0.98975, abs=1e-4)
    assert wilson_interval(100, 100)[1] == 1.0 and wilson_interval(0, 100)[0] == 0.0
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(1 - hi, abs=1e-12)  # symmetric at one half


def test_bootstrap_note_comes_before_the_sandwich_tables(capsys):
    assert main(["fit", BATTLES, "--model", "j+p", "--ci", "bootstrap", "--replicates", "20", "--scale", "elo"]) == 0
    out = capsys.readouterr().out
    note = out.index("note: bootstrap percentile intervals")
    assert note < out.index("Judges (") and note > out.index("Rank (UB)")
    assert max(len(line) for line in out.splitlines()) <= 100
