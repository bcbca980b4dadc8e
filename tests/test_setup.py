"""One set-up path: the Python API and the command line read, select and prepare alike.

``oscar_jax.prepare`` is the only place that turns data into a problem; the CLI's options
are its keywords, so a Python user reproduces any command line exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.cli.main import main
from oscar_jax.io.data import Judgments
from oscar_jax.model.problem import Problem, prepare
from oscar_jax.runtime.validate import OscarInputError
from helpers import ARENA_EXAMPLE


@pytest.fixture(scope="module")
def with_category(tmp_path_factory):
    """The Arena example with a FastChat-style category column (every other prompt is coding)."""
    frame = pd.read_csv(ARENA_EXAMPLE)
    codes = pd.factorize(frame["question_id"])[0]
    frame["category"] = np.where(codes % 2 == 0, "coding", "writing")
    path = tmp_path_factory.mktemp("setup") / "battles.csv"
    frame.to_csv(path, index=False)
    return path


def _cli(capsys, *argv) -> dict:
    assert main([*map(str, argv), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_python_filters_equal_the_command_line(capsys, with_category):
    payload = _cli(capsys, "fit", with_category, "--model", "oscar", "--category", "coding", "--exclude-tie")
    result = oj.fit(with_category, "oscar", filters={"category": "coding"}, exclude_ties=True, warn=False)
    board = result.leaderboard().set_index("candidate")
    assert payload["n_records"] == result.design.n_records
    assert payload["objective"] == result.objective
    for cand in payload["candidates"]:  # the same code path: equal, not close
        assert cand["score"] == board.loc[cand["candidate"], "score"]
        assert cand["s"] == board.loc[cand["candidate"], "s"]
    # The selection really happened: fewer records, and only coding prompts without ties.
    frame = pd.read_csv(with_category)
    kept = (frame.category == "coding") & ~frame.winner.str.contains("tie")
    assert result.design.n_records == int(kept.sum()) < len(frame)
    assert result.design.report.dropped["ties (--exclude-tie)"] == int(((frame.category == "coding")
                                                                         & frame.winner.str.contains("tie")).sum())
    # Negative control: without exclude_ties the same filter gives another fit.
    with_ties = oj.fit(with_category, "oscar", filters={"category": "coding"}, warn=False)
    assert with_ties.design.n_records > result.design.n_records
    assert not np.allclose(with_ties.theta, result.theta)


def test_filter_spellings_select_the_same_records(with_category):
    frames = [oj.load_judgments(with_category, filters=f).frame for f in
              ({"category": "coding"}, ["category=coding"], [("category", "coding")], "category = coding")]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])
    # A canonical column is matched as read (the judge of an Arena file), others on the raw input.
    judges = oj.load_judgments(with_category, filters={"judge": "gpt-4-turbo"}).frame
    assert set(judges.judge) == {"gpt-4-turbo"} and "category" not in judges.columns


def test_every_form_of_data_gives_the_same_problem(with_category):
    loaded = oj.load_judgments(with_category, exclude_ties=True)
    assert isinstance(loaded, Judgments) and isinstance(loaded, tuple)  # still unpacks as (frame, report)
    from_path = prepare(with_category, "j+p", exclude_ties=True)
    from_judgments = prepare(loaded, "j+p")
    from_design = prepare(from_path.design, "j+p")
    assert from_design.design is from_path.design
    for problem in (from_judgments, from_design):
        assert isinstance(problem, Problem)
        assert problem.design.candidates == from_path.design.candidates
        assert problem.effective_spec == from_path.effective_spec
        np.testing.assert_array_equal(np.asarray(problem.design.arrays.stats), np.asarray(from_path.design.arrays.stats))
    assert prepare(from_path) is from_path
    assert prepare(from_path, ridge=0.5).spec.ridge == 0.5


def test_setup_keywords_that_came_too_late_are_refused(with_category):
    problem = prepare(with_category, "j")
    with pytest.raises(OscarInputError, match=r"exclude_ties are fixed when the design is built"):
        oj.fit(problem.design, exclude_ties=True)
    with pytest.raises(OscarInputError, match=r"filters are fixed when the judgments are read"):
        prepare(oj.load_judgments(with_category), "j", filters={"category": "coding"})
    with pytest.raises(TypeError, match=r"exclude_tie\b"):
        oj.fit(problem.design, exclude_tie=True)  # a misspelt keyword is an error, never ignored
    with pytest.raises(OscarInputError, match=r"--filter/--category column 'language' is not in the data"):
        prepare(with_category, "j", filters={"language": "English"})
