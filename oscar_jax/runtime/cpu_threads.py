"""Start XLA's CPU backend with one intra-op thread, for work made of many small sequential steps.

XLA:CPU sizes its intra-op thread pool once, when the backend starts, from the CPUs the
process may run on, and offers no option to choose it. NUTS is ~10⁵ leapfrog steps of a
few dozen small operations each, one chain after another; there the pool's hand-offs cost
more than they save: the default ``oscar bayes`` on MT-Bench took 77.8 CPU-s (59.5 s wall)
with the pool of a 2-core machine and 48.3 CPU-s (48.3 s wall) with one thread, the same
draws to the bit (``benchmarks/results/bayes_speed_mtbench.md``). So ``oscar bayes`` starts
the backend while the process may run on one CPU only, then gives the process its CPUs back.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

__all__ = ["one_thread_cpu_backend"]


def _backend_running() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


@contextmanager
def one_thread_cpu_backend():
    """Within the block, the process may run on one CPU; a JAX backend started there gets a
    one-thread intra-op pool (and keeps it). Yields whether the restriction was applied.

    Nothing is restricted where a backend is already running (JAX used earlier in the
    process), where the OS has no affinity call (macOS, Windows), where the process has one
    CPU, or where ``OSCAR_JAX_CPU_THREADS=all``. Threads started inside the block (the pool's,
    Arrow's reader pool) stay on that CPU; the caller's thread gets its CPUs back on exit.
    """
    if (os.environ.get("OSCAR_JAX_CPU_THREADS", "").lower() == "all" or not hasattr(os, "sched_setaffinity")
            or _backend_running()):
        yield False
        return
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        yield False
        return
    os.sched_setaffinity(0, {min(cpus)})
    try:
        yield True
    finally:
        os.sched_setaffinity(0, cpus)
