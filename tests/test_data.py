"""Readers, validation messages and the design coding."""

import json

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.io.data import load_judgments
from oscar_jax.model.design import build_design
from oscar_jax.runtime.validate import OscarInputError

from helpers import REFERENCE_JUDGE, shared_data


def frame(rows):
    return pd.DataFrame(rows, columns=["prompt", "candidate_a", "candidate_b", "judge", "outcome"])


TRIANGLE = [
    ("p1", "x", "y", "j1", "A"), ("p1", "y", "x", "j2", "B"), ("p2", "y", "z", "j1", "tie"),
    ("p2", "z", "x", "j2", 1), ("p3", "x", "z", "j1", 0.5), ("p3", "z", "y", "j2", "b"),
]


def test_own_schema_labels_and_numbers():
    df, report = load_judgments(frame(TRIANGLE))
    assert report.schema == "oscar" and report.n_kept == 6
    np.testing.assert_array_equal(df.outcome, [1, 0, 0.5, 1, 0.5, 0])
    assert list(df.tie_kind) == ["", "", "tie", "", "tie", ""]
    # displayed order is kept: the winner is never relabelled as slot A
    assert list(df.candidate_a) == ["x", "y", "y", "z", "x", "z"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json", ".parquet"])
def test_file_formats_round_trip(tmp_path, suffix):
    df = frame(TRIANGLE).assign(outcome=lambda d: d.outcome.astype(str))
    path = tmp_path / f"data{suffix}"
    if suffix == ".csv":
        df.to_csv(path, index=False)
    elif suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    elif suffix == ".json":
        path.write_text(json.dumps(df.to_dict(orient="records")))
    else:
        pytest.importorskip("pyarrow")
        df.to_parquet(path)
    got, _ = load_judgments(path)
    np.testing.assert_array_equal(got.outcome, [1, 0, 0.5, 1, 0.5, 0])


def test_xu_release_format(tmp_path):
    records = [
        {"question_id": ["file.jsonl", 444], "model_a": "x", "model_b": "y", "judge_model": "j", "judge_preferred_model": "a"},
        {"question_id": ["file.jsonl", 444], "model_a": "y", "model_b": "x", "judge_model": "j", "judge_preferred_model": "c"},
        {"question_id": 7, "model_a": "x", "model_b": "y", "judge_model": "j", "judge_preferred_model": "unknown"},
        {"question_id": 8, "model_a": "y", "model_b": "x", "judge_model": "j", "judge_preferred_model": "b"},
    ]
    path = tmp_path / "xu.json"
    path.write_text(json.dumps(records))
    df, report = load_judgments(path)
    assert report.schema == "xu"
    assert report.dropped == {"'unknown' verdicts (format rule)": 1}
    assert list(df.prompt) == ["file.jsonl#444", "file.jsonl#444", "8"]
    np.testing.assert_array_equal(df.outcome, [1.0, 0.5, 0.0])


def test_arena_battles_keep_bothbad_apart():
    battles = pd.DataFrame({
        "model_a": ["x", "y", "x", "y"], "model_b": ["y", "x", "y", "x"],
        "winner": ["model_a", "tie (bothbad)", "tie", "model_b"], "question_id": ["q1", "q1", "q2", "q3"],
    })
    df, report = load_judgments(battles)
    assert report.schema == "arena"
    np.testing.assert_array_equal(df.outcome, [1, 0.5, 0.5, 0])
    assert report.ties == {"ties": 1, "'tie (bothbad)' ties": 1}
    assert any("one judge" in n for n in report.notes)
    dropped, report2 = load_judgments(battles, bothbad="drop")
    assert len(dropped) == 3 and report2.dropped["'tie (bothbad)' records (bothbad='drop')"] == 1



def test_raw_columns_the_converter_reads_stay_available_to_filters_and_covariates(tmp_path):
    """The converter may drop a raw column once read (Arena's winner labels, freed at scale);
    a filter or a carried column naming it still reads it as written."""
    battles = pd.DataFrame({
        "model_a": ["x", "y", "x", "y"], "model_b": ["y", "x", "y", "x"],
        "winner": ["model_a", "tie (bothbad)", "tie", "model_b"], "question_id": ["q1", "q1", "q2", "q3"],
    })
    path = tmp_path / "battles.csv"
    battles.to_csv(path, index=False)
    for source in (battles, path):
        ties, _ = load_judgments(source, filters={"winner": "tie"})
        assert ties.prompt.tolist() == ["q2"] and ties.outcome.tolist() == [0.5]
        carried, _ = load_judgments(source, keep_columns=["winner"])
        assert carried.winner.tolist() == battles.winner.tolist()
        assert "winner" not in load_judgments(source)[0].columns
    with pytest.raises(OscarInputError, match=r"'nope' is not in the data; columns: \['model_a', 'model_b', 'question_id', "
                                              r"'winner'\]"):
        load_judgments(battles, filters={"nope": "1"})

@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.drop(columns=["candidate_b"]), "candidate_b"),
    (lambda d: d.assign(outcome=["A", "B", "draw", "A", "A", "B"]), "row 3: unknown label 'draw'"),
    (lambda d: d.assign(outcome=[1, 0, 1.5, 1, 1, 0]), "row 3: unknown label 1.5"),
    (lambda d: d.assign(candidate_b=["x", "x", "z", "x", "z", "y"]), "row 1: candidate_a == candidate_b == 'x'"),
    (lambda d: d.assign(len_a=[1, 2, np.nan, 4, 5, 6], len_b=1), "column 'len_a' row 3"),
    (lambda d: d.assign(len_a=[1, 2, 3, -4, 5, 6], len_b=1), "column 'len_a' row 4"),
    (lambda d: d.assign(len_a=5), "lengths need both slots"),
    (lambda d: d.iloc[:0], "empty data"),
    (lambda d: d.assign(judge=[None, "j", "j", "j", "j", "j"]), "column 'judge' row 1: missing name"),
])
def test_bad_input_is_named(mutate, message):
    with pytest.raises(OscarInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        df, rep = load_judgments(mutate(frame(TRIANGLE)))
        build_design(df)


def test_single_candidate_and_reference_judge():
    df, _ = load_judgments(frame(TRIANGLE))
    with pytest.raises(OscarInputError, match="reference judge 'nobody' is not in the data; available: 'j1', 'j2'"):
        build_design(df, reference_judge="nobody")
    assert build_design(df, reference_judge="2").judges[build_design(df, reference_judge="2").reference] == "j2"
    with pytest.raises(OscarInputError, match="ambiguous"):
        build_design(df, reference_judge="j")
    two = pd.DataFrame({"candidate_a": ["x"], "candidate_b": ["x "], "outcome": [1]})
    with pytest.raises(OscarInputError, match="compared with itself"):
        load_judgments(two)


def test_disconnected_graph_names_components():
    df = frame([("p1", "a", "b", "j", 1), ("p2", "b", "a", "j", 0), ("p3", "c", "d", "j", 1), ("p4", "d", "c", "j", 1)])
    data, _ = load_judgments(df)
    with pytest.raises(OscarInputError, match=r"disconnected \(2 components: \{a, b\}; \{c, d\}\)"):
        build_design(data)


def test_design_cells_pairs_and_contrasts():
    rows = TRIANGLE + [("p1", "x", "y", "j1", "B")]
    df, _ = load_judgments(frame(rows).assign(len_a=[10, 20, 30, 40, 50, 60, 10], len_b=[20, 20, 10, 40, 5, 60, 20]))
    d = build_design(df, family_map={"x": "fx", "j1": "fx"})
    # records 0 and 6 share (a, b, judge, L, F): one cell of weight 2, wy = 1
    assert d.n_cells == 6 and d.n_records == 7
    cell = d.record_cell
    assert cell[0] == cell[6]
    np.testing.assert_allclose(np.asarray(d.arrays.stats)[cell[0]], [2.0, 1.0, 0.0])
    # L = log((ℓ_A+1)/(ℓ_B+1)) / s_L with s_L the divisor-N SD over records
    raw = np.log(np.array([11, 21, 31, 41, 51, 61, 11]) / np.array([21, 21, 11, 41, 6, 61, 21]))
    assert d.length_scale == pytest.approx(np.std(raw))
    np.testing.assert_allclose(np.asarray(d.arrays.z)[cell, 0], raw / np.std(raw))
    # F = 1{fam(a)=fam(k)} − 1{fam(b)=fam(k)}: only judge j1 shares family 'fx' with x
    f = np.asarray(d.arrays.z)[cell, 1]
    expected = [1, 0, 0, 0, 1, 0, 1]  # j1 sees x in slot A in records 0, 4, 6
    np.testing.assert_array_equal(f, expected)
    # pairs: (cluster, cell) combinations; record weights sum to N
    assert float(np.asarray(d.arrays.pair_stats)[:, 0].sum()) == 7.0


def test_family_defaults_and_override():
    assert oj.family_of("meta-llama/Llama-3.3-70B-Instruct-Turbo") == "llama"
    assert oj.family_of("gpt4all-13b-snoozy") == "gpt4all-13b-snoozy"  # not OpenAI
    assert oj.family_of("openai/gpt-oss-20b") == oj.family_of("gpt-4") == "openai"
    from oscar_jax.io.families import family_function
    f = family_function({"GPT-4": "custom"})
    assert f("gpt-4") == "custom" and f("claude-v1") == "anthropic"


def test_shared_mtbench_counts():
    df, report = load_judgments(shared_data("mtbench"))
    # method section 8: 9,706 judgments after dropping 'unknown', 80 prompts, 6 candidates, 20 judges
    d = build_design(df, reference_judge=REFERENCE_JUDGE, report=report)
    assert (d.n_records, d.n_clusters, d.n_cand, d.n_judge) == (9706, 80, 6, 20)
    assert d.judges[d.reference] == "Qwen/Qwen3-235B-A22B-Instruct-2507-tput"
    assert not d.has_length and d.n_cells <= 600


def test_components_match_a_breadth_first_search():
    # The comparison graph's components (model/design.py, host numpy, no scipy.sparse): each
    # label set is what a breadth-first search reaches, numbered by its smallest member.
    from oscar_jax.model.record_checks import components as _components

    rng = np.random.default_rng(3)
    for n, m in ((1, 0), (6, 2), (40, 25), (40, 60), (300, 200)):
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        count, labels = _components(a, b, n)
        adj = [set() for _ in range(n)]
        for x, y in zip(a, b):
            adj[x].add(y)
            adj[y].add(x)
        expect = -np.ones(n, int)
        found = 0
        for start in range(n):
            if expect[start] >= 0:
                continue
            expect[start], frontier = found, [start]
            while frontier:
                nxt = [y for x in frontier for y in adj[x] if expect[y] < 0]
                expect[nxt] = found
                frontier = nxt
            found += 1
        assert count == found and np.array_equal(labels, expect)
