"""Issue 13: never a confident wrong number (input paths, separation, identification flags)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax import OscarDataWarning, OscarInputError
from oscar_jax.io.data import shared_data_dir
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).parent / "data"


def _scores(result):
    return dict(zip(result.design.candidates, result.scores))


# ----------------------------------------------------------------------------- row order and index labels
@pytest.mark.parametrize("change", ["sorted", "filtered", "concatenated"])
def test_reordered_dataframe_gives_the_reset_result(change):
    # No 'judge' column (arena) and the outcome attached by position: a sorted frame once
    # got its outcomes attached to the wrong records; filtered/concatenated ones crashed.
    a = pd.read_csv(ARENA_EXAMPLE).drop(columns="judge")
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


def _with_lengths(frame, value):
    rng = np.random.default_rng(0)
    frame = frame.assign(len_a=rng.integers(100, 2000, len(frame)).astype(float),
                         len_b=rng.integers(100, 2000, len(frame)).astype(float))
    frame.loc[5, "len_a"] = value
    return frame


def test_absurd_length_is_rejected_with_row_column_value():
    a = _with_lengths(pd.read_csv(DATA / "eco_oscar.csv"), 1e300)
    with pytest.raises(OscarInputError, match=r"column 'len_a' row 6: length 1e\+300 exceeds"):
        oj.load_judgments(a)


def test_one_dominant_length_warns():
    frame = _with_lengths(oj.load_judgments(DATA / "eco_oscar.csv")[0], 1e8)
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


# ----------------------------------------------------------------------------- separation and flags
def _eco():
    return pd.read_csv(DATA / "eco_oscar.csv")


def _flags(result):
    lb, jt = result.leaderboard(), result.judges()
    return ({c: f for c, f in zip(lb["candidate"], lb["flags"]) if f},
            {j: f for j, f in zip(jt["judge"], jt["flags"]) if f})


def test_well_posed_data_raise_no_flag():
    result = oj.fit(_eco(), "oscar", warn=False)
    assert _flags(result) == ({}, {})
    assert result.identification.method == "certificate"  # no LP needed
    assert result.identification_check()["ok"]
    from oscar_jax.report.text import header

    assert "all passed" in header(result)


def test_judge_always_choosing_slot_a_is_separated_and_not_shown_as_confident():
    a = _eco()
    judge = a.judge.unique()[0]
    a.loc[a.judge == judge, "outcome"] = "A"
    result = oj.fit(a, "j+p", warn=False)
    cand, judges = _flags(result)
    assert "separated" in judges[judge] and not cand
    assert "β_pos" in result.identification.judge_flag_terms[result.design.judges.index(judge)]["separated"]
    payload = result.to_dict()
    row = next(r for r in payload["judges"] if r["judge"] == judge)
    assert row["D_lo"] is None and row["D_hi"] is None and "separated" in row["flags"]
    assert payload["checks"]["flags"]["ok"] is False
    from oscar_jax.report.text import fit_report

    text = fit_report(result)
    assert "all passed" not in text and "unbounded" in text and f"!{judge}" in text
    assert "[0.995, 0.995]" not in text


def _one_candidate_wins_everything():
    a = _eco()
    c = "claude-3-haiku"
    a.loc[a.candidate_a == c, "outcome"] = "A"
    a.loc[a.candidate_b == c, "outcome"] = "B"
    return a, c


def test_candidate_winning_every_record_is_separated_and_every_kappa_unbounded():
    a, c = _one_candidate_wins_everything()
    result = oj.fit(a, "j+p", warn=False)
    cand, _ = _flags(result)
    assert cand == {c: "separated"}
    status = result.status()
    assert status.kappa == ("unbounded",) * result.design.n_judge and status is result.status()  # computed once
    payload = result.to_dict()
    row = next(r for r in payload["candidates"] if r["candidate"] == c)
    assert row["score_lo"] is None and row["interval"] == "unbounded"
    assert all(r["q_lo"] is None for r in payload["win_prob"] if c in (r["a"], r["b"]))
    assert result.leaderboard().set_index("candidate").loc[c, "interval"] == "unbounded"


def test_cli_json_gives_a_separated_candidate_no_interval_on_any_scale(tmp_path, capsys):
    from oscar_jax.cli.main import main

    a, c = _one_candidate_wins_everything()
    a.to_csv(tmp_path / "sep.csv", index=False)
    for scale in ("logit", "elo"):
        capsys.readouterr()
        assert main(["fit", str(tmp_path / "sep.csv"), "--model", "j+p", "--scale", scale, "--format", "json"]) == 0
        row = next(r for r in json.loads(capsys.readouterr().out)["candidates"] if r["candidate"] == c)
        shown = {k: row[k] for k in ("score_lo", "score_hi", "s_lo", "s_hi", "q_field_lo", "q_field_hi", "se_logit")}
        assert set(shown.values()) == {None}, shown


def test_three_record_judge_is_flagged():
    a = _eco()
    base = oj.fit(a, "oscar", warn=False)
    rank = {c: i for i, c in enumerate(base.leaderboard()["candidate"])}
    extra = a.iloc[:3].copy()
    extra["judge"] = "newjudge"
    extra["outcome"] = ["A" if rank[x] < rank[y] else "B" for x, y in zip(extra.candidate_a, extra.candidate_b)]
    result = oj.fit(pd.concat([a, extra], ignore_index=True), "oscar", warn=False)
    _, judges = _flags(result)
    assert "few records" in judges["newjudge"]
    assert {"separated", "penalty-dominated"} & set(judges["newjudge"].split(","))


@pytest.mark.parametrize("outcome", ["tie", 0.7])
def test_degenerate_outcomes_are_not_estimable_not_zero_width(outcome):
    result = oj.fit(_eco().assign(outcome=outcome), "j+p", warn=False)
    from oscar_jax.report.text import fit_report

    text = fit_report(result)
    assert "[0.00, 0.00]" not in text and "[0.500, 0.500]" not in text and "not estimable" in text
    assert "all passed" not in text


def test_certificate_and_lp_agree_on_random_designs():
    from oscar_jax.infer.separation import _certificate, _csr, _free_phi, _linear_rows, _lp_direction, _theta_rows

    for seed in range(4):  # one shape (n_prompts fixed): one compilation
        design = oj.simulate_design(seed=seed, n_prompts=30)
        result = oj.fit(design, "j+p", warn=False)
        layout, theta = result.layout, np.asarray(result.theta)
        mask = np.asarray(result.core.mask)
        stats, eta, terms = _linear_rows(design, layout, theta, mask)
        free = np.flatnonzero(mask > 0)
        x_phi = _csr(terms, len(eta), layout.n_phi)
        x_theta = _theta_rows(terms, layout.jacobian[:, free])
        np.testing.assert_allclose(x_theta, np.asarray(x_phi @ layout.jacobian)[:, free], rtol=1e-14, atol=1e-14)
        proved = _certificate(stats, eta, x_theta, theta[free], 0.05)
        lp = _lp_direction(stats, x_phi, _free_phi(layout, mask), design.n_cand)
        assert not (proved and lp is not None)


@pytest.mark.data
def test_flags_on_the_released_datasets():
    path = shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    result = oj.fit(path, "oscar")
    cand, judges = _flags(result)
    # zai-org picks slot A in 493 of 498 records: its sensitivity γ → 0 as λ → 0 (no
    # interior maximum), so log γ is set by the ridge.
    assert cand == {} and judges == {"zai-org/GLM-4.5-Air-FP8": "penalty-dominated"}


# ----------------------------------------------------------------------------- weak-today items
@pytest.mark.parametrize("n_prompts", [-3, 0, 2.5, "ten"])
def test_simulate_design_rejects_bad_counts(n_prompts):
    with pytest.raises(OscarInputError, match="n_prompts must be an integer"):
        oj.simulate_design(n_prompts=n_prompts)


def test_json_saved_as_csv_and_truncated_jsonl_and_encoding(tmp_path):
    records = pd.read_csv(DATA / "eco_oscar.csv").head(20).to_dict(orient="records")
    as_csv = tmp_path / "data.csv"
    as_csv.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(OscarInputError, match="holds JSON; rename it to .json"):
        oj.load_judgments(as_csv)
    lines = [json.dumps(r) for r in records]
    jl = tmp_path / "data.jsonl"
    jl.write_text("\n".join(lines[:-1] + [lines[-1][:25]]) + "\n", encoding="utf-8")
    with pytest.raises(OscarInputError, match=r"line 20: not valid JSON .* truncated"):
        oj.load_judgments(jl)
    latin = tmp_path / "latin.csv"
    frame = pd.read_csv(DATA / "eco_oscar.csv").head(40)
    frame.loc[0, "candidate_a"] = "modèle-é"
    frame.to_csv(latin, index=False, encoding="latin-1")
    with pytest.raises(OscarInputError, match="--encoding"):
        oj.load_judgments(latin)
    got, _ = oj.load_judgments(latin, encoding="latin-1")
    assert got.loc[0, "candidate_a"] == "modèle-é"


def test_newline_in_a_name_does_not_break_the_table():
    from oscar_jax.report.render import render_table

    text = render_table(pd.DataFrame({"name": ["a\nb", "c"], "x": [1.0, 2.0]}), [("name", "name", ""), ("x", "x", ".1f")])
    assert len(text.splitlines()) == 4 and "a\\nb" in text


def test_loader_notes_are_in_the_text_header():
    from oscar_jax.report.text import header

    a = pd.read_csv(ARENA_EXAMPLE).drop(columns=["judge"])
    result = oj.fit(a, "j", warn=False)
    assert "note: no 'judge' column" in header(result)


def test_output_folder_is_checked_before_computing(tmp_path, capsys):
    from oscar_jax.cli.main import main

    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    assert main(["fit", str(DATA / "nonexistent.csv"), "--out", str(blocker)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err  # before reading the (missing) data
    assert main(["fit", str(DATA / "nonexistent.csv"), "--plots", str(blocker / "sub")]) == 2
    assert "is a file, so no folder can be created" in capsys.readouterr().err


def test_atomic_write_leaves_no_partial_file(tmp_path):
    from oscar_jax.runtime.validate import atomic_write

    target = tmp_path / "t.csv"
    target.write_text("old")

    def boom(tmp):
        tmp.write_text("partial")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


_CACHE_SCRIPT = """
import sys, warnings, jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
from oscar_jax.runtime.cache import drop_unreadable_entry
def show(message, category, filename, lineno, file=None, line=None):
    drop_unreadable_entry(str(message))
    print("warning:", message)
warnings.showwarning = show
jax.jit(lambda x: jnp.cos(x) * 3 - 1)(jnp.ones(2))
"""


def test_unreadable_compilation_cache_entry_warns_once(tmp_path):
    # In a subprocess: the persistent cache is process-wide JAX configuration.
    import os
    import subprocess
    import sys

    cache = tmp_path / "xla"
    cache.mkdir()
    script = tmp_path / "run.py"
    script.write_text(_CACHE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

    def run():
        out = subprocess.run([sys.executable, str(script), str(cache)], capture_output=True, text=True, env=env,
                             check=True)
        return out.stdout.count("Error reading persistent compilation cache entry")

    assert run() == 0 and any(cache.iterdir())
    for entry in cache.iterdir():
        entry.write_bytes(b"not a compiled program")
    assert run() > 0   # the corrupt entries are reported once ...
    assert run() == 0  # ... and replaced, so the next run is quiet
