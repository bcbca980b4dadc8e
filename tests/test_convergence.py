"""One R-hat threshold and wording (bayes, audit) and periodic progress lines off a terminal."""

import math
import time

from oscar_jax.infer.posterior import RHAT_MAX, rhat_flag, rhat_message, rhat_ok
from oscar_jax.runtime.progress import progress


def test_one_rhat_threshold():
    assert RHAT_MAX == 1.01
    assert rhat_ok(1.0099) and not rhat_ok(1.01) and not rhat_ok(1.025)
    assert rhat_ok(None) and rhat_ok(math.nan)          # one chain: nothing to compare
    assert rhat_flag(1.025) == "POOR" and rhat_flag(1.004) == "ok"
    msg = rhat_message(1.025, "theta[v]")
    assert msg.startswith("R-hat 1.025 ≥ 1.01 (theta[v])") and "chains disagree" in msg


def test_audit_and_bayes_use_the_same_threshold():
    from oscar_jax.audit import bayes as audit_bayes
    from oscar_jax.bayes import _diagnostics

    assert _diagnostics.RHAT_MAX is RHAT_MAX
    assert audit_bayes.rhat_ok is rhat_ok and audit_bayes.rhat_message is rhat_message


def test_progress_lines_off_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("OSCAR_PROGRESS", raising=False)
    with progress(10, "NUTS test", unit="it", lines=True, every_s=3600.0) as bar:
        for _ in range(10):
            bar.update(1)
    assert capsys.readouterr().err == ""  # a short run reports nothing
    with progress(10, "NUTS test", unit="it", lines=True, every_s=0.001) as bar:
        for _ in range(10):
            time.sleep(0.005)
            bar.update(1)
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("oscar: NUTS test 10/10 its (100%)")  # ends with the final count
    monkeypatch.setenv("OSCAR_PROGRESS", "0")
    with progress(10, "NUTS test", unit="it", lines=True) as bar:
        bar.update(10)
    assert capsys.readouterr().err == ""
