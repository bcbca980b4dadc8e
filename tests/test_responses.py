"""Response lengths joined to judgments (oscar_jax.io.responses, load_judgments(responses=))."""

import json
import os

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.cli.main import main
from oscar_jax.io.data import shared_data_dir
from oscar_jax.model.design import build_design
from oscar_jax.io.responses import read_responses
from oscar_jax.runtime.validate import OscarInputError

CANDS = ("m-a", "m-b", "m-c")
# Non-ASCII on purpose: lengths are Unicode characters, not UTF-8 bytes.
TEXT = {
    ("m-a", 1): "héllo wörld", ("m-a", 2): "日本語のテキスト",
    ("m-b", 1): "a much longer answer than the first one", ("m-b", 2): "ok",
    ("m-c", 1): "ça", ("m-c", 2): "🙂🙂🙂",
}


def _write_fastchat(folder, model_id_in_file=True):
    folder.mkdir(parents=True, exist_ok=True)
    for cand in CANDS:
        with open(folder / f"{cand}.jsonl", "w", encoding="utf-8") as fh:
            for q in (1, 2):
                rec = {"question_id": q, "answer_id": f"x{q}",
                       "choices": [{"index": 0, "turns": [TEXT[cand, q], "second turn " + cand * q]}]}
                if model_id_in_file or cand != "m-c":
                    rec["model_id"] = cand
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(folder / "question.jsonl", "w") as fh:
        for q in (1, 2):
            fh.write(json.dumps({"question_id": q, "category": "x", "turns": ["q?", "q2?"]}) + "\n")
    return folder


def _xu_records():
    pairs = [("m-a", "m-b"), ("m-b", "m-c"), ("m-c", "m-a")]
    recs = []
    for q in ("1", "2"):
        for a, b in pairs:
            for judge, verdict in (("j1", "a"), ("j2", "b")):
                recs.append({"question_id": q, "model_a": a, "model_b": b, "judge_model": judge,
                             "judge_preferred_model": verdict})
    return recs


def test_fastchat_directory_join_counts_unicode_characters(tmp_path):
    folder = _write_fastchat(tmp_path / "model_answer", model_id_in_file=False)
    frame, report = oj.load_judgments(_xu_records(), responses=folder)
    expected_a = [len(TEXT[a, int(q)]) for q, a in zip(frame.prompt, frame.candidate_a)]
    expected_b = [len(TEXT[b, int(q)]) for q, b in zip(frame.prompt, frame.candidate_b)]
    np.testing.assert_array_equal(frame.len_a, expected_a)
    np.testing.assert_array_equal(frame.len_b, expected_b)
    # "日本語のテキスト" is 8 characters but 24 UTF-8 bytes.
    assert len(TEXT["m-a", 2]) == 8 and len(TEXT["m-a", 2].encode()) == 24
    assert "turn 1" in report.lengths and "6 responses of 3 candidates to 2 prompts" in report.lengths
    assert any("question.jsonl" in n for n in report.notes)
    # The design notes where the lengths came from, so every result carries it.
    design = build_design(frame, report=report)
    assert design.has_length and report.lengths in design.notes


def test_turn_two_and_explicit_files(tmp_path):
    folder = _write_fastchat(tmp_path / "ans")
    files = [folder / f"{c}.jsonl" for c in CANDS]
    frame, _ = oj.load_judgments(_xu_records(), responses=files, turn=2)
    expected = [len("second turn " + a * int(q)) for q, a in zip(frame.prompt, frame.candidate_a)]
    np.testing.assert_array_equal(frame.len_a, expected)
    with pytest.raises(OscarInputError, match=r"line 1: answer has 2 turn\(s\), turn 3 was asked for"):
        oj.load_judgments(_xu_records(), responses=files, turn=3)


def test_responses_give_the_same_design_as_lengths_in_the_data(tmp_path):
    folder = _write_fastchat(tmp_path / "ans")
    joined, rep = oj.load_judgments(_xu_records(), responses=folder)
    inline = [dict(r, len_a=len(TEXT[r["model_a"], int(r["question_id"])]),
                   len_b=len(TEXT[r["model_b"], int(r["question_id"])])) for r in _xu_records()]
    direct, _ = oj.load_judgments(inline)
    d1, d2 = build_design(joined, report=rep), build_design(direct)
    np.testing.assert_allclose(np.asarray(d1.arrays.z), np.asarray(d2.arrays.z), rtol=0, atol=0)
    assert d1.length_scale == d2.length_scale


@pytest.mark.parametrize("kind", ["csv", "parquet", "jsonl"])
def test_table_of_responses(tmp_path, kind):
    rows = [{"prompt": q, "candidate": c, "text": TEXT[c, q]} for c in CANDS for q in (1, 2)]
    table = pd.DataFrame(rows)
    path = tmp_path / f"responses.{kind}"
    if kind == "csv":
        table.assign(length=table.text.str.len()).drop(columns="text").to_csv(path, index=False)
    elif kind == "parquet":
        pytest.importorskip("pyarrow")
        table.to_parquet(path)
    else:
        table.rename(columns={"prompt": "question_id", "candidate": "model"}).to_json(
            path, orient="records", lines=True, force_ascii=False)
    frame, _ = oj.load_judgments(_xu_records(), responses=path)
    np.testing.assert_array_equal(frame.len_a, [len(TEXT[a, int(q)]) for q, a in zip(frame.prompt, frame.candidate_a)])


def test_list_valued_question_ids_join(tmp_path):
    # The Xu et al. format has ids such as ["file.jsonl", 444]; a JSONL table with the same
    # list, or its "file.jsonl#444" key, joins to them.
    recs = [{"question_id": ["file.jsonl", 444], "model_a": "m-a", "model_b": "m-b",
             "judge_model": "j", "judge_preferred_model": "a"}]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"question_id": ["file.jsonl", 444], "model_id": "m-a", "text": "abc"}) + "\n"
                    + json.dumps({"question_id": "file.jsonl#444", "model_id": "m-b", "length": 7}) + "\n")
    frame, _ = oj.load_judgments(recs, responses=path)
    assert frame.prompt[0] == "file.jsonl#444"
    assert (frame.len_a[0], frame.len_b[0]) == (3.0, 7.0)


def test_missing_response_is_an_error_naming_record_prompt_and_candidate(tmp_path):
    folder = _write_fastchat(tmp_path / "ans")
    (folder / "m-c.jsonl").write_text(
        json.dumps({"question_id": 1, "model_id": "m-c", "choices": [{"turns": ["x"]}]}) + "\n")
    data = tmp_path / "judgments.jsonl"
    pd.DataFrame(_xu_records()).to_json(data, orient="records", lines=True)
    # Record order: q1 (a,b) j1, j2, (b,c) j1 ... ; the first one with m-c on q2 is line 9.
    with pytest.raises(OscarInputError) as err:
        oj.load_judgments(data, responses=folder)
    msg = str(err.value)
    assert "judgments.jsonl line 9" in msg and "'m-c'" in msg and "prompt '2'" in msg
    assert "4 judgment(s) lack a response" in msg and "--missing-responses drop" in msg
    frame, report = oj.load_judgments(data, responses=folder, missing_responses="drop")
    assert len(frame) == 8 and report.n_kept == 8
    assert report.dropped["judgments without a response (missing_responses='drop')"] == 4
    assert not ((frame.prompt == "2") & ((frame.candidate_a == "m-c") | (frame.candidate_b == "m-c"))).any()


def test_conflicting_duplicates_and_double_lengths_are_errors(tmp_path):
    path = tmp_path / "r.csv"
    pd.DataFrame({"prompt": [1, 1], "candidate": ["m-a", "m-a"], "length": [3, 4]}).to_csv(path, index=False)
    with pytest.raises(OscarInputError, match=r"r.csv line 2 .*3 characters, .*r.csv line 3 .*4"):
        read_responses(path)
    same = tmp_path / "same.csv"
    pd.DataFrame({"prompt": [1, 1], "candidate": ["m-a", "m-a"], "length": [3, 3]}).to_csv(same, index=False)
    assert len(read_responses(same)[0]) == 1
    recs = [dict(r, len_a=1, len_b=2) for r in _xu_records()]
    with pytest.raises(OscarInputError, match="not both"):
        oj.load_judgments(recs, responses=path)
    with pytest.raises(OscarInputError, match="needs a prompt column"):
        pd.DataFrame({"x": [1]}).to_csv(tmp_path / "bad.csv", index=False)
        read_responses(tmp_path / "bad.csv")
    with pytest.raises(OscarInputError, match="does not exist"):
        read_responses(tmp_path / "nowhere")
    with pytest.raises(OscarInputError, match="missing_responses must be"):
        oj.load_judgments(_xu_records(), responses=path, missing_responses="ignore")


def _synthetic(tmp_path, n_prompts=40, seed=0):
    """Judgments with a real length effect, and the answer files that carry the lengths."""
    rng = np.random.default_rng(seed)
    cands = [f"cand-{i}" for i in range(4)]
    length = {(q, c): int(rng.integers(20, 2000)) for q in range(n_prompts) for c in cands}
    folder = tmp_path / "model_answer"
    folder.mkdir()
    for c in cands:
        with open(folder / f"{c}.jsonl", "w") as fh:
            for q in range(n_prompts):
                fh.write(json.dumps({"question_id": q, "model_id": c,
                                     "choices": [{"index": 0, "turns": ["x" * length[q, c], "y"]}]}) + "\n")
    recs = []
    for q in range(n_prompts):
        for i in range(4):
            for j in range(i + 1, 4):
                a, b = (cands[i], cands[j]) if rng.random() < 0.5 else (cands[j], cands[i])
                for judge in ("j1", "j2"):
                    eta = 0.8 * np.log((length[q, a] + 1) / (length[q, b] + 1))
                    recs.append({"question_id": str(q), "model_a": a, "model_b": b, "judge_model": judge,
                                 "judge_preferred_model": "a" if rng.random() < 1 / (1 + np.exp(-eta)) else "b"})
    data = tmp_path / "judgments.json"
    data.write_text(json.dumps(recs))
    return data, folder


def test_cli_fit_reports_beta_len_per_judge(tmp_path, capsys):
    data, folder = _synthetic(tmp_path)
    assert main(["fit", str(data), "--model", "j+l", "--format", "json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert all(j["beta_len"] is None or not np.isfinite(j["beta_len"]) for j in without["judges"])
    assert main(["fit", str(data), "--responses", str(folder), "--model", "j+l", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    betas = [j["beta_len"] for j in out["judges"]]
    # Judges prefer the longer answer: β_len is positive and well away from zero for both.
    assert len(betas) == 2 and all(b > 0.3 for b in betas)
    assert any("response lengths (Unicode characters, turn 1)" in n for n in out["notes"])


@pytest.mark.parametrize("command", ["compare", "bootstrap", "bayes"])
def test_every_data_command_takes_responses(command, tmp_path, capsys):
    data, folder = _synthetic(tmp_path, n_prompts=3)
    (folder / "cand-0.jsonl").unlink()
    assert main([command, str(data), "--responses", str(folder), "--model", "j+l"]) == 2
    err = capsys.readouterr().err
    assert "no turn-1 response of candidate 'cand-0'" in err and "--missing-responses drop" in err


def test_mtbench_answers_join_every_judgment():
    root = shared_data_dir()
    data, answers = root / "xu2026" / "judge_results_10k_mtbench.json", root / "mtbench_answers"
    if not (data.exists() and answers.is_dir()):
        message = f"shared data {data} or {answers} is absent (set OSCAR_DATA_DIR to run this test)"
        if os.environ.get("OSCAR_REQUIRE_DATA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    frame, report = oj.load_judgments(data, responses=answers)
    assert report.n_kept == len(frame) == 9706 and not any("response" in k for k in report.dropped)
    # Independent check of one record: the first-turn answer of gpt-4 to question 126.
    with open(answers / "gpt-4.jsonl", encoding="utf-8") as fh:
        text = next(json.loads(line) for line in fh if json.loads(line)["question_id"] == 126)["choices"][0]["turns"][0]
    rows = frame[(frame.prompt == "126") & (frame.candidate_a == "gpt-4")]
    assert len(rows) > 0 and (rows.len_a == len(text)).all()
