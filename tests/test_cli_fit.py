"""``oscar fit``: Arena-style JSON and tables, anchoring, plots, interval sources."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from oscar_jax import fit
from oscar_jax.cli.main import main
from oscar_jax.report.text import fit_report
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
BATTLES = str(ARENA_EXAMPLE)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EXACT = 1e-9  # values copied between tables; rounding only


def run(capsys, *argv):
    code = main(["fit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_elo_json_has_arena_fields_and_plots(capsys, tmp_path):
    code, out, _ = run(capsys, BATTLES, "--model", "j+p", "--scale", "elo", "--format", "json",
                       "--plots", str(tmp_path / "plots"))
    assert code == 0
    payload = json.loads(out)
    for key in ("model", "n_records", "n_prompts", "objective", "candidates", "judges", "win_prob", "checks"):
        assert key in payload
    assert payload["n_records"] == 240 and payload["n_prompts"] == 20
    for cand in payload["candidates"]:
        assert {"candidate", "score", "score_lo", "score_hi", "rank", "rank_ub", "votes"} <= set(cand)
        assert cand["score_lo"] < cand["score"] < cand["score_hi"]
    elos = [c["score"] for c in payload["candidates"]]
    assert np.mean(elos) == pytest.approx(1000.0, abs=EXACT)  # unanchored: the field sits at 1000
    assert payload["scale"]["scale"] == "elo" and payload["ci_prob"] == 0.95
    assert payload["data"]["ties"] == {"ties": 30, "'tie (bothbad)' ties": 16}
    names = sorted(Path(p).name for p in payload["plots"].values())
    assert names == ["attenuation.png", "forest.png", "judge_panel.png", "win_heatmap.png"]
    for path in payload["plots"].values():
        data = Path(path).read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 10_000


def test_elo_table_and_default_logit_report(capsys):
    code, out, _ = run(capsys, BATTLES, "--model", "j+p", "--scale", "elo", "--anchor", "gpt-4-0314=1114")
    assert code == 0
    assert "Arena-style leaderboard (95% CI, prompt-cluster sandwich" in out
    assert "Rank (UB)  Model" in out and "95% CI (+x/−y)  Votes" in out
    assert "anchored: gpt-4-0314 = 1114" in out and "(anchor)" in out
    code, out, _ = run(capsys, BATTLES, "--model", "j+p")
    assert code == 0
    # The logit scale keeps the package's full text report, unchanged.
    # (followed by plain-language notes, e.g. that these data separate no candidate)
    assert out.strip().startswith(fit_report(fit(BATTLES, "j+p")).strip())
    assert "Rank (UB)" not in out


def test_anchor_in_json(capsys):
    code, out, _ = run(capsys, BATTLES, "--model", "j+p", "--scale", "logit", "--anchor", "gpt-4", "--format", "json")
    assert code == 0
    payload = json.loads(out)
    anchor = {c["candidate"]: c for c in payload["candidates"]}["gpt-4-0314"]
    assert payload["scale"]["anchor"] == "gpt-4-0314"  # unique substring resolves
    assert anchor["score"] == 0.0 and anchor["score_lo"] == anchor["score_hi"] == 0.0


def test_bad_input_exits_2_with_message(capsys):
    code, _, err = run(capsys, BATTLES, "--anchor", "nobody=3")
    assert code == 2 and "anchor candidate 'nobody' is not in the data" in err
    code, _, err = run(capsys, BATTLES, "--anchor", "x=abc")
    assert code == 2 and "is not a number" in err
    code, _, err = run(capsys, BATTLES, "--baseline", "gpt-4-0314", "--schema", "arena")
    assert code == 2 and "arena-hard files only" in err


@pytest.mark.parametrize("kind", ["bootstrap", "bayes"])
def test_draw_source_options_are_checked_before_fitting(capsys, kind):
    code, _, err = run(capsys, BATTLES, "--ci", kind, "--replicates", "1")
    assert code == 2 and "replicates" in err


def test_bootstrap_intervals_from_the_bootstrap(capsys, monkeypatch):
    """--ci bootstrap: intervals come from the replicates that passed; points stay the full fit."""
    import dataclasses
    import importlib

    module = importlib.import_module("oscar_jax.bootstrap")  # the package's face shadows it with the function
    calls = {}
    real = module.bootstrap

    def bootstrap(design, model, replicates, seed, **kw):
        calls.update(replicates=replicates, seed=seed, model=model.name)
        boot = real(design, model, replicates, seed, **kw)
        ok = np.asarray(boot.batch.core.point_ok, bool).copy()
        ok[0] = False  # one failed replicate: left out and counted
        core = boot.batch.core._replace(point_ok=ok)
        return dataclasses.replace(boot, batch=dataclasses.replace(boot.batch, core=core))

    monkeypatch.setattr(module, "bootstrap", bootstrap)
    code, out, _ = run(capsys, BATTLES, "--model", "j+p", "--ci", "bootstrap", "--replicates", "50",
                       "--seed", "3", "--scale", "elo", "--format", "json")
    assert code == 0
    assert calls == {"replicates": 50, "seed": 3, "model": "J+P"}
    payload = json.loads(out)
    assert payload["ci"] == "bootstrap" and payload["scale"]["n_draws"] == 49
    assert payload["scale"]["n_failed_draws"] == 1
    code, ref, _ = run(capsys, BATTLES, "--model", "j+p", "--scale", "elo", "--format", "json")
    ref = json.loads(ref)
    for a, b in zip(payload["candidates"], ref["candidates"]):
        assert a["score"] == pytest.approx(b["score"], abs=EXACT)
        assert a["score_hi"] - a["score_lo"] != pytest.approx(b["score_hi"] - b["score_lo"], rel=1e-3)


def test_arena_hard_options(capsys):
    path = str(DATA / "eco_arenahard.jsonl")
    code, out, _ = run(capsys, path, "--model", "j+p", "--baseline", "gpt-4-0314", "--strong-weight", "3",
                       "--format", "json")
    assert code == 0
    payload = json.loads(out)
    assert payload["data"]["schema"] == "arena-hard" and payload["n_records"] == 240
    assert any("weighted 3" in n for n in payload["data"]["notes"])


def test_bootstrap_with_the_resample_module(capsys):
    pytest.importorskip("oscar_jax.bootstrap")
    code, out, _ = run(capsys, BATTLES, "--model", "j+p", "--ci", "bootstrap", "--replicates", "20",
                       "--scale", "elo", "--format", "json")
    assert code == 0
    payload = json.loads(out)
    assert payload["scale"]["n_draws"] + payload["scale"]["n_failed_draws"] == 20
    for cand in payload["candidates"]:
        # Percentile bounds need not be symmetric; the point is the full-data fit.
        assert cand["score_lo"] <= cand["score_hi"] and cand["score_hi"] - cand["score_lo"] > 0
