"""Issue 13: never a confident wrong number (input paths, separation, identification flags)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax import OscarDataWarning, OscarInputError

DATA = Path(__file__).parent / "data"


def _scores(result):
    return dict(zip(result.design.candidates, result.scores))


# ----------------------------------------------------------------------------- row order and index labels
@pytest.mark.parametrize("change", ["sorted", "filtered", "concatenated"])
def test_reordered_dataframe_gives_the_reset_result(change):
    # No 'judge' column (arena) and the outcome attached by position: a sorted frame once
    # got its outcomes attached to the wrong records; filtered/concatenated ones crashed.
    a = pd.read_csv(DATA / "eco_arena.csv").drop(columns="judge")
    if change == "sorted":
        a = a.sort_values("model_b")
    elif change == "filtered":
        a = a[a.index % 3 != 0]
    else:
        a = pd.concat([a, a.iloc[:50]])
    got = oj.fit(a, "j+p", warn=False)
    want = oj.fit(a.reset_index(drop=True), "j+p", warn=False)
    assert _scores(got) == pytest.approx(_scores(want), abs=1e-10)


def test_row_order_does_not_change_the_fit():
    a = pd.read_csv(DATA / "eco_oscar.csv")
    shuffled = a.sample(frac=1.0, random_state=3)
    shuffled.index = shuffled.index[::-1] * 7 + 1000  # arbitrary labels
    r1, r2 = oj.fit(a, "j+p", warn=False), oj.fit(shuffled, "j+p", warn=False)
    assert _scores(r1) == pytest.approx(_scores(r2), abs=1e-8)


# ----------------------------------------------------------------------------- loaders and build_design
def test_xu_null_question_id_is_an_error_as_in_the_oscar_schema():
    rows = [{"question_id": q, "model_a": "x", "model_b": "y", "judge_model": "j", "judge_preferred_model": "a"}
            for q in (1, None, 3)]
    with pytest.raises(OscarInputError, match=r"column 'question_id' row 2: missing prompt id"):
        oj.load_judgments(rows, schema="xu")


def test_row_numbers_count_raw_rows_before_format_drops():
    rows = [{"question_id": i, "model_a": "x", "model_b": "y", "judge_model": "j",
             "judge_preferred_model": "unknown" if i < 5 else ("a" if i != 7 else "zzz")} for i in range(10)]
    with pytest.raises(OscarInputError, match=r"row 8: unknown label 'zzz'"):
        oj.load_judgments(rows, schema="xu")


@pytest.mark.parametrize("column, value, message", [
    ("weight", -1.0, r"column 'weight' row 4: invalid weight -1.0"),
    ("weight", np.nan, r"column 'weight' row 4: invalid weight nan"),
    ("weight", None, r"column 'weight' row 4: invalid weight None"),
    ("candidate_a", None, r"column 'candidate_a' row 4: missing name"),
    ("judge", np.nan, r"column 'judge' row 4: missing name"),
    ("prompt", None, r"column 'prompt' row 4: missing prompt id"),
])
def test_build_design_rejects_what_the_loaders_reject(column, value, message):
    frame, _ = oj.load_judgments(DATA / "eco_oscar.csv")
    frame[column] = frame[column].astype(object)
    frame.loc[3, column] = value
    with pytest.raises(OscarInputError, match=message):
        oj.build_design(frame)


def test_all_zero_weights_are_an_error():
    frame, _ = oj.load_judgments(DATA / "eco_oscar.csv")
    with pytest.raises(OscarInputError, match="every weight is 0"):
        oj.build_design(frame.assign(weight=0.0))


def test_absurd_length_is_rejected_with_row_column_value():
    a = pd.read_csv(DATA / "eco_oscar.csv")
    rng = np.random.default_rng(0)
    a["len_a"] = rng.integers(100, 2000, len(a)).astype(float)
    a["len_b"] = rng.integers(100, 2000, len(a)).astype(float)
    a.loc[5, "len_a"] = 1e300
    with pytest.raises(OscarInputError, match=r"column 'len_a' row 6: length 1e\+300 exceeds"):
        oj.load_judgments(a)


def test_one_dominant_length_warns():
    frame, _ = oj.load_judgments(DATA / "eco_oscar.csv")
    rng = np.random.default_rng(0)
    frame["len_a"] = rng.integers(100, 2000, len(frame)).astype(float)
    frame["len_b"] = rng.integers(100, 2000, len(frame)).astype(float)
    frame.loc[5, "len_a"] = 1e8
    with pytest.warns(OscarDataWarning, match=r"column 'len_a' row 6: length 1e\+08 carries \d+% of the variance"):
        oj.build_design(frame)


def test_case_variant_names_warn():
    a = pd.read_csv(DATA / "eco_oscar.csv")
    a.loc[0, "candidate_a"] = a.loc[0, "candidate_a"].upper()
    with pytest.warns(OscarDataWarning, match="candidate names differ only in case"):
        oj.fit(a, "j", warn=False)


def test_true_false_outcomes_are_not_scores(tmp_path):
    a = pd.read_csv(DATA / "eco_oscar.csv")
    a["outcome"] = a["outcome"] == "A"
    path = tmp_path / "tf.csv"
    a.to_csv(path, index=False)
    with pytest.raises(OscarInputError, match=r"row 1: unknown label .*true/false value is not an outcome"):
        oj.load_judgments(path)
