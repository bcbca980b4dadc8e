"""How a batch of independent replicates runs inside one compiled call.

A bootstrap, a set of folds or a simulation sweep is one pure per-replicate function
over a leading replicate axis. It can run *vectorised* (``jax.vmap``: every replicate
advances in lockstep, and a batch of solver loops keeps iterating until its slowest
replicate has converged) or *in sequence* (``jax.lax.map``: a compiled loop over
replicates, each stopping at its own convergence). ``lax.map(..., batch_size=w)`` mixes
the two: vmapped groups of ``w``.

On a CPU, XLA does not vectorise the solver's per-cell work across replicates, so a
vmapped batch costs B single solves per iteration *and* runs every replicate for as
many iterations as the slowest one (bootstrap replicates on MT-Bench: mean 13, max 18);
the sequential map is faster and gives bit-for-bit the single-replicate arithmetic. On a
GPU/TPU the vmapped batch fills the device. :func:`default_vmap_width` picks by backend;
every batched entry point takes ``vmap_width`` to override it.

A sequential map keeps one core busy (XLA spreads only large operations over cores), so
on a CPU the chunks of a batch run side by side on host threads (:func:`run_in_order`,
:func:`host_workers`): XLA:CPU executes concurrent calls of one program concurrently,
whereas calls dispatched from one thread run one after the other. Each chunk is the same
program on the same rows, so the results do not depend on the number of threads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from .validate import OscarInputError

__all__ = ["ahead_pool", "compile_ahead", "default_vmap_width", "host_workers", "map_replicates", "run_in_order",
           "workers_setting"]

WORKERS_ENV = "OSCAR_JAX_WORKERS"  # threads that run chunks side by side (default: the usable cores)


def default_vmap_width() -> int | None:
    """Replicates advanced side by side: 1 on CPU (sequential), all of them (None) otherwise."""
    import jax  # (this module is also the CLI's, which checks its settings before JAX loads)

    return 1 if jax.default_backend() == "cpu" else None


def map_replicates(fn: Callable, xs, vmap_width: int | None):
    """``fn`` over the leading axis of the pytree ``xs``: vmapped groups of ``vmap_width``.

    ``vmap_width=None`` (or ≥ the batch size) is a plain ``jax.vmap``; 1 is a sequential
    ``lax.map``. Pure: jit it, shard it, vmap it further.
    """
    import jax

    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    if vmap_width is None or int(vmap_width) >= n:
        return jax.vmap(fn)(xs)
    width = int(vmap_width)
    if width < 1:
        raise ValueError(f"vmap_width must be a positive integer or None, got {vmap_width!r}")
    return jax.lax.map(fn, xs, batch_size=width if width > 1 else None)


def workers_setting() -> int | None:
    """``$OSCAR_JAX_WORKERS`` as a positive integer, None when unset (checked before any work)."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise OscarInputError(f"{WORKERS_ENV}={text!r} is not a positive integer; unset it to use every "
                              "usable core, or set it to 1 to run chunks one at a time")
    return value


def host_workers(n_devices: int = 1) -> int:
    """Chunks of a batch run side by side: the usable cores on a CPU process with one device
    (``$OSCAR_JAX_WORKERS`` overrides), else 1 (devices or processes split the batch).
    """
    import jax

    if n_devices > 1 or jax.default_backend() != "cpu" or jax.process_count() > 1:
        return 1
    setting = workers_setting()
    if setting is not None:
        return setting
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def run_in_order(jobs: Iterable[Callable], workers: int) -> Iterator:
    """Results of the zero-argument ``jobs``, in order, with up to ``workers`` running at once.

    At most ``workers`` results wait in flight, which bounds the memory to that many chunks.
    Concurrent first calls of one program compile it once (JAX and
    :mod:`~oscar_jax.runtime.jit` both wait for the first).
    """
    if workers <= 1:
        for job in jobs:
            yield job()
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="oscar-chunk")
    try:
        pending = []
        for job in jobs:
            pending.append(pool.submit(job))
            if len(pending) >= workers:
                yield pending.pop(0).result()
        for fut in pending:
            yield fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_AHEAD: dict = {"pool": None}


@contextmanager
def compile_ahead():
    """Within this block a persistent program's ``prepare`` loads or compiles it on a worker
    thread (:mod:`oscar_jax.runtime.jit`; the CLI runs every command in it).

    While the main thread compiles the fit, one worker traces and compiles (or loads) the
    programs that will report on it, from argument shapes known before the fit. XLA
    already spreads one compilation over the cores and releases the GIL meanwhile, so what
    this buys is the worker's Python running inside the fit's compilation instead of after
    it. Off by default: a library loop would pay for programs it may never call.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oscar-compile")
    previous, _AHEAD["pool"] = _AHEAD["pool"], pool
    try:
        yield
    finally:
        _AHEAD["pool"] = previous
        pool.shutdown(wait=False)  # what it started still finishes, for a later call to use


def ahead_pool() -> ThreadPoolExecutor | None:
    """The worker thread of the enclosing :func:`compile_ahead` block, or None outside one."""
    return _AHEAD["pool"]
