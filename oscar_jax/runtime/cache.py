"""The folder compiled programs persist in, shared by the Python API and the ``oscar`` CLI.

The first fit of a model on a data shape compiles a few XLA programs (seconds on a 2-core
CPU); a later process that fits the same model on the same shape loads them from disk.
:func:`configure` (run by ``import oscar_jax``, without importing JAX) points JAX's
persistent compilation cache at the folder:

* ``OSCAR_JAX_CACHE_DIR`` chooses it (default ``~/.cache/oscar_jax/xla``);
* ``OSCAR_JAX_CACHE_DIR=off`` (or ``0``, ``none``, empty) disables it (the tests use their own);
* a cache the user already gave JAX (``jax_compilation_cache_dir``, or the
  ``JAX_COMPILATION_CACHE_DIR`` variable) is left alone, with its own thresholds.

Every program is stored (JAX's default keeps only those that took ≥ 1 s to compile).
The folder is bounded by ``OSCAR_JAX_CACHE_MAX_MB`` (default 1024; :func:`prune`, when a
process first uses it) and repairs an unreadable entry (:func:`drop_unreadable_entry`).
:mod:`oscar_jax.runtime.jit` keeps the traced programs in its ``exported/`` subfolder.
How and why: ``docs/caching.md``. The cache is trusted code: as JAX warns, do not point
it at a folder others can write.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
import sys
import threading
from pathlib import Path

from .x64 import set_before_jax

__all__ = ["ENV_VAR", "MAX_MB_VAR", "cache_dir", "configure", "drop_unreadable_entry", "prune", "remembered",
           "remembered_arrays"]

ENV_VAR = "OSCAR_JAX_CACHE_DIR"
MAX_MB_VAR = "OSCAR_JAX_CACHE_MAX_MB"
JAX_DIR_VAR = "JAX_COMPILATION_CACHE_DIR"
_OFF = ("off", "0", "none", "false", "")
_state: dict = {"dir": None, "pruned": False}
_lock = threading.Lock()
_tables: dict = {}  # remembered values read this process, by file


def _requested() -> Path | None:
    where = os.environ.get(ENV_VAR)
    if where is None:
        return Path.home() / ".cache" / "oscar_jax" / "xla"
    if where.strip().lower() in _OFF:
        return None
    return Path(where).expanduser()


def configure() -> Path | None:
    """Point JAX's persistent compilation cache at oscar_jax's folder; returns it (None: off).

    Does not import JAX: before JAX is imported the folder and threshold go through the
    environment, which JAX reads at its import; after, through ``jax.config``. Safe to
    call more than once. Never raises: a read-only home only means programs are compiled
    again in each process.
    """
    if _state["dir"] is not None:
        return _state["dir"]
    where = _requested()
    jax = sys.modules.get("jax")
    if jax is not None:
        if getattr(jax.config, "jax_compilation_cache_dir", None):  # the user's own cache: keep it and its settings
            return None
    elif os.environ.get(JAX_DIR_VAR) and (where is None or os.environ[JAX_DIR_VAR] != str(where)):
        return None  # (equal: set by an oscar_jax parent process for this same folder)
    if where is None:
        return None
    try:
        where.mkdir(parents=True, exist_ok=True)
        set_before_jax(JAX_DIR_VAR, str(where), "jax_compilation_cache_dir")
        set_before_jax("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0", "jax_persistent_cache_min_compile_time_secs",
                       0.0)
    except (OSError, AttributeError):
        return None
    _state["dir"] = where
    return where


def cache_dir() -> Path | None:
    """The folder oscar_jax's compiled programs persist in, or None when the cache is off.

    The first call prunes it to its bound (a scan of the folder, paid where the first
    program is built rather than by ``import oscar_jax``).
    """
    where = _state["dir"]
    if where is not None and not _state["pruned"]:
        with _lock:
            if not _state["pruned"]:
                _state["pruned"] = True
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


_UNREADABLE = re.compile(r"Error reading persistent compilation cache entry for '([^']+)'")


def drop_unreadable_entry(message: str, folder: str | None = None) -> bool:
    """Remove the cache entries a JAX "Error reading … cache entry" warning names.

    JAX never replaces an existing entry, so an unreadable one (a run killed while writing,
    a disk error) would warn on every later run; the CLI passes each warning through here,
    and the program is compiled once more and cached afresh. Returns True when the message
    was such a warning and at least one entry was removed. Entries are files
    ``NAME-<hash>-cache`` in ``folder`` (default JAX's ``jax_compilation_cache_dir``).
    """
    match = _UNREADABLE.search(str(message))
    if not match:
        return False
    if folder is None:
        import jax

        folder = jax.config.jax_compilation_cache_dir
    if not folder:
        return False
    removed = False
    for path in Path(folder).glob(f"{glob.escape(match.group(1))}-*-cache"):
        try:
            path.unlink()
            removed = True
        except OSError:
            pass
    return removed


def remembered(name: str, key: str, compute) -> float:
    """``compute()``, a float, kept under ``key`` in the cache folder's ``values/NAME.json``:
    a later process reads it instead of importing what computes it (the sweep's t
    quantiles: ``scipy.special`` costs 0.17 CPU-s to import). Exact: a float round-trips
    through JSON. ``key`` must name everything the value depends on, versions included.
    Without a cache folder, or when it cannot be written, the value is computed each time.
    """
    return _remember(name, key, lambda: float(compute()), lambda v: isinstance(v, float))


def remembered_arrays(name: str, key: str, compute) -> dict:
    """``compute()``, a dict of float arrays, kept as :func:`remembered` keeps a float and
    returned as float64 numpy arrays, the same bits each time (every float round-trips
    through JSON): the sweep's generating truth, which eager JAX computes in 0.07 CPU-s."""
    import numpy as np

    def encoded():
        return {k: [list(np.shape(v)), np.asarray(v, np.float64).ravel().tolist()] for k, v in compute().items()}

    def valid(v) -> bool:
        return isinstance(v, dict) and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], list)
                                           and isinstance(x[1], list) and math.prod(x[0]) == len(x[1])
                                           for x in v.values())

    value = _remember(name, key, encoded, valid)
    return {k: np.asarray(flat, np.float64).reshape(shape) for k, (shape, flat) in value.items()}


def _remember(name: str, key: str, compute, valid):
    folder = cache_dir()
    if folder is None:
        return compute()
    path = folder / "values" / f"{name}.json"
    with _lock:
        if path not in _tables:
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                table = {}
            _tables[path] = table if isinstance(table, dict) else {}
        table = _tables[path]
        if valid(table.get(key)):
            return table[key]
    from .validate import atomic_write_text  # (here: ``import oscar_jax`` loads this module)

    value = compute()
    with _lock:
        table[key] = value
        try:
            atomic_write_text(path, json.dumps(table))
        except OSError:
            pass
    return value
