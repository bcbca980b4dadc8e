"""Property-based fuzzing of degenerate inputs (issue 13).

Every outcome is either an OscarInputError with a message that names what is wrong, or a
result whose numbers are finite and whose flags or checks name the problem; and every
schema's result is invariant to row order and index labels.

Fits compile one program per shape, so the fitted designs keep one shape (4 candidates,
2 judges, every ordered pair shown by every judge once, 12 prompt clusters) and the
hypothesis draws outcomes, weights, extra records and row order; the shape-changing
degeneracies (tiny judges, disconnected pieces) are explicit cases below.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oscar_jax as oj
from oscar_jax import OscarInputError
from oscar_jax.results.jsonable import to_json

CANDS = ["m0", "m1", "m2", "m3"]
JUDGES = ["j0", "j1"]
CELLS = [(a, b, k) for a, b in itertools.permutations(CANDS, 2) for k in JUDGES]  # 24 cells
SETTINGS = settings(max_examples=12, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

outcome = st.sampled_from(["A", "B", "tie"])


@st.composite
def designs(draw):
    """A frame of fixed shape whose outcomes may be degenerate (separation, all ties, …)."""
    pattern = draw(st.sampled_from(["random", "all ties", "judge always A", "candidate always wins",
                                    "zero weights", "one outcome"]))
    outs = draw(st.lists(outcome, min_size=len(CELLS), max_size=len(CELLS)))
    weights = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=len(CELLS), max_size=len(CELLS)))
    rows = []
    for i, ((a, b, k), y, w) in enumerate(zip(CELLS, outs, weights)):
        if pattern == "all ties":
            y = "tie"
        elif pattern == "judge always A" and k == "j1":
            y = "A"
        elif pattern == "candidate always wins" and "m2" in (a, b):
            y = "A" if a == "m2" else "B"
        elif pattern == "one outcome":
            y = "A"
        rows.append({"prompt": f"p{i % 12}", "candidate_a": a, "candidate_b": b, "judge": k, "outcome": y,
                     "weight": w if pattern == "zero weights" else 1.0})
    frame = pd.DataFrame(rows)
    if not (frame["weight"] > 0).any():
        frame.loc[0, "weight"] = 1.0
    return frame, pattern


def _fit(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # B.3 failures are asserted through the result, not warnings
        return oj.fit(frame, "j+p", warn=False)


def _assert_honest(result):
    payload = json.loads(to_json(result.to_dict()))  # strict JSON: NaN/inf would raise
    assert np.all(np.isfinite(result.scores)) and np.all(np.isfinite(result.gamma))
    problems = not payload["checks"]["all_ok"] or not payload["checks"]["flags"]["ok"]
    for cand in payload["candidates"]:
        lo, hi = cand["score_lo"], cand["score_hi"]
        if lo is None:  # no interval shown: a flag must say why
            assert cand["flags"] or not payload["checks"]["all_ok"], cand
        else:
            assert hi - lo > 0 or problems, cand  # a zero-width interval never passes as certain
    for judge in payload["judges"]:
        assert isinstance(judge["flags"], list)
    return payload


@SETTINGS
@given(designs(), st.randoms(use_true_random=False))
def test_degenerate_designs_are_flagged_or_rejected_and_order_free(case, rnd):
    frame, pattern = case
    try:
        result = _fit(frame)
    except OscarInputError as exc:
        assert str(exc) and ("row" in str(exc) or "column" in str(exc) or "graph" in str(exc)), str(exc)
        return
    payload = _assert_honest(result)
    if pattern in ("judge always A", "candidate always wins", "all ties", "one outcome"):
        assert not payload["checks"]["flags"]["ok"] or not payload["checks"]["all_ok"], pattern
    # Invariance to row order and index labels.
    order = list(range(len(frame)))
    rnd.shuffle(order)
    shuffled = frame.iloc[order]
    shuffled.index = [rnd.randint(0, 10 ** 6) for _ in order]
    again = _fit(shuffled)
    np.testing.assert_allclose(again.scores, result.scores, atol=1e-7)
    assert _flag_sets(again) == _flag_sets(result)


def _flag_sets(result):
    lb, jt = result.leaderboard(), result.judges()
    return (dict(zip(lb["candidate"], lb["flags"])), dict(zip(jt["judge"], jt["flags"])))


# ----------------------------------------------------------------------------- every schema: order-free loading
def _schema_frames(rng):
    n = 30
    a = rng.choice(CANDS, n)
    b = np.array([rng.choice([c for c in CANDS if c != x]) for x in a])
    k = rng.choice(JUDGES, n)
    q = [f"q{i % 7}" for i in range(n)]
    y = rng.choice(["A", "B", "tie"], n)
    return {
        "oscar": pd.DataFrame({"prompt": q, "candidate_a": a, "candidate_b": b, "judge": k, "outcome": y}),
        "xu": pd.DataFrame({"question_id": q, "model_a": a, "model_b": b, "judge_model": k,
                            "judge_preferred_model": [{"A": "a", "B": "b", "tie": "c"}[v] for v in y]}),
        "arena": pd.DataFrame({"model_a": a, "model_b": b,
                               "winner": [{"A": "model_a", "B": "model_b", "tie": "tie"}[v] for v in y]}),
        "evalica": pd.DataFrame({"left": a, "right": b,
                                 "winner": [{"A": "left", "B": "right", "tie": "tie"}[v] for v in y]}),
        "crowdkit": pd.DataFrame({"worker": k, "left": a, "right": b,
                                  "label": [x if v != "B" else z for x, z, v in zip(a, b, y)]}),
        "alpacaeval": pd.DataFrame({"generator_1": a, "generator_2": b,
                                    "preference": [{"A": 1.0, "B": 2.0, "tie": 1.5}[v] for v in y]}),
    }


def _canonical_multiset(frame):
    cols = ["candidate_a", "candidate_b", "judge", "outcome", "tie_kind", "weight"]
    return sorted(map(tuple, frame[cols].astype(str).to_numpy().tolist()))


@SETTINGS
@given(st.integers(0, 10 ** 6), st.sampled_from(["shuffle", "filter", "concat"]),
       st.sampled_from(["oscar", "xu", "arena", "evalica", "crowdkit", "alpacaeval"]))
def test_every_schema_loads_the_same_records_whatever_the_order_or_index(seed, change, schema):
    rng = np.random.default_rng(seed)
    raw = _schema_frames(rng)[schema]
    if change == "shuffle":
        moved = raw.sample(frac=1.0, random_state=seed % 1000)
        reference = raw
    elif change == "filter":
        moved = raw[raw.index % 3 != 1]
        reference = moved.reset_index(drop=True)
    else:
        moved = pd.concat([raw, raw.iloc[:7]])
        reference = moved.reset_index(drop=True)
    moved = moved.set_axis(rng.permutation(len(moved)) * 3 + 11)  # arbitrary labels
    got, _ = oj.load_judgments(moved, schema=schema)
    want, _ = oj.load_judgments(reference, schema=schema)
    assert _canonical_multiset(got) == _canonical_multiset(want)


# ----------------------------------------------------------------------------- shape-changing degeneracies
def _frame(rows):
    return pd.DataFrame(rows, columns=["prompt", "candidate_a", "candidate_b", "judge", "outcome"])


def test_disconnected_pieces_are_an_error_naming_the_components():
    rows = [(f"p{i}", "a", "b", "j", "A" if i % 2 else "B") for i in range(6)]
    rows += [(f"p{i}", "c", "d", "j", "A" if i % 2 else "B") for i in range(6)]
    with pytest.raises(OscarInputError, match=r"disconnected \(2 components: \{a, b\}; \{c, d\}\)"):
        oj.fit(_frame(rows), "j")


def test_single_record_is_flagged_not_confident():
    result = _fit(_frame([("p0", "a", "b", "j", "A")]))
    payload = _assert_honest(result)
    assert not payload["checks"]["flags"]["ok"]


@pytest.mark.parametrize("weights", [[0.0, 0.0, 0.0, 0.0], [np.nan, 1, 1, 1], [-1, 1, 1, 1], [None, 1, 1, 1]])
def test_bad_weights_are_errors(weights):
    frame = _frame([(f"p{i}", "a", "b", "j", "A" if i % 2 else "B") for i in range(4)]).assign(weight=weights)
    with pytest.raises(OscarInputError, match="weight"):
        oj.fit(frame, "j")
