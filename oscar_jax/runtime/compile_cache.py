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
roughly 10–200 KB per distinct (model, data shape). It is bounded: when a process enables
it and the folder holds more than ``OSCAR_JAX_CACHE_MAX_MB`` (default 1024) megabytes,
the least recently used files are deleted until it is under 80% of that (:func:`prune`).
Delete it at any time.

The cache is trusted code: as JAX warns, do not point it at a folder others can write.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "enable", "prune", "ENV_VAR", "MAX_MB_VAR"]

ENV_VAR = "OSCAR_JAX_CACHE_DIR"
MAX_MB_VAR = "OSCAR_JAX_CACHE_MAX_MB"
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
    try:
        prune(where, int(float(os.environ.get(MAX_MB_VAR, 1024)) * 2**20))
    except (OSError, ValueError):
        pass  # a bound that cannot be applied only leaves the folder as it is
    return where


def prune(folder: Path, max_bytes: int) -> int:
    """Delete the least recently used files under ``folder`` while it holds more than
    ``max_bytes``, down to 80% of it; returns the number of files deleted.

    "Used" is the later of a file's access and modification times. A file another process
    is reading stays readable until closed (POSIX), and a deleted entry is only compiled
    again, so racing processes lose time, never correctness.
    """
    files = []
    for path in Path(folder).rglob("*"):
        try:
            st = path.stat()
        except OSError:
            continue
        if path.is_file():
            files.append((max(st.st_atime, st.st_mtime), st.st_size, path))
    total = sum(size for _, size, _ in files)
    if total <= max_bytes:
        return 0
    removed = 0
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if total <= 0.8 * max_bytes:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def cache_dir() -> Path | None:
    """The folder oscar_jax's compiled programs persist in, or None when the cache is off."""
    return _state["dir"]
