"""Several processes on JAX's distributed runtime: join a job, launch one on this machine.

Replicate batches (bootstrap replicates, simulated datasets) split over a 1-D device
mesh (:mod:`oscar_jax.runtime.sharding`). After :func:`jax.distributed.initialize` the mesh spans
the devices of every process, so the same code runs one process per GPU, per TPU host
or per SLURM task: every process builds the same inputs from the same seed, runs its own
shard of the replicates, and the results are gathered back (``process_allgather``) so
that every process holds them; only process 0 prints and writes files.

* :func:`initialize` — ``jax.distributed.initialize`` with oscar's defaults (a bounded
  heartbeat, so a dead peer stops the others), reading ``OSCAR_COORDINATOR``,
  ``OSCAR_NUM_PROCESSES`` and ``OSCAR_PROCESS_ID`` when set, otherwise JAX's own
  detection (SLURM, Open MPI, Cloud TPU, ``JAX_COORDINATOR_ADDRESS``).
* :func:`launch` — start N copies of an ``oscar`` command on this machine with a
  coordinator on 127.0.0.1 (a free port) and CPU collectives over gloo: exactly the code
  path of a cluster job, on a laptop. If one process dies the others are stopped and the
  launcher exits with an error naming it.
* :func:`is_primary` — whether this process prints and writes (process 0).

The CLI wires these in (``oscar bootstrap … --processes N`` or ``--distributed``);
see ``docs/scaling.md`` for the recipes.
"""

from __future__ import annotations

import collections
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Sequence

__all__ = ["ENV_COORDINATOR", "ENV_NUM_PROCESSES", "ENV_PROCESS_ID", "initialize", "is_primary", "is_worker",
           "launch", "free_port", "quiet_secondary_output"]

ENV_COORDINATOR = "OSCAR_COORDINATOR"
ENV_NUM_PROCESSES = "OSCAR_NUM_PROCESSES"
ENV_PROCESS_ID = "OSCAR_PROCESS_ID"
ENV_HEARTBEAT = "OSCAR_HEARTBEAT_TIMEOUT"

DEFAULT_HEARTBEAT_S = 30  # JAX's default is 100 s; a dead peer should stop a job sooner
_GRACE_S = 1.0  # SIGTERM → SIGKILL delay (JAX traps SIGTERM as a preemption notice and keeps running)


def is_worker() -> bool:
    """Whether this process was started by :func:`launch` (the environment names its rank)."""
    return ENV_PROCESS_ID in os.environ


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, heartbeat_timeout_seconds: int | None = None,
               initialization_timeout: int = 300) -> None:
    """Join a multi-process JAX job (call before any JAX computation).

    Arguments left ``None`` come from ``OSCAR_COORDINATOR`` / ``OSCAR_NUM_PROCESSES`` /
    ``OSCAR_PROCESS_ID`` when :func:`launch` started this process, otherwise from JAX's
    cluster detection (SLURM, Open MPI, Cloud TPU pods) or ``JAX_COORDINATOR_ADDRESS``.
    ``heartbeat_timeout_seconds`` (default ``$OSCAR_HEARTBEAT_TIMEOUT`` or 30): a process
    that has not been heard from for this long is declared dead, and every other process
    aborts with "Task i heartbeat timeout" instead of waiting forever in a collective.
    A second call in the same process does nothing.
    """
    import jax

    if jax.distributed.is_initialized():
        return
    if is_worker():
        coordinator_address = coordinator_address or os.environ.get(ENV_COORDINATOR)  # else JAX_COORDINATOR_ADDRESS
        num_processes = num_processes if num_processes is not None else int(os.environ[ENV_NUM_PROCESSES])
        process_id = process_id if process_id is not None else int(os.environ[ENV_PROCESS_ID])
    if heartbeat_timeout_seconds is None:
        heartbeat_timeout_seconds = int(os.environ.get(ENV_HEARTBEAT, DEFAULT_HEARTBEAT_S))
    kwargs = dict(heartbeat_timeout_seconds=int(heartbeat_timeout_seconds),
                  initialization_timeout=int(initialization_timeout),
                  shutdown_timeout_seconds=max(10, int(heartbeat_timeout_seconds)))
    if is_worker():
        # Everything is given: skip cluster auto-detection, which would otherwise read a
        # surrounding SLURM allocation's task count and rank.
        kwargs["cluster_detection_method"] = "deactivate"
    jax.distributed.initialize(coordinator_address, num_processes, process_id, **kwargs)


def is_primary() -> bool:
    """True in process 0 (and in an ordinary single-process run): the one that writes output."""
    import jax

    return jax.process_index() == 0


def quiet_secondary_output() -> None:
    """Route C++ chatter on fd 1 (gloo's "[Gloo] Rank 0 is connected …") to stderr, keep
    Python's stdout for process 0's results, and drop stdout in the other processes.

    In a multi-process job stdout then carries exactly what a single-process run prints.
    """
    sys.stdout.flush()
    keep = os.dup(1)
    os.dup2(2, 1)
    if is_primary():
        sys.stdout = io.TextIOWrapper(os.fdopen(keep, "wb"), encoding="utf-8", write_through=True)
    else:
        os.close(keep)
        sys.stdout = open(os.devnull, "w", encoding="utf-8")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the coordinator binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _forward(stream, rank: int, sink, keep) -> None:
    """Copy process 0's stderr to ours as it comes; keep the last lines of the others
    (they repeat process 0's warnings) to show only if that process fails. gloo's
    connection notices are dropped."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if line.startswith("[Gloo] Rank"):
            continue
        if rank == 0:
            sink.write(line)
            sink.flush()
        else:
            keep.append(line)
    stream.close()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def launch(argv: Sequence[str], n_processes: int, *, heartbeat_timeout_seconds: int | None = None,
           python: str | None = None, poll_s: float = 0.05) -> int:
    """Run ``python -m oscar_jax.cli.main *argv`` as ``n_processes`` cooperating local processes.

    Process 0 hosts the coordinator on 127.0.0.1 at a free port; each process sees one CPU
    device (or its own accelerators) and the replicate mesh spans them all. Process 0's
    stdout and stderr are this process'; the others' stdout is discarded and their stderr
    is shown (prefixed ``[process i/N]``) only if they fail. Each child's pid is announced
    on stderr.

    If a process exits with an error or is killed, the others are stopped (SIGTERM, then
    SIGKILL after 1 s) and the launcher returns 1 after naming it (2 if every process
    rejected the input with status 2). Returns 0 when all succeed.
    """
    if n_processes < 1:
        raise ValueError(f"--processes must be ≥ 1, got {n_processes}")
    python = python or sys.executable
    port = free_port()
    base = dict(os.environ)
    base[ENV_COORDINATOR] = f"127.0.0.1:{port}"
    base[ENV_NUM_PROCESSES] = str(n_processes)
    base["JAX_PLATFORMS"] = base.get("JAX_PLATFORMS", "cpu") or "cpu"
    if heartbeat_timeout_seconds is not None:
        base[ENV_HEARTBEAT] = str(int(heartbeat_timeout_seconds))
    procs, threads, tails = [], [], []
    try:
        for rank in range(n_processes):
            env = dict(base, **{ENV_PROCESS_ID: str(rank)})
            p = subprocess.Popen([python, "-m", "oscar_jax.cli.main", *argv], env=env, stdin=subprocess.DEVNULL,
                                 stdout=None if rank == 0 else subprocess.DEVNULL, stderr=subprocess.PIPE)
            procs.append(p)
            tails.append(collections.deque(maxlen=40))
            t = threading.Thread(target=_forward, args=(p.stderr, rank, sys.stderr, tails[-1]), daemon=True)
            t.start()
            threads.append(t)
            print(f"oscar: started process {rank}/{n_processes} (pid {p.pid}), coordinator 127.0.0.1:{port}",
                  file=sys.stderr, flush=True)
        failed = None
        while failed is None:
            codes = [p.poll() for p in procs]
            bad = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                failed = bad
            elif all(c == 0 for c in codes):
                break
            else:
                time.sleep(poll_s)
        if failed is not None:
            # Give the others a moment to fail the same way (bad input: all exit 2).
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline and any(p.poll() is None for p in procs):
                time.sleep(poll_s)
            codes = [p.poll() for p in procs]
            if all(c == 2 for c in codes):
                return 2
            _stop(procs)
            for t in threads:
                t.join(timeout=2.0)
            rank, code = failed[0]
            if rank > 0 and tails[rank]:
                sys.stderr.write("".join(f"[process {rank}/{n_processes}] {line}" for line in tails[rank]))
            print(f"oscar: error: process {rank} of {n_processes} {_describe(code)}; stopped the other "
                  "processes (no output was written unless process 0 finished)", file=sys.stderr, flush=True)
            return 1
        for t in threads:
            t.join(timeout=5.0)
        return 0
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    finally:
        _stop(procs)


def _stop(procs) -> None:
    live = [p for p in procs if p.poll() is None]
    for p in live:
        p.terminate()
    deadline = time.monotonic() + _GRACE_S
    for p in live:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# --------------------------------------------------------------------------- the CLI
def add_process_arguments(parser) -> None:
    """``--processes N`` / ``--distributed`` / ``--heartbeat-timeout`` for batch commands."""
    group = parser.add_argument_group("several processes (docs/scaling.md)")
    group.add_argument("--processes", type=int, default=None, metavar="N",
                       help="run as N cooperating processes on this machine (jax.distributed, coordinator on "
                            "127.0.0.1, CPU collectives over gloo); output is that of one process")
    group.add_argument("--distributed", action="store_true",
                       help="join a jax.distributed job started by a scheduler (SLURM srun, Open MPI, Cloud TPU "
                            "pod; or JAX_COORDINATOR_ADDRESS with --num-processes/--process-id in the env); "
                            "process 0 prints and writes")
    group.add_argument("--heartbeat-timeout", type=int, default=None, metavar="S",
                       help=f"seconds after which a silent process counts as dead and the job stops "
                            f"(default {DEFAULT_HEARTBEAT_S})")


def cli_start(args, argv: Sequence[str]) -> int | None:
    """Run before a command: launch local processes (returns their exit status), or join
    the job this process belongs to (returns None; the command then runs as usual)."""
    from .validate import OscarInputError

    n = getattr(args, "processes", None)
    distributed = getattr(args, "distributed", False)
    heartbeat = getattr(args, "heartbeat_timeout", None)
    if heartbeat is not None and heartbeat < 1:
        raise OscarInputError(f"--heartbeat-timeout must be ≥ 1 second, got {heartbeat}")
    if n is not None and n < 1:
        raise OscarInputError(f"--processes must be ≥ 1, got {n}")
    if n is not None and distributed:
        raise OscarInputError("give --processes N (start N local processes) or --distributed (join a scheduler's "
                              "job), not both")
    if n is not None and n > 1 and not is_worker():
        return launch(list(argv), n, heartbeat_timeout_seconds=heartbeat)
    if is_worker() or distributed:
        try:
            initialize(heartbeat_timeout_seconds=heartbeat)
        except ValueError as err:  # no scheduler detected and no coordinator given
            raise OscarInputError(f"--distributed: {str(err).rstrip('.')}. Run under srun / a TPU pod, or set JAX_COORDINATOR_ADDRESS="
                                  "host0:port plus OSCAR_NUM_PROCESSES and OSCAR_PROCESS_ID on every process; on "
                                  "one machine use --processes N") from None
        import jax

        if jax.process_count() > 1:
            quiet_secondary_output()
            if not is_primary():
                args.out = None  # process 0 writes files
    return None
