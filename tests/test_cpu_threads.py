"""runtime.x64.one_thread_cpu_backend: the backend starts with one intra-op thread, the process keeps its CPUs."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                reason="needs an OS affinity call and at least two CPUs")

CHILD = """
import os
from oscar_jax.runtime.x64 import one_thread_cpu_backend
before = os.sched_getaffinity(0)
with one_thread_cpu_backend() as on:
    inside = os.sched_getaffinity(0)
    import jax, numpy as np
    jax.device_put(np.zeros(2)).block_until_ready()
after = os.sched_getaffinity(0)
every = all(os.sched_getaffinity(int(t)) == before for t in os.listdir("/proc/self/task"))
with one_thread_cpu_backend() as again:  # the backend runs already: nothing to restrict
    pass
print(on, len(inside), after == before and every, again)
"""


def _child(**env):
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return out.stdout.split()


def test_backend_starts_on_one_cpu_and_every_thread_gets_the_cpus_back():
    assert _child() == ["True", "1", "True", "False"]


def test_all_keeps_the_pool_of_every_cpu():
    on, inside, same, again = _child(OSCAR_JAX_CPU_THREADS="all")
    assert on == "False" and int(inside) >= 2 and same == "True"
