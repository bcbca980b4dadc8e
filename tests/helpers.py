"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oscar_jax.io.data import example_path, shared_data_dir

XU = {
    "mtbench": "judge_results_10k_mtbench.json",
    "ultrafeedback": "judge_results_10k_ultrafeedback.json",
    "chatbot_arena": "judge_results_10k_chatbot_arena.json",
}
REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"
# The Arena-style battles shipped with the package (the other ecosystem files are in tests/data).
ARENA_EXAMPLE = example_path("arena")
# XLA flags for CLI subprocesses whose compilations are counted, not timed: a third less
# CPU per cold process than the default level, with the same programs and counts.
FAST_COMPILE = "--xla_backend_optimization_level=0"


def shared_data(name: str) -> Path:
    """Path of a shared Xu et al. dataset, or skip (fail if OSCAR_REQUIRE_DATA=1)."""
    path = shared_data_dir() / "xu2026" / XU[name]
    if not path.exists():
        message = (f"shared dataset {path} is absent (set OSCAR_DATA_DIR to the folder holding "
                   "xu2026/ to run this test)")
        if os.environ.get("OSCAR_REQUIRE_DATA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def n_memory_mappings() -> int | None:
    """Memory mappings this process holds (Linux), or None where /proc is absent."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return None


def model_layout(design, model: str = "oscar"):
    """(Layout, effective ModelSpec) of ``model`` on ``design``, as the Bayesian tests set them up."""
    import oscar_jax as oj

    spec, _ = design.effective_spec(oj.parse_model(model))
    return design.layout(spec), spec


def record_threads(monkeypatch, module, rendezvous: int = 0) -> list:
    """Names of the threads that call ``module.to_host`` from now on (chunks of a batch).

    ``rendezvous`` n > 1: the first n calls wait for one another (10 s at most), so they run
    on n threads at once even when a chunk would finish before the next one is submitted
    (a loaded machine: the pool then reuses its one idle thread)."""
    import threading

    names = []
    real = module.to_host
    barrier = threading.Barrier(rendezvous, timeout=10) if rendezvous > 1 else None

    def spy(tree):
        names.append(threading.current_thread().name)
        if barrier is not None and len(names) <= rendezvous:
            barrier.wait()
        return real(tree)

    monkeypatch.setattr(module, "to_host", spy)
    return names
