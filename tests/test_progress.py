"""Progress off a terminal: periodic one-line reports on stderr, silent when asked."""

from __future__ import annotations

import io
import time

import pytest

from oscar_jax.runtime.progress import LogLines, announce, progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_log_lines_report_at_the_interval_and_at_the_end():
    clock, out = Clock(), io.StringIO()
    log = LogLines(600, "simulate", every=30, stream=out, clock=clock)
    for _ in range(10):  # 10 updates in 20 s: nothing yet
        clock.now += 2
        log.update(12)
    assert out.getvalue() == ""
    clock.now = 31.0
    log.update(0)
    clock.now = 62.0
    log.update(120)
    log.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "oscar: simulate 120/600 fits (20%), 31 s elapsed, about 2 min left"
    assert lines[1].startswith("oscar: simulate 240/600 fits (40%), 62 s elapsed, about 2 min left")
    assert lines[2] == "oscar: simulate 240/600 fits (40%), 62 s elapsed, about 2 min left"  # the closing line
    assert len(lines) == 3


def test_short_runs_print_nothing():
    clock, out = Clock(), io.StringIO()
    log = LogLines(5, "bootstrap", every=30, stream=out, clock=clock)
    log.update(5)
    log.close()
    assert out.getvalue() == ""


def test_timer_reports_while_the_main_thread_is_busy():
    out = io.StringIO()
    log = LogLines(1, "bootstrap", every=0.02, stream=out).start_timer()
    deadline = time.monotonic() + 20.0  # generous: the machine may be loaded
    while "oscar: bootstrap 0/1 fits" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)  # stands in for one long compiled call that never calls update()
    log.update(1)
    log.close()
    text = out.getvalue()
    assert "oscar: bootstrap 0/1 fits (0%)" in text
    assert text.splitlines()[-1].startswith("oscar: bootstrap 1/1 fits (100%)")


def test_progress_off_a_terminal_writes_lines_to_stderr(monkeypatch, capsys):
    monkeypatch.delenv("OSCAR_PROGRESS", raising=False)
    monkeypatch.setenv("OSCAR_PROGRESS_EVERY", "0.01")
    with progress(3, "compare folds") as bar:  # capsys' stderr is not a terminal
        for _ in range(3):
            time.sleep(0.03)
            bar.update(1)
    err = capsys.readouterr().err
    assert "oscar: compare folds" in err and err.splitlines()[-1].startswith("oscar: compare folds 3/3 fits (100%)")
    monkeypatch.setenv("OSCAR_PROGRESS", "0")
    with progress(3, "compare folds") as bar:
        time.sleep(0.03)
        bar.update(3)
    announce("audit: sampling")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("flag", [False])
def test_explicitly_disabled_is_silent(monkeypatch, capsys, flag):
    monkeypatch.delenv("OSCAR_PROGRESS", raising=False)
    monkeypatch.setenv("OSCAR_PROGRESS_EVERY", "0.001")
    with progress(2, "simulate", enabled=flag) as bar:
        time.sleep(0.01)
        bar.update(2)
    assert capsys.readouterr().err == ""
