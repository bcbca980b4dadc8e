"""``oscar report``: one self-contained HTML page, checked with an HTML parser and a real browser."""

from __future__ import annotations

import base64
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

import oscar_jax as oj
from oscar_jax.cli.main import main
from oscar_jax.report.leaderboard import arena_leaderboard
from oscar_jax.report.html import _flags, report_html
from helpers import ARENA_EXAMPLE

DATA = Path(__file__).resolve().parent / "data"
BATTLES = str(ARENA_EXAMPLE)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Tags with attributes, the text of headings, and every table as rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tags, self.headings, self.tables = [], [], []
        self._heading = None
        self._cell = None
        self._row = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("h1", "h2"):
            self._heading = []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self._heading.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    argv = ["report", BATTLES, "--model", "j+p", "-o", str(out)]
    assert main(argv) == 0
    return out, argv


def test_page_is_self_contained_with_every_section(made):
    path, argv = made
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    page = parse(text)
    tags = [t for t, _ in page.tags]
    # No scripts, no stylesheets or fonts fetched from elsewhere: CSS is inline.
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    assert tags.count("style") == 1
    for tag, attrs in page.tags:
        for key in ("src", "href"):
            if key in attrs:
                assert attrs[key].startswith("data:"), (tag, attrs[key][:60])
    assert "url(" not in text and "@import" not in text
    for heading in ("Leaderboard", "Judges", "Win probabilities", "Data notes and checks", "How this page was made"):
        assert heading in page.headings
    assert any(h.startswith("Position bias attenuates") for h in page.headings)
    # Four figures (forest, judge panel, heatmap, attenuation), each a real PNG inlined as base64.
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == 4
    for attrs in images:
        prefix = "data:image/png;base64,"
        assert attrs["src"].startswith(prefix) and attrs.get("alt")
        data = base64.b64decode(attrs["src"][len(prefix):], validate=True)
        assert data[:8] == PNG_SIGNATURE and len(data) > 10_000
    # The exact command and the versions.
    body = "".join(page.text)
    assert "oscar " + " ".join(argv) in body
    versions = {row[0]: row[1] for row in page.tables[-1][1:]}
    assert versions["oscar_jax"] == oj.__version__
    assert {"python", "jax", "numpy", "matplotlib"} <= set(versions)


def test_leaderboard_and_judge_tables_match_the_fit(made):
    path, _ = made
    page = parse(path.read_text(encoding="utf-8"))
    result = oj.fit(BATTLES, "j+p")
    board = arena_leaderboard(result, scale="elo")
    logit = result.leaderboard().set_index("candidate")
    lb = page.tables[0]
    header = lb[0]
    assert header[:3] == ["Rank (UB)", "Model", "Elo"] and "Votes" in header and "logit" in header
    assert [r[1] for r in lb[1:]] == list(board.candidate)
    col = {h: i for i, h in enumerate(header)}
    for row, ref in zip(lb[1:], board.itertuples()):
        assert int(row[col["Rank (UB)"]]) == ref.rank_ub
        assert float(row[col["Elo"]]) == pytest.approx(ref.score, abs=0.5)
        assert float(row[col["logit"]]) == pytest.approx(logit.loc[ref.candidate, "score"], abs=5e-4)
        lo, hi = (float(x) for x in row[col["Elo 95% CI"]].strip("[]").split(","))
        assert lo == pytest.approx(ref.score_lo, abs=0.5) and hi == pytest.approx(ref.score_hi, abs=0.5)
        assert int(row[col["Votes"]].replace(",", "")) == ref.votes
    judges = page.tables[1]
    names = [r[0] for r in judges[1:]]
    ref_name = result.design.judges[result.design.reference]
    assert names.count(f"* {ref_name}") == 1 and len(names) == result.design.n_judge
    assert "D" in judges[0]
    checks = page.tables[2]
    assert checks[0] == ["check", "result", "details"]
    assert {r[0] for r in checks[1:]} >= {"converged", "stationarity", "curvature", "connected"}


def test_flags_read_from_the_table():
    """Flags are read from the table's flags column (a list or the tables' comma-joined text) and
    shown only when one is raised."""
    table = pd.DataFrame({"judge": ["a", "b"], "flags": [["few records", "separated"], []]})
    assert _flags(table, "judge") == {"a": "few records, separated", "b": ""}
    assert _flags(pd.DataFrame({"judge": ["a"], "flags": ["penalty-dominated"]}), "judge") == {"a": "penalty-dominated"}
    assert _flags(table.drop(columns="flags"), "judge") == {}
    assert _flags(pd.DataFrame({"judge": ["a"], "flags": [""]}), "judge") == {}


def test_flags_column_appears_when_the_result_has_flags(monkeypatch):
    result = oj.fit(BATTLES, "j+p")
    cls = type(result)
    plain_judges = cls.judges

    def judges_with_flags(self, ci="sandwich"):
        frame = plain_judges(self, ci)
        frame["flags"] = [["few records"] if i == 0 else [] for i in range(len(frame))]
        return frame

    monkeypatch.setattr(cls, "judges", judges_with_flags)
    page = parse(report_html(result, j_fit=oj.fit(result.design, "j"), pos_fit=result))
    judges = page.tables[1]
    assert judges[0][-1] == "flags" and judges[1][-1] == "few records" and judges[2][-1] == ""
    assert "flags" not in page.tables[0][0]  # candidates carry none here


def test_bad_output_name_is_refused(capsys, tmp_path):
    assert main(["report", BATTLES, "-o", str(tmp_path / "report.txt")]) == 2
    assert "give a name ending in .html" in capsys.readouterr().err
    assert not (tmp_path / "report.txt").exists()


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_browser() is None, reason="no headless Chromium here (Debian: apt-get install chromium)")
def test_report_renders_in_headless_chromium(made, tmp_path):
    path, _ = made
    shot = tmp_path / "shot.png"
    proc = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1200,3000", f"--screenshot={shot}", path.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    image = imread(shot)[..., :3]
    assert image.shape[:2] == (3000, 1200)
    # Not blank: many distinct colours (text, tables, figures), content down the page.
    assert len(np.unique((image.reshape(-1, 3) * 255).astype(np.uint8), axis=0)) > 200
    inked = (image < 0.9).any(axis=2)
    rows_with_ink = np.flatnonzero(inked.any(axis=1))
    assert rows_with_ink.size > 0 and rows_with_ink.max() > 2000  # figures rendered, not just a title
    assert inked.mean() > 0.05


def test_report_carries_the_small_data_advice(tmp_path):
    out = tmp_path / "small.html"
    assert main(["report", str(DATA / "eco_arenahard.jsonl"), "--baseline", "gpt-4-0314", "--strong-weight", "3",
                 "-o", str(out)]) == 0
    body = "".join(parse(out.read_text(encoding="utf-8")).text)
    assert "small data for this model" in body and "Try --model j+p" in body
    assert "--strong-weight 3 counts each strong verdict" in body
