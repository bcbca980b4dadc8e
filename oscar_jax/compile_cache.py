"""The persistent XLA compilation cache shared by the Python API and the ``oscar`` CLI.

The first fit of a model on a data shape compiles a few XLA programs (seconds on a
2-core CPU); a later process that fits the same model on the same shape loads them from
disk instead. Importing :mod:`oscar_jax` enables the cache:

* ``OSCAR_JAX_CACHE_DIR`` chooses the folder (default ``~/.cache/oscar_jax/xla``);
* ``OSCAR_JAX_CACHE_DIR=off`` (or ``0``, ``none``, empty) disables it (the tests do);
* a cache folder the user already gave JAX (``jax_compilation_cache_dir``, or the
  ``JAX_COMPILATION_CACHE_DIR`` variable) is left alone, with its own thresholds.

JAX's default only stores programs that took ≥ 1 s to compile. The programs oscar_jax
runs per result (covariances, targets and their delta-method errors, the leaderboard)
each compile in 0.05–0.5 s, yet together they were most of a CLI run, so every program
is stored (``jax_persistent_cache_min_compile_time_secs = 0``). The folder grows by
roughly 10–200 KB per distinct (model, data shape); delete it at any time.

The cache is trusted code: as JAX warns, do not point it at a folder others can write.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "enable", "ENV_VAR"]

ENV_VAR = "OSCAR_JAX_CACHE_DIR"
_OFF = ("off", "0", "none", "false", "")
_state: dict = {"dir": None}


def _requested() -> Path | None:
    where = os.environ.get(ENV_VAR)
    if where is None:
        return Path.home() / ".cache" / "oscar_jax" / "xla"
    if where.strip().lower() in _OFF:
        return None
    return Path(where).expanduser()


def enable() -> Path | None:
    """Point JAX's persistent compilation cache at oscar_jax's folder; returns it (None: off).

    Safe to call more than once. Never raises: a read-only home or an old JAX only means
    programs are compiled again in each process.
    """
    import jax

    if _state["dir"] is not None:
        return _state["dir"]
    try:
        if jax.config.jax_compilation_cache_dir:  # the user's own cache: keep it and its settings
            return None
    except AttributeError:
        return None
    where = _requested()
    if where is None:
        return None
    try:
        where.mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(where))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    except (OSError, AttributeError):
        return None
    _state["dir"] = where
    return where


def cache_dir() -> Path | None:
    """The folder oscar_jax's compiled programs persist in, or None when the cache is off."""
    return _state["dir"]
