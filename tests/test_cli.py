"""The ``oscar`` command line: demo, errors and exit codes."""

import json

import pandas as pd

from oscar_jax.cli.main import main


def test_demo_table_fits_80_columns(capsys):
    assert main(["demo", "--n-prompts", "300", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "Judges: sensitivity κ with and without bias terms" in out and "1−D²" in out
    assert "Next steps" in out and "oscar report FILE -o report.html" in out
    assert "Rankings against the truth" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_demo_json(capsys):
    assert main(["demo", "--n-prompts", "300", "--seed", "5", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["OSCAR"]["model"] == "OSCAR" and out["J"]["model"] == "J"
    assert out["q_vs_truth"]["OSCAR"]["q_rmse"] < out["q_vs_truth"]["J"]["q_rmse"]
    assert len(out["attenuation"]) == 5


def test_bad_input_exits_2_with_message(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["draw"]}).to_csv(path, index=False)
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "column 'winner' row 1: unknown label 'draw'" in err


def test_missing_file_exits_2(capsys):
    assert main(["fit", "/nonexistent/file.csv"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "fit" in capsys.readouterr().out
