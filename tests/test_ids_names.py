"""Ids stay the text the user wrote; names that look alike are one name or refused (issue 35 §1, §2, §5, §6).

Each test here failed on 5a41019: pandas parsed id columns as numbers before any check saw
them (``001``, ``01`` and ``1`` one prompt; ``007`` merged into ``7``; ``2`` beside
``2.0``), names were keyed on ``strip().casefold()`` only (NFC/NFD ``café`` two candidates,
``m1`` + ZWSP a second ``m1``), a right-to-left override went raw into the tables, and a
non-gzip ``.csv.gz`` or a duplicated column raised a traceback.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oscar_jax as oj
from oscar_jax import OscarInputError
from oscar_jax.io.names import lookalike_key, visible

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=15, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Spellings pandas and float parsing merge, split or turn into something else.
TRICKY = ["001", "01", "1", "1.0", "1.00", "2", "2.0", "007", "7", "1e3", "1E3", "1000", "nan", "NaN", "NA",
          "N/A", "null", "None", "True", "true", "FALSE", "0x10", "+1", "-0", "0", "inf", "1_000", "٣"]
spelling = st.one_of(st.sampled_from(TRICKY), st.from_regex(r"0{0,3}[0-9]{1,3}(\.[0-9]{0,2})?(e[0-9])?",
                                                            fullmatch=True))
FORMATS = ["csv", "tsv", "csv.gz", "json", "jsonl", "jsonl.gz", "json.gz", "parquet"]


def _write(path: Path, rows: list[dict], fmt: str) -> Path:
    """Write ``rows`` (all values text) in ``fmt``, ids as JSON strings / Parquet strings."""
    file = path.with_name(f"{path.name}.{fmt}")
    cols = list(rows[0])
    if fmt in ("csv", "tsv", "csv.gz"):
        opener = gzip.open if fmt.endswith(".gz") else open
        with opener(file, "wt", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, cols, delimiter="\t" if fmt == "tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    elif fmt in ("json", "json.gz"):
        opener = gzip.open if fmt.endswith(".gz") else open
        with opener(file, "wt", encoding="utf-8") as fh:
            json.dump(rows, fh)
    elif fmt in ("jsonl", "jsonl.gz"):
        opener = gzip.open if fmt.endswith(".gz") else open
        with opener(file, "wt", encoding="utf-8") as fh:
            fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
    else:
        pd.DataFrame(rows).astype(str).to_parquet(file)
    return file


def _records(prompts, names):
    """Every ordered pair of ``names`` once per prompt, judge 'j', slot A wins."""
    return [{"prompt": p, "candidate_a": a, "candidate_b": b, "judge": "j", "outcome": "A"}
            for p in prompts for a in names for b in names if a != b]


@SETTINGS
@given(prompts=st.lists(spelling, min_size=2, max_size=6, unique=True),
       names=st.lists(spelling, min_size=2, max_size=4, unique=True),
       fmt=st.sampled_from(FORMATS))
def test_ids_are_read_as_the_text_written(tmp_path_factory, prompts, names, fmt):
    file = _write(tmp_path_factory.mktemp("ids") / "data", _records(prompts, names), fmt)
    frame, _ = oj.load_judgments(file)
    assert sorted(frame["prompt"].unique()) == sorted(prompts)
    assert sorted(set(frame["candidate_a"]) | set(frame["candidate_b"])) == sorted(names)
    design = oj.build_design(frame)
    assert design.n_clusters == len(prompts) and sorted(design.candidates) == sorted(names)


def test_leading_zeros_and_numbers_never_merge_or_split(tmp_path):
    # The cases: 30 prompt spellings of 10 numbers; '007' and '7' that never meet,
    # in a slot column holding only numbers (so a number parser would see one model).
    prompts = [f"{'0' * z}{i}" for i in range(1, 11) for z in range(3)]
    pairs = [("007", "x"), ("7", "x"), ("2", "x"), ("2", "y")]
    rows = [{"prompt": p, "candidate_a": a, "candidate_b": b, "judge": "1", "outcome": "A"}
            for p in prompts for a, b in pairs]
    for fmt in ("csv", "tsv", "csv.gz", "jsonl", "parquet"):
        frame, _ = oj.load_judgments(_write(tmp_path / fmt.replace(".", "_"), rows, fmt))
        design = oj.build_design(frame)
        assert design.n_clusters == 30, fmt
        assert sorted(design.candidates) == ["007", "2", "7", "x", "y"], fmt
        assert design.judges == ("1",), fmt


def test_typed_ids_keep_their_digits_and_numbers_stay_numbers(tmp_path):
    # Parquet/DataFrame ints are ids as their digits (no '2.0'); outcome, weight and
    # lengths written as text are parsed as numbers.
    frame = pd.DataFrame({"prompt": [1, 2, 3, 4], "candidate_a": [2, 3, 2, 3], "candidate_b": ["b", "b", "b", "b"],
                          "judge": [7, 7, 7, 7], "outcome": ["1", "0", "0.5", "1"], "weight": ["1", "2", "1", "1e0"],
                          "len_a": ["10", "20", "30", "40"], "len_b": ["5", "5", "5", "5"]})
    frame.to_parquet(tmp_path / "t.parquet")
    for source in (frame, tmp_path / "t.parquet"):
        got, _ = oj.load_judgments(source)
        assert list(got["candidate_a"]) == ["2", "3", "2", "3"] and list(got["judge"]) == ["7"] * 4
        assert list(got["prompt"]) == ["1", "2", "3", "4"]
        assert got["outcome"].tolist() == [1.0, 0.0, 0.5, 1.0] and got["weight"].tolist() == [1.0, 2.0, 1.0, 1.0]
        assert got["len_a"].dtype == float and got["tie_kind"].tolist() == ["", "", "tie", ""]
    floats = frame.assign(candidate_a=[2.0, 3.0, 2.0, 3.0])
    assert sorted(oj.build_design(oj.load_judgments(floats).frame).candidates) == ["2", "3", "b"]


# ----------------------------------------------------------------------------- names
NFD_PAIRS = [("café", "cafe\u0301"), ("Ångström", "A\u030angstro\u0308m"), ("한국", "\u1112\u1161\u11ab\u1100\u116e\u11a8")]
LOOKALIKES = [("m1", "m1\u200b"), ("m1", "\u200bm1"), ("gpt-4", "gpt\u00ad-4"), ("m1", "m1\u202e"),
              ("gpt4", "ｇｐｔ４"), ("m1", "m\u20621"), ("x2", "x²"), ("fi", "ﬁ"), ("m1", "m1\ufeff")]


@SETTINGS
@given(pair=st.sampled_from(NFD_PAIRS), fmt=st.sampled_from(FORMATS), swap=st.booleans())
def test_nfc_and_nfd_spellings_are_one_name(tmp_path_factory, pair, fmt, swap):
    nfc, nfd = pair[::-1] if swap else pair
    rows = _records(["p1"], [nfc, "x", "y"]) + [
        {"prompt": "p2", "candidate_a": nfd, "candidate_b": "x", "judge": "j", "outcome": "B"}]
    frame, _ = oj.load_judgments(_write(tmp_path_factory.mktemp("nfc") / "d", rows, fmt))
    design = oj.build_design(frame)
    assert design.n_cand == 3
    assert unicodedata.normalize("NFC", pair[0]) in design.candidates


@SETTINGS
@given(pair=st.sampled_from(LOOKALIKES), fmt=st.sampled_from(FORMATS), judge=st.booleans())
def test_names_that_differ_only_invisibly_are_refused(tmp_path_factory, pair, fmt, judge):
    plain, other = pair
    rows = _records(["p1"], [plain, "x"])
    extra = {"prompt": "p2", "candidate_a": other, "candidate_b": "x", "judge": "j", "outcome": "B"}
    if judge:
        extra = {"prompt": "p2", "candidate_a": plain, "candidate_b": "x", "judge": f"j{other}", "outcome": "B"}
        rows = [dict(r, judge=f"j{plain}") for r in rows]
    file = _write(tmp_path_factory.mktemp("look") / "d", rows + [extra], fmt)
    with pytest.raises(OscarInputError) as err:
        oj.build_design(oj.load_judgments(file).frame)
    text = str(err.value)
    assert "differ only by invisible characters" in text and f"row {len(rows) + 1}" in text and "row 1" in text
    assert visible(other) in text and other not in text or other.isprintable()


def test_a_frame_built_by_hand_gets_the_same_name_rules():
    frame = pd.DataFrame({"prompt": ["1", "2", "3"], "candidate_a": ["café", "x", "m1\u200b"],
                          "candidate_b": ["x", "cafe\u0301", "x"], "judge": ["j"] * 3, "outcome": [1.0, 0.0, 1.0]})
    assert oj.build_design(frame.iloc[:2]).candidates == ("café", "x")
    with pytest.raises(OscarInputError, match="invisible"):
        oj.build_design(frame.assign(candidate_b=["x", "x", "m1"]))


def test_invisible_and_direction_changing_characters_are_shown_escaped():
    from oscar_jax.report.html import _e
    from oscar_jax.report.render import render_table

    name = "good\u202egnp.exe"
    assert visible(name) == "good\\u202egnp.exe" and visible("café ok") == "café ok"
    assert visible("a\u200bb\tc\U000e0041") == "a\\u200bb\\tc\\U000e0041"
    table = render_table(pd.DataFrame({"candidate": [name, "m\u2066x"]}), [("candidate", "candidate", "")])
    assert "\u202e" not in table and "\u2066" not in table and "good\\u202egnp.exe" in table
    assert _e(name) == "good\\u202egnp.exe" and "\u202e" not in _e("<" + name)
    assert lookalike_key("ｍ１\u200b") == "m1"


# ----------------------------------------------------------------------------- files
def _arena(path: Path, header: str, body: str = "x,y,model_a\ny,x,model_b\n") -> Path:
    path.write_text(header + "\n" + body)
    return path


def test_a_gz_file_that_is_not_gzip_is_named(tmp_path):
    file = _arena(tmp_path / "b.csv.gz", "model_a,model_b,winner")
    with pytest.raises(OscarInputError, match="not gzip-compressed.*rename it without .gz"):
        oj.load_judgments(file)


@pytest.mark.parametrize("header,cols", [("model_a,model_b,winner, winner", "3 ('winner') and 4 (' winner')"),
                                         ("model_a,model_b,winner,winner", "3 ('winner') and 4 ('winner')")])
def test_duplicate_columns_are_refused_naming_both(tmp_path, header, cols):
    file = _arena(tmp_path / "d.csv", header, "x,y,model_a,model_b\n")
    with pytest.raises(OscarInputError, match="columns " + re.escape(cols)):
        oj.load_judgments(file)
    frame = pd.DataFrame([["x", "y", "model_a", "model_b"]], columns=["model_a", "model_b", "winner", " winner"])
    with pytest.raises(OscarInputError, match="columns 3 .* and 4"):
        oj.load_judgments(frame)


@pytest.mark.parametrize("name,header,expected", [
    ("semi.csv", "model_a;model_b;winner", "semicolon-delimited; save it comma-separated"),
    ("title.csv", "Model_A,Model_B,Winner", "closest schema is 'arena'.*'Model_A' → 'model_a'.*'Winner' → 'winner'"),
    ("part.csv", "candidate_a,Candidate B,judge", "closest schema is 'oscar'.*'Candidate B' → 'candidate_b'.*needs "
                                                  "'outcome'"),
])
def test_schema_detection_names_the_closest_schema_and_the_fix(tmp_path, name, header, expected):
    with pytest.raises(OscarInputError, match=expected):
        oj.load_judgments(_arena(tmp_path / name, header))


def test_json_keyed_by_record_id_and_gzipped_json_are_read(tmp_path):
    rows = _records(["001", "1"], ["007", "7"])
    (tmp_path / "k.json").write_text(json.dumps({f"r{i}": r for i, r in enumerate(rows)}))
    for file in (tmp_path / "k.json", _write(tmp_path / "g", rows, "json.gz")):
        frame, _ = oj.load_judgments(file)
        assert len(frame) == 4 and sorted(frame["prompt"].unique()) == ["001", "1"]


def test_design_messages_count_rows_from_one():
    frame = pd.DataFrame({"prompt": ["1", "2"], "candidate_a": ["a", "b"], "candidate_b": ["b", "b"],
                          "judge": ["j", "j"], "outcome": [1.0, 0.0]})
    with pytest.raises(OscarInputError, match="row 2: candidate 'b' is compared with itself"):
        oj.build_design(frame)
    with pytest.raises(OscarInputError, match="column 'outcome' row 2"):
        oj.build_design(frame.assign(candidate_b=["b", "a"], outcome=[1.0, 2.0]))
    with pytest.raises(OscarInputError, match="column 'len_b' row 1"):
        oj.build_design(frame.assign(candidate_b=["b", "a"], len_a=[1.0, 2.0], len_b=[-1.0, 2.0]))


def test_the_cli_refuses_lookalikes_with_exit_2_and_no_traceback(tmp_path):
    file = _write(tmp_path / "d", _records(["p"], ["m1", "m1\u200b", "x"]), "csv")
    out = subprocess.run([sys.executable, "-m", "oscar_jax.cli.main", "fit", str(file), "--model", "bt"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'m1\\u200b' (first at row" in out.stderr and "\u200b" not in out.stderr


def test_json_numbers_in_id_columns_keep_their_digits(tmp_path):
    # Arrow's JSON reader takes files whose ids are all JSON strings; a JSON number in an
    # id column sends the file line by line, where 1e3 stays "1e3" and 7 stays "7".
    lines = ['{"prompt": 1e3, "candidate_a": "007", "candidate_b": 7, "judge": "j", "outcome": 1}',
             '{"prompt": "1000", "candidate_a": 7, "candidate_b": "x", "judge": "j", "outcome": 0.5}',
             '{"prompt": 2.50, "candidate_a": "x", "candidate_b": "007", "judge": "j", "outcome": "B"}']
    for name, opener in (("n.jsonl", open), ("n.jsonl.gz", gzip.open)):
        with opener(tmp_path / name, "wt") as fh:
            fh.write("\n".join(lines) + "\n")
        frame, _ = oj.load_judgments(tmp_path / name)
        assert frame["prompt"].tolist() == ["1e3", "1000", "2.50"]
        assert frame["candidate_b"].tolist() == ["7", "x", "007"] and frame["outcome"].tolist() == [1.0, 0.5, 0.0]


HIDDEN = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u202d", "\u2066", "\u200e",
          "\u0000", "\u0007", "\u001b", "\u0085", "\U000e0041"]


@SETTINGS
@given(base=st.text("abcxyzAB0129-._/", min_size=1, max_size=12).filter(lambda s: s.strip() == s and s.strip()),
       hidden=st.sampled_from(HIDDEN), where=st.integers(0, 12), fmt=st.sampled_from(["csv", "jsonl", "parquet"]))
def test_a_hidden_character_anywhere_in_a_name_is_refused_or_merged(tmp_path_factory, base, hidden, where, fmt):
    # Inside the name the two spellings are refused; at either end, a character that strip()
    # removes (U+0085) makes them one name, and any other is refused too; never two candidates.
    other = base[:where] + hidden + base[where:]
    rows = _records(["p1"], [base, "zz"]) + [
        {"prompt": "p2", "candidate_a": other, "candidate_b": "zz", "judge": "j", "outcome": "B"}]
    file = _write(tmp_path_factory.mktemp("hid") / "d", rows, fmt)
    try:
        design = oj.build_design(oj.load_judgments(file).frame)
    except OscarInputError as err:
        assert "differ only by invisible characters" in str(err) and visible(other) in str(err)
    else:
        assert design.n_cand == 2 and other.strip() == base
