"""Smaller first-hour fixes: note order with draw-based intervals, proportions' intervals, flag names."""

from __future__ import annotations

from pathlib import Path

import pytest

from oscar_jax.cli.main import main
from oscar_jax.sweep.tables import wilson_interval
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
BATTLES = str(ARENA_EXAMPLE)


def test_wilson_interval_stays_in_the_unit_interval():
    lo, hi = wilson_interval(97, 100)
    assert lo == pytest.approx(0.91548, abs=1e-4) and hi == pytest.approx(0.98975, abs=1e-4)
    assert wilson_interval(100, 100)[1] == 1.0 and wilson_interval(0, 100)[0] == 0.0
    assert all(v != v for v in wilson_interval(5, 4))  # not a proportion: NaN, never a number
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(1 - hi, abs=1e-12)  # symmetric at one half


def test_bootstrap_note_comes_before_the_sandwich_tables(capsys):
    assert main(["fit", BATTLES, "--model", "j+p", "--ci", "bootstrap", "--replicates", "20", "--scale", "elo"]) == 0
    out = capsys.readouterr().out
    note = out.index("note: bootstrap percentile intervals")
    assert note < out.index("Judges (") and note > out.index("Rank (UB)")
    assert max(len(line) for line in out.splitlines()) <= 100


def test_small_data_says_so_and_suggests_the_smaller_model(capsys):
    import json

    base = ["fit", str(DATA / "eco_arenahard.jsonl"), "--baseline", "gpt-4-0314", "--strong-weight", "3",
            "--scale", "elo", "--format", "json"]
    assert main(base) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    small = [n for n in notes if n.startswith("small data for this model")]
    assert len(small) == 1 and "Try --model j+p" in small[0] and "own-family" in small[0]
    ratio = float(small[0].split("make the intervals ")[1].split("×")[0])
    assert ratio > 1.5
    assert any("every Rank (UB) is 1" in n for n in notes)
    assert any(n.startswith("--strong-weight 3 counts each strong verdict") for n in notes)
    assert main(base + ["--model", "j+p"]) == 0  # the suggested model draws no such note
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert not any(n.startswith("small data") for n in notes)
