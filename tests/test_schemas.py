"""Ecosystem input conventions: each one reads into the same records and the same fit.

The files in tests/data (see make_ecosystem_files.py) hold one synthetic set of 240
judgments written in every convention; crowd-kit has no ties, so it gets the same
records with ties resolved, next to an oscar-schema copy of those.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.io.data import load_arena_hard, load_judgments
from oscar_jax.io.schemas import detect_schema
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
# Same records coded differently give the same cells and statistics; only the order of
# floating-point sums could differ, so θ̂ and its covariance agree to rounding.
SAME_FIT_ATOL = 1e-10
MODEL = "j+p"  # position is in the model, so a swapped display order would show up

FOREIGN = {
    "arena": (ARENA_EXAMPLE, "eco_oscar.csv"),
    "evalica": ("eco_evalica.csv", "eco_oscar.csv"),
    "alpacaeval": ("eco_alpacaeval.json", "eco_oscar.csv"),
    "arena-hard": ("eco_arenahard.jsonl", "eco_oscar.csv"),
    "crowdkit": ("eco_crowdkit.csv", "eco_noties_oscar.csv"),
}


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a fit uses; prompt ids differ by convention (instruction text vs id)."""
    out = frame[["candidate_a", "candidate_b", "judge", "outcome", "weight"]].copy()
    out["cluster"] = pd.factorize(frame["prompt"])[0]
    return out.reset_index(drop=True)


@pytest.fixture(scope="module")
def own_fits():
    return {name: oj.fit(DATA / name, MODEL) for name in ("eco_oscar.csv", "eco_noties_oscar.csv")}


@pytest.mark.parametrize("schema", sorted(FOREIGN))
def test_detected_and_same_records_as_own_schema(schema):
    foreign, own = FOREIGN[schema]
    frame, report = load_judgments(DATA / foreign)
    assert report.schema == schema
    ref, _ = load_judgments(DATA / own)
    pd.testing.assert_frame_equal(canonical(frame), canonical(ref))


@pytest.mark.parametrize("schema", sorted(FOREIGN))
def test_same_fit_as_own_schema(schema, own_fits):
    foreign, own = FOREIGN[schema]
    result = oj.fit(DATA / foreign, MODEL)
    ref = own_fits[own]
    assert result.design.candidates == ref.design.candidates
    assert result.design.judges == ref.design.judges
    np.testing.assert_allclose(result.theta, ref.theta, rtol=0, atol=SAME_FIT_ATOL)
    np.testing.assert_allclose(result.covariance("sandwich"), ref.covariance("sandwich"), rtol=0, atol=SAME_FIT_ATOL)
    assert result.objective == pytest.approx(ref.objective, rel=1e-12)
    # The position effect is real in the synthetic data (gpt-4-turbo prefers slot A).
    assert result.judges().set_index("judge").loc["gpt-4-turbo", "D"] > 0.1


def test_arena_hard_strong_weight_equals_weighted_records(own_fits):
    result = oj.fit(load_arena_hard(DATA / "eco_arenahard.jsonl", strong_weight=3)[0], MODEL)
    own = pd.read_csv(DATA / "eco_oscar.csv")
    own["weight"] = np.where(own.verdict.str.contains(">>"), 3.0, 1.0)
    ref = oj.fit(own, MODEL)
    np.testing.assert_allclose(result.theta, ref.theta, rtol=0, atol=SAME_FIT_ATOL)
    # Upweighting '>>' counts each such verdict three times, so the fit really changes.
    assert np.max(np.abs(result.theta - own_fits["eco_oscar.csv"].theta)) > 1e-3


def test_arena_hard_displayed_order_and_baseline():
    rows = [{"question_id": "q1", "model": "m", "judge": "j",
             "games": [{"score": "A>B"}, {"score": "A>>B"}]}]
    frame, report = load_arena_hard(rows, baseline="base")
    # Game 1 shows the baseline first, game 2 the model first: keep those slots.
    assert frame[["candidate_a", "candidate_b"]].values.tolist() == [["base", "m"], ["m", "base"]]
    assert frame.outcome.tolist() == [1.0, 1.0]
    assert frame.prompt.nunique() == 1 and report.n_input == 2
    with pytest.raises(OscarInputError, match="baseline"):
        load_judgments(rows)
    with pytest.raises(OscarInputError, match=r"differs from baseline='other'"):
        load_arena_hard([dict(rows[0], baseline="base")], baseline="other")


def test_arena_hard_null_games_dropped_and_counted():
    rows = [{"question_id": "q1", "model": "m", "baseline": "b", "games": [{"score": None}, {"score": "B>A"}]},
            {"question_id": "q2", "model": "m", "baseline": "b", "games": [{"score": "B=A"}, {"score": "A<<B"}]}]
    frame, report = load_judgments(rows)
    assert len(frame) == 3 and report.n_input == 4 and report.n_kept == 3
    assert report.dropped["arena-hard games with a null score (format rule)"] == 1
    assert frame.outcome.tolist() == [0.0, 0.5, 0.0]
    bad = [dict(rows[1], games=[{"score": "A>>>B"}])]
    with pytest.raises(OscarInputError, match=r"column 'games' row 1 game 1: unknown verdict 'A>>>B'"):
        load_judgments(bad)


def test_arena_bothbad_kept_apart_or_dropped():
    frame, report = load_judgments(ARENA_EXAMPLE)
    assert report.ties == {"ties": 30, "'tie (bothbad)' ties": 16}
    assert set(frame.loc[frame.tie_kind == "bothbad", "outcome"]) == {0.5}
    dropped, rep2 = load_judgments(ARENA_EXAMPLE, bothbad="drop")
    assert len(dropped) == 240 - 16
    assert rep2.dropped["'tie (bothbad)' records (bothbad='drop')"] == 16


def test_alpacaeval_codes():
    rows = [{"instruction": "x", "generator_1": "base", "generator_2": "m", "preference": p}
            for p in (1, 2, 1.5, 0, 1.25, None)]
    frame, report = load_judgments(rows)
    # 1 → output_1 (slot A) wins, 2 → output_2 wins, 1.5 and legacy 0 → draw, p → 2 − p.
    assert frame.outcome.tolist() == [1.0, 0.0, 0.5, 0.5, 0.75]
    assert frame.tie_kind.tolist() == ["", "", "tie", "tie", ""]
    assert report.dropped["annotations with a null preference (format rule)"] == 1
    assert frame.judge.unique().tolist() == ["alpacaeval"]
    with pytest.raises(OscarInputError, match=r"column 'preference' row 1: 3 is not an AlpacaEval preference"):
        load_judgments([dict(rows[0], preference=3)])


def test_alpacaeval_output_texts_give_lengths():
    rows = [{"instruction": "x", "generator_1": "a", "generator_2": "b", "preference": 1,
             "output_1": "héllo", "output_2": "hi"}]
    frame, _ = load_judgments(rows)
    # Unicode characters, not bytes (Section 3.2).
    assert frame[["len_a", "len_b"]].values.tolist() == [[5.0, 2.0]]


@pytest.mark.parametrize("schema, rows, message", [
    ("arena", {"model_a": ["a"], "model_b": ["b"], "winner": ["draw"]},
     r"column 'winner' row 1: unknown label 'draw'; expected one of .*model_a"),
    ("evalica", {"left": ["a", "a"], "right": ["b", "b"], "winner": ["left", "x"]},
     r"column 'winner' row 2: unknown label 'x'; expected one of \['left', 'right', 'tie'\]"),
    ("crowdkit", {"worker": ["w"], "left": ["a"], "right": ["b"], "label": ["c"]},
     r"column 'label' row 1: 'c' is neither the left item 'a' nor the right item 'b'"),
])
def test_bad_labels_name_column_record_and_fix(schema, rows, message):
    frame = pd.DataFrame(rows)
    assert detect_schema(frame) == schema
    with pytest.raises(OscarInputError, match=message):
        load_judgments(frame)


def test_ambiguous_columns_need_explicit_schema():
    frame = pd.DataFrame({"worker": ["w"], "left": ["a"], "right": ["b"], "label": ["a"], "winner": ["left"]})
    with pytest.raises(OscarInputError, match=r"several schemas .*--schema"):
        load_judgments(frame)
    assert load_judgments(frame, schema="crowdkit")[1].schema == "crowdkit"
    assert load_judgments(frame, schema="evalica")[1].schema == "evalica"
