"""Names in text tables: reference marker kept, organisation prefixes handled alike, 100 columns, --wide."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.cli.main import main
from oscar_jax.report.render import TABLE_WIDTH, render_table, shorten, shorten_names, table_width
from oscar_jax.report.text import judges_text, win_text
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
LONG_JUDGES = {"claude-3-opus": "anthropic-research/claude-3-opus-20240229-judge",
               "gpt-4-turbo": "openai-platform/gpt-4-turbo-2024-04-09-judge"}
LONG_MODELS = {"gpt-4-0314": "openai-platform/gpt-4-0314-snapshot-model",
               "claude-3-haiku": "anthropic-research/claude-3-haiku-20240307",
               "mixtral-8x7b-instruct": "mistralai/Mixtral-8x7B-Instruct-v0.1-long",
               "llama-3-8b-instruct": "meta-llama/Meta-Llama-3-8B-Instruct-long"}


@pytest.fixture(scope="module")
def long_names(tmp_path_factory):
    frame = pd.read_csv(ARENA_EXAMPLE)
    frame["judge"] = frame["judge"].map(LONG_JUDGES)
    for col in ("model_a", "model_b"):
        frame[col] = frame[col].map(LONG_MODELS)
    path = tmp_path_factory.mktemp("names") / "long.csv"
    frame.to_csv(path, index=False)
    return path


def test_shorten_keeps_the_reference_marker():
    assert shorten("*arcee_ai/arcee-spotlight", 20) == "*arcee-spotlight"
    assert shorten("*arcee_ai/arcee-spotlight-extra-long-name", 12) == "*arcee-spot…"
    assert shorten("meta-llama/Llama-4-Scout-17B", 40) == "meta-llama/Llama-4-Scout-17B"  # fits: unchanged
    assert shorten("meta-llama/Llama-4-Scout-17B-16E-Instruct", 20) == "Llama-4-Scout-17B-1…"  # cut at the end


def test_shorten_names_treats_the_column_alike():
    names = ["meta-llama/Llama-4-Scout-17B-16E-Instruct", "Qwen/Qwen3-8B", "gpt-oss-20b", "*zai-org/GLM-4.5"]
    assert shorten_names(names, 60) == names  # everything fits: nothing changes
    assert shorten_names(names, 30) == ["Llama-4-Scout-17B-16E-Instruct", "Qwen3-8B", "gpt-oss-20b", "*GLM-4.5"]
    # Dropping the organisation would make two names equal: those keep theirs.
    assert shorten_names(["a/x", "b/x", "org/a-very-long-model-name"], 10) == ["a/x", "b/x", "a-very-lo…"]


def test_judge_table_marks_the_reference_with_org_prefix(long_names):
    result = oj.fit(long_names, "j+p")
    text = judges_text(result)
    ref = result.design.judges[result.design.reference]
    assert "/" in ref
    rows = [line for line in text.splitlines() if line.startswith("*")]
    assert len(rows) == 1 and ref.split("/", 1)[1] in rows[0]
    assert max(len(line) for line in text.splitlines()) <= TABLE_WIDTH
    # The win matrix shows names as wide as 100 columns allow, not 9 characters.
    matrix = win_text(result)
    header = next(line for line in matrix.splitlines() if line.startswith("row beats col"))
    assert "claude-3-haiku-" in header and "Mixtral-8x7B-In" in header  # 16 characters, not 9
    assert max(len(line) for line in matrix.splitlines()) <= TABLE_WIDTH


def test_secondary_columns_go_before_names_are_cut():
    frame = pd.DataFrame({"name": ["mistralai/Mixtral-8x7B-Instruct-v0.1", "Qwen/Qwen3-235B-A22B"],
                          **{f"c{i}": [f"[{i}.123, {i}.456]"] * 2 for i in range(6)}})
    cols = [("name", "name", "")] + [(f"c{i}", f"col {i}", "") for i in range(6)]
    text = render_table(frame, cols, name_col="name", secondary=("c5", "c4", "c3"))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= TABLE_WIDTH
    assert "col 5" not in lines[0] and "col 0" in lines[0]
    assert lines[-1].startswith("(columns left out to fit 100 characters: col 5") and "--wide" in lines[-1]
    assert "Mixtral-8x7B-Instr" in text  # the name keeps at least 16 characters
    with table_width(None):
        wide = render_table(frame, cols, name_col="name", secondary=("c5", "c4", "c3"))
    assert "col 5" in wide and "mistralai/Mixtral-8x7B-Instruct-v0.1" in wide


def test_bootstrap_fits_100_columns_and_wide_shows_all(long_names, capsys):
    argv = ["bootstrap", str(long_names), "--model", "j+p", "--replicates", "20"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= TABLE_WIDTH
    starred = [line for line in out.splitlines() if line.startswith("*")]
    assert len(starred) == 1 and "-judge" in starred[0]
    assert main(argv + ["--wide"]) == 0
    wide = capsys.readouterr().out
    assert "anthropic-research/claude-3-haiku-20240307" in wide
