"""runtime.x64.return_freed_memory: the command's process gives freed arrays back at once."""

import ctypes
import os
import subprocess
import sys

import pytest

CHILD = """
import os, sys
import numpy as np
if sys.argv[1] == "on":
    from oscar_jax.runtime.x64 import return_freed_memory
    return_freed_memory()

def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

base = rss_mb()
for n in (3_000_000, 2_000_000, 2_000_000):  # 24, then 16 MB arrays, each made and freed
    a = np.ones(n)
    del a
grown = rss_mb() - base
import pyarrow
print(round(grown, 1), os.environ.get("ARROW_DEFAULT_MEMORY_POOL"), pyarrow.default_memory_pool().backend_name)
"""


def _glibc() -> bool:
    try:
        return bool(ctypes.CDLL(None).gnu_get_libc_version)
    except (OSError, AttributeError):
        return False


def _child(mode: str, **env):
    clean = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_MMAP_THRESHOLD_")}
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True,
                         env={**clean, **env})
    grown, variable, pool = out.stdout.split()
    return float(grown), variable, pool


@pytest.mark.skipif(not (sys.platform.startswith("linux") and _glibc()), reason="glibc's mallopt on Linux")
def test_freed_arrays_leave_the_process_and_arrow_reads_through_the_system_allocator():
    grown, variable, pool = _child("on")
    assert grown < 4 and variable == "system" and pool == "system"
    # Negative control: glibc's default raises its mmap threshold to 24 MB at the first free (up
    # to 32 MB it follows the largest block freed), so the 16 MB arrays come from the heap and stay.
    grown_default, variable, _ = _child("off")
    assert grown_default > 12 and variable == "None"


def test_a_pool_the_user_chose_wins():
    _, variable, pool = _child("on", ARROW_DEFAULT_MEMORY_POOL="mimalloc")
    assert variable == "mimalloc" and pool == "mimalloc"
