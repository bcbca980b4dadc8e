"""Several processes on jax.distributed: `--processes N` runs the code path of a cluster job
(global mesh over every process' CPU device, gloo collectives) and must print and write
exactly what one process does, and a process that dies must stop the job with an error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oscar_jax.cli.main import main
from oscar_jax.runtime.multiprocess import ENV_COORDINATOR, ENV_HEARTBEAT, ENV_NUM_PROCESSES, ENV_PROCESS_ID, free_port

ROOT = Path(__file__).resolve().parents[1]
DATA = str(ROOT / "tests" / "data" / "eco_oscar.csv")


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OSCAR_JAX_CACHE_DIR"] = "off"
    env.pop("XLA_FLAGS", None)  # one CPU device per process
    env.update(extra)
    return env


def _oscar(args, timeout=300, **env):
    return subprocess.run([sys.executable, "-m", "oscar_jax.cli.main", *args], capture_output=True, text=True,
                          env=_env(**env), timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_two_process_bootstrap_matches_one_process(tmp_path, capsys):
    args = ["bootstrap", DATA, "--replicates", "200", "--seed", "3", "--format", "json"]
    assert main(args + ["--out", str(tmp_path / "one")]) == 0
    one = capsys.readouterr().out
    run = _oscar(args + ["--out", str(tmp_path / "two"), "--processes", "2"])
    assert run.returncode == 0, run.stderr
    # Both processes took part (one CPU device each, a 2-device global mesh) ...
    assert "started process 1/2" in run.stderr
    # ... and stdout is one JSON document, byte for byte the single-process one.
    assert run.stdout == one
    assert json.loads(run.stdout)["valid"] == 200
    for name in ("result.json", "leaderboard.csv", "judges.csv", "rank_distribution.csv"):
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
    assert "[Gloo]" not in run.stdout + run.stderr


@pytest.mark.slow
def test_two_process_sweep_matches_one_process(capsys):
    args = ["simulate", "--n", "50", "--reps", "4", "--methods", "j", "--seed", "1", "--format", "json",
            "--no-compile-ahead"]
    assert main(args) == 0
    one = capsys.readouterr().out
    run = _oscar(args + ["--processes", "2"])
    assert run.returncode == 0, run.stderr
    assert run.stdout == one
    rows = json.loads(run.stdout)
    assert len(rows) == 1 and rows[0]["n_ok"] + rows[0].get("n_failed", 0) >= 1


def _read_lines(stream, lines, seen, needle):
    for line in iter(stream.readline, ""):
        lines.append(line)
        if needle in line:
            seen.set()


def test_killed_process_stops_the_launcher_with_an_error():
    proc = subprocess.Popen([sys.executable, "-m", "oscar_jax.cli.main", "bootstrap", DATA, "--replicates", "200000",
                             "--processes", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=ROOT)
    lines, started = [], threading.Event()
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, lines, started, "started process 1/2"),
                              daemon=True)
    reader.start()
    try:
        assert started.wait(120), "".join(lines)
        pid = int(next(ln for ln in lines if "started process 1/2" in ln).split("pid ")[1].split(")")[0])
        os.kill(pid, signal.SIGKILL)
        # Bounded: the launcher notices at once and stops process 0; a hang fails here.
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(5)
    out = proc.stdout.read()
    proc.stdout.close()
    proc.stderr.close()
    err = "".join(lines)
    assert code == 1
    assert "process 1 of 2 was killed by signal SIGKILL; stopped the other processes" in err
    assert out == ""  # nothing half-written


@pytest.mark.slow
def test_without_launcher_a_dead_peer_ends_the_job_by_heartbeat():
    """The srun / pod path: no launcher watching, the heartbeat timeout ends the survivor."""
    env = _env(**{ENV_COORDINATOR: f"127.0.0.1:{free_port()}", ENV_NUM_PROCESSES: "2", ENV_HEARTBEAT: "3"})
    args = [sys.executable, "-m", "oscar_jax.cli.main", "bootstrap", DATA, "--replicates", "200000", "--chunk-size", "50",
            "--distributed"]
    p0 = subprocess.Popen(args, env=dict(env, **{ENV_PROCESS_ID: "0"}), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT)
    p1 = subprocess.Popen(args, env=dict(env, **{ENV_PROCESS_ID: "1"}), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        lines, connected = [], threading.Event()
        reader = threading.Thread(target=_read_lines, args=(p0.stderr, lines, connected, "[Gloo] Rank 0"),
                                  daemon=True)
        reader.start()
        connected.wait(90)  # both reached the first collective (kill anyway if slow)
        p1.kill()
        code = p0.wait(timeout=60)
        reader.join(5)
    finally:
        for p in (p0, p1):
            if p.poll() is None:
                p.kill()
    for stream in (p0.stdout, p0.stderr):
        stream.close()
    assert code != 0
    err = "".join(lines)
    # The coordination service names the dead task: "Task 1 heartbeat timeout" when the
    # survivor is past start-up, or (killed earlier) an error naming task 1 as failed.
    assert "heartbeat timeout" in err or "task:1" in err or "Task 1" in err, err[:2000]


@pytest.mark.parametrize("extra, message", [
    (["--processes", "0"], "--processes must be ≥ 1"),
    (["--processes", "2", "--distributed"], "not both"),
    (["--heartbeat-timeout", "0"], "--heartbeat-timeout must be ≥ 1"),
])
def test_process_arguments_are_validated(extra, message, capsys):
    assert main(["bootstrap", DATA, "--replicates", "10"] + extra) == 2
    assert message in capsys.readouterr().err
