"""The README's examples run as printed, on data shipped with the package."""

from __future__ import annotations

import re
from pathlib import Path

from oscar_jax.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_python_example_runs_verbatim(capsys, monkeypatch, tmp_path):
    (code,) = _blocks("python")
    monkeypatch.chdir(tmp_path)  # it reads only what the package ships, from anywhere
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "claude-3-haiku" in out and "gpt-4-turbo" in out  # the leaderboard and the judge table printed
    strict, model = namespace["strict"], namespace["model"]
    assert strict.design.judges == ("gpt-4-turbo",) and strict.design.n_records < model.design.n_records
    assert namespace["boot"].batch.n == 100


def test_the_arena_example_prints_what_the_readme_shows(capsys, monkeypatch, tmp_path):
    command = next(b for b in _blocks("bash") if b.startswith("oscar fit oscar_jax/io/examples/"))
    argv = command.split()[1:]
    shown = next(b for b in _blocks("text") if b.startswith("Arena-style leaderboard"))
    monkeypatch.chdir(README.parent)  # the command names the file as seen from the repository root
    argv[argv.index("--plots") + 1] = str(tmp_path / "plots")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert shown.strip() in out
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "attenuation.png", "forest.png", "judge_panel.png", "win_heatmap.png"]


def test_every_name_the_readme_presents_is_on_the_face():
    import oscar_jax as oj

    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"\boj\.([A-Za-z_]\w*)", text))
    named |= set(re.findall(r"`(fit|bootstrap|compare|attenuation_refit|human_agreement|fit_bayes|fit_batch)`", text))
    assert named and sorted(named - set(oj.__all__)) == []
    assert all(hasattr(oj, name) for name in oj.__all__)
