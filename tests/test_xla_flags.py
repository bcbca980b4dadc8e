"""Importing oscar_jax asks XLA for deterministic GPU scatters, and leaves a user's choice alone.

On a GPU the segment sums of the per-record derivatives are scatter-adds; with atomics their
order varies and the same bootstrap differed by 3e-15 between two calls (H200,
benchmarks/results/gpu.md). CI has no GPU, so these tests check the flag the fix relies on.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = "import os, oscar_jax; print(os.environ.get('XLA_FLAGS', ''))"


def _flags_after_import(xla_flags=None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.strip()


def test_deterministic_gpu_ops_requested_and_other_flags_kept():
    assert _flags_after_import(None) == "--xla_gpu_deterministic_ops=true"
    flags = _flags_after_import("--xla_cpu_multi_thread_eigen=false")
    assert flags.split() == ["--xla_cpu_multi_thread_eigen=false", "--xla_gpu_deterministic_ops=true"]


def test_user_choice_of_the_flag_wins():
    assert _flags_after_import("--xla_gpu_deterministic_ops=false") == "--xla_gpu_deterministic_ops=false"
