"""Compiled programs stored whole, so that a warm process runs them without lowering them.

JAX's persistent compilation cache finds an executable by a hash of its lowered module, so
a process must lower a program before it can look it up: for the fit core, read back from
its exported StableHLO (:mod:`oscar_jax.runtime.jit`), that lowering is 0.2–0.3 s of a warm
``oscar fit`` on a 2-core machine (and the covariances' lowering competes with it for the
interpreter on the compile thread). Here the XLA executable itself is stored
(``jax.experimental.serialize_executable``) in the cache's ``compiled/`` subfolder, under
the exported program's key plus what an executable depends on beyond its program: the
package and JAX versions (:func:`~oscar_jax.runtime.jit` passes its environment digest),
the compiler options, ``XLA_FLAGS``, the device, and the processor's instruction-set
features (an executable built for one CPU need not run on another).

Only single-device programs are stored: a sharded program's executable is bound to its
devices. A file that cannot be read or loaded is ignored and compiled again; the cache is
trusted code (``docs/caching.md``), as JAX's own is.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import platform
import threading
from functools import lru_cache
from pathlib import Path

from .lazy_jax import jax

__all__ = ["compile_and_store", "executable_path", "load_executable"]


@lru_cache(maxsize=1)
def _machine() -> str:
    """The backend, its device, and on CPU the instruction-set features the executable may use."""
    features = platform.machine() + platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            features += next((line for line in fh if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    device = jax.devices()[0]
    return f"{jax.default_backend()}|{device.device_kind}|{jax.device_count()}|{features}"


def executable_path(root: Path, label: str, key_text: str, environment: str, options: dict | None) -> Path | None:
    """Where the executable of this program is stored; None where it must not be (several devices)."""
    if jax.device_count() != 1:
        return None
    text = repr((key_text, environment, sorted((options or {}).items()), os.environ.get("XLA_FLAGS", ""), _machine()))
    return root / "compiled" / f"{label}-{hashlib.sha256(text.encode()).hexdigest()[:40]}.xla"


def _initialize_lapack() -> None:
    """Point jaxlib's LAPACK kernels at their routines (scipy's), as lowering a program that
    calls them does: a loaded executable is never lowered, and an uninitialised kernel crashes
    the process when called. Once per process (the first call imports scipy's LAPACK: ~0.08 s,
    which lowering paid before). Raises where this JAX has no such step: the executable is
    then not loaded but compiled as usual."""
    from jax._src.lax import linalg

    linalg.initialize_lapack()


# Executables this process compiled and stored: one loaded back beside the executable it was
# compiled as failed to run on XLA:CPU ("Function … not found"), so this process compiles
# again (JAX's own caches serve it) and only later processes load it.
_STORED_HERE: set[Path] = set()


def load_executable(path: Path | None):
    """The stored executable (a ``jax.stages.Compiled``), or None when there is none to load."""
    if path is None or path in _STORED_HERE or not path.exists():
        return None
    try:
        from jax.experimental import serialize_executable

        blob, in_tree, out_tree = pickle.loads(path.read_bytes())
        _initialize_lapack()  # (the solvers' Cholesky: every program that is stored calls LAPACK)
        return serialize_executable.deserialize_and_load(blob, in_tree, out_tree)
    except Exception:  # noqa: BLE001 (truncated, foreign or stale: compiled again and replaced)
        return None


_served = threading.local()  # per thread: executables JAX's own persistent cache has served


def _count_served(event: str, **_) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _served.count = getattr(_served, "count", 0) + 1


@lru_cache(maxsize=1)
def _listening() -> bool:
    jax.monitoring.register_event_listener(_count_served)
    return True


def compile_and_store(lowerable, args, path: Path | None):
    """``lowerable.lower(*args).compile()``, its executable stored at ``path`` (when it can be).

    An executable that JAX's own persistent cache served is not stored: serialized again it
    lacks some of its kernels on XLA:CPU ("Function … not found" in the process that loads
    it), so only a program compiled here is stored; JAX's cache keeps serving the other.
    """
    _listening()
    before = getattr(_served, "count", 0)
    compiled = lowerable.lower(*args).compile()
    if path is not None and getattr(_served, "count", 0) == before:
        try:
            from jax.experimental import serialize_executable

            blob = pickle.dumps(serialize_executable.serialize(compiled))
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, path)
            _STORED_HERE.add(path)
        except Exception:  # noqa: BLE001 (an executable that cannot be serialized, a read-only folder)
            pass
    return compiled
