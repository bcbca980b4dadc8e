"""Chunks of a batch side by side on host threads (oscar_jax.runtime.batching.run_in_order, host_workers).

The estimates not depending on the number of threads is tested where the batches are run
(tests/test_resample.py, tests/test_sweep.py); here, the scheduler itself: order, the bound
on chunks in flight, errors, and the worker count.
"""

from __future__ import annotations

import threading
import time

import pytest

from oscar_jax.runtime.batching import WORKERS_ENV, host_workers, run_in_order
from oscar_jax.runtime.validate import OscarInputError


def _jobs(delays, log):
    lock = threading.Lock()
    live = [0]

    def job(i, delay):
        with lock:
            live[0] += 1
            log.append(live[0])
        time.sleep(delay)
        with lock:
            live[0] -= 1
        return i, threading.current_thread().name

    return [lambda i=i, d=d: job(i, d) for i, d in enumerate(delays)]


def test_results_come_in_order_with_at_most_workers_in_flight():
    # Later jobs finish first: the order must still be the jobs' order.
    log = []
    out = list(run_in_order(_jobs([0.08, 0.04, 0.0, 0.06, 0.02, 0.0, 0.03], log), workers=3))
    assert [i for i, _ in out] == list(range(7))
    assert max(log) == 3, log  # three ran at once, never more
    assert all(name.startswith("oscar-chunk") for _, name in out)


def test_one_worker_runs_every_job_on_the_calling_thread():
    log = []
    out = list(run_in_order(_jobs([0.0] * 4, log), workers=1))
    assert [i for i, _ in out] == [0, 1, 2, 3] and max(log) == 1
    assert {name for _, name in out} == {threading.current_thread().name}


def test_an_error_in_a_job_reaches_the_caller_and_stops_the_rest():
    ran = []

    def job(i):
        ran.append(i)
        if i == 1:
            raise ValueError("chunk 1 failed")
        time.sleep(0.02)
        return i

    jobs = (lambda i=i: job(i) for i in range(50))
    with pytest.raises(ValueError, match="chunk 1 failed"):
        list(run_in_order(jobs, workers=2))
    assert len(ran) < 50  # jobs not yet submitted are never started


def test_worker_count_from_the_environment(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert host_workers() >= 1
    assert host_workers(n_devices=2) == 1  # devices split the batch themselves
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert host_workers() == 3
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(OscarInputError, match=f"{WORKERS_ENV}='{bad}' is not a positive integer"):
            host_workers()


def test_the_command_line_rejects_a_bad_worker_count_before_any_work(monkeypatch, capsys):
    # The file does not exist either: the setting is reported first, before anything is read.
    from oscar_jax.cli import main as cli

    monkeypatch.setenv(WORKERS_ENV, "all")
    assert cli.main(["bootstrap", "no_such_file.csv", "--replicates", "10"]) == 2
    err = capsys.readouterr().err
    assert f"oscar bootstrap: error: {WORKERS_ENV}='all' is not a positive integer" in err
