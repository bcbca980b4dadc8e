"""OpenBLAS runs ``OPENBLAS_NUM_THREADS`` threads under oscar_jax (1 unless the user chose)
whichever package the user imported first.

JAX's CPU Cholesky, eigh and SVD are scipy's OpenBLAS. Imported before oscar_jax (as
arviz, statsmodels or scikit-learn do), scipy loads it with a thread per core before
``OPENBLAS_NUM_THREADS`` is read, and a 500-replicate bootstrap took twice as long on
2 cores (issue 16). Each probe runs in a fresh process: import order is the point.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Finds scipy's OpenBLAS on its own (not with oscar_jax's helper, whose import is the
# thing under test), gives it two threads, then imports oscar_jax.
PROBE = r"""
import ctypes, glob, os, sys
import scipy.linalg  # noqa: F401
paths = []
try:
    with open("/proc/self/maps") as maps:
        paths = sorted({l.split()[-1] for l in maps if "openblas" in l.split()[-1].lower() and "scipy" in l})
except OSError:
    import scipy
    root = os.path.dirname(scipy.__file__)
    paths = glob.glob(os.path.join(root + ".libs", "*openblas*")) + glob.glob(os.path.join(root, ".dylibs", "*openblas*"))
lib = None
for path in paths:
    cand = ctypes.CDLL(path)
    for prefix in ("scipy_openblas", "openblas"):
        if hasattr(cand, prefix + "_get_num_threads") and hasattr(cand, prefix + "_set_num_threads"):
            lib, get, put = cand, getattr(cand, prefix + "_get_num_threads"), getattr(cand, prefix + "_set_num_threads")
            break
    if lib is not None:
        break
if lib is None:
    print("none")
    sys.exit(0)
put.argtypes = [ctypes.c_int]
put(2)
before = get()
import oscar_jax  # noqa: F401
print(before, get())
"""


def _threads(user_value=None):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_value is not None:
        env["OPENBLAS_NUM_THREADS"] = user_value
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True,
                         timeout=120).stdout.split()
    if out == ["none"]:
        pytest.skip("scipy here does not use a bundled OpenBLAS")
    return tuple(int(x) for x in out)


def test_openblas_loaded_by_scipy_first_gets_one_thread():
    before, after = _threads()
    assert before == 2, "the probe could not give OpenBLAS two threads"
    assert after == 1


def test_a_thread_count_the_user_set_is_the_one_applied():
    assert _threads("3") == (2, 3)
