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

import contextlib
import hashlib
import importlib.util
import os
import pickle
import platform
import sys
import threading
from functools import lru_cache
from pathlib import Path

from .lazy_jax import jax
from .validate import atomic_write

__all__ = ["compile_and_store", "executable_path", "load_executable", "load_lapack_modules", "machine_key"]


@lru_cache(maxsize=1)
def machine_key() -> str:
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
    text = repr((key_text, environment, sorted((options or {}).items()), os.environ.get("XLA_FLAGS", ""), machine_key()))
    return root / "compiled" / f"{label}-{hashlib.sha256(text.encode()).hexdigest()[:40]}.xla"


def _initialize_lapack() -> None:
    """Point jaxlib's LAPACK kernels at their routines (scipy's), as lowering a program that
    calls them does: a loaded executable is never lowered, and an uninitialised kernel crashes
    the process when called. Raises where this JAX has no such step: the executable is then
    not loaded but compiled as usual."""
    load_lapack_modules()
    from jax._src.lax import linalg

    linalg.initialize_lapack()


def load_lapack_modules() -> None:
    """Load scipy's ``cython_blas`` and ``cython_lapack`` (whose routines jaxlib's kernels
    take) without the rest of ``scipy.linalg``, which jaxlib's own import of them runs first:
    0.12 s of a 1 s warm ``oscar fit`` (its array-API layer and f2py), against 0.01. Where
    that cannot be done, jaxlib imports them itself."""
    try:
        import scipy

        folder = Path(scipy.__file__).parent / "linalg"
        for name in ("cython_blas", "cython_lapack"):
            full = f"scipy.linalg.{name}"
            if full in sys.modules:
                continue
            path = next(p for p in folder.iterdir() if p.name.startswith(f"{name}.") and p.suffix in (".so", ".pyd"))
            spec = importlib.util.spec_from_file_location(full, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[full] = module
    except Exception:  # noqa: BLE001 (another layout of scipy: the usual, slower import)
        pass


# Executables this process compiled (and stored, or is storing): one loaded back beside the executable it was
# compiled as failed to run on XLA:CPU ("Function … not found"), so only later processes load
# them (this one keeps its own in memory; after jit.forget() it compiles again).
_STORED_HERE: set[Path] = set()


def load_executable(path: Path | None):
    """The stored executable (a ``jax.stages.Compiled``), or None when there is none to load."""
    if path is None or path in _STORED_HERE or not path.exists():
        return None
    try:
        from jax.experimental import serialize_executable

        blob, in_tree, out_tree = pickle.loads(path.read_bytes())
        _initialize_lapack()  # (once, ~0.01 s: most stored programs call LAPACK, the solvers' Cholesky)
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


def _named(exported, name: str):
    """``exported.call`` under another name: the name of the module JAX compiles, part of
    the key of JAX's own persistent cache."""
    def call(*args):
        return exported.call(*args)

    call.__name__ = call.__qualname__ = name
    return call


def compile_and_store(exported, args, path: Path | None, options: dict | None = None):
    """The exported program compiled for ``args`` (arrays or ``jax.ShapeDtypeStruct``), its
    executable stored at ``path`` (when it can be).

    An executable that JAX's own persistent cache served lacks some of its kernels on XLA:CPU
    once serialized again ("Function … not found" in the process that loads it), so the
    module is named after ``path``: JAX's cache then holds it only from an earlier
    compilation of this very program, and where it serves that one (our file was damaged or
    pruned) the program is compiled once more under a second name before it is stored.
    """
    if path is None:
        return jax.jit(exported.call, compiler_options=options).lower(*args).compile()
    _listening()
    base = path.stem.replace("-", "_")
    for name in (base, base + "_again"):
        before = getattr(_served, "count", 0)
        with _not_in_jax_cache():
            compiled = jax.jit(_named(exported, name), compiler_options=options).lower(*args).compile()
        if getattr(_served, "count", 0) == before:
            _store_soon(compiled, path)
            break
    return compiled


def _not_in_jax_cache():
    """A context (this thread) in which JAX's own persistent cache writes nothing: the
    program is stored here, and a second copy in JAX's cache doubled the disk used and cost
    a cold fit the pickling and compressing of each program (0.04–0.07 s in a profile).
    Where JAX has no such per-thread setting it writes as before, and ``compile_and_store``
    handles an entry it serves."""
    try:
        from jax._src import config

        return config.persistent_cache_min_compile_time_secs(float("inf"))
    except (ImportError, AttributeError, TypeError):
        return contextlib.nullcontext()


def _store_soon(compiled, path: Path) -> None:
    """Store ``compiled`` at ``path``, on the compile-ahead worker where there is one: the
    first run of a cold command then does not wait for the serializing and writing (0.03 s of
    the fit core's ~1 MB), which overlap the program's first call. The worker finishes before
    the process exits; this process never loads the file (it keeps the executable)."""
    from .batching import ahead_pool

    _STORED_HERE.add(path)
    pool = ahead_pool()
    if pool is None:
        _store(compiled, path)
    else:
        pool.submit(_store, compiled, path)


def _store(compiled, path: Path) -> None:
    try:
        from jax.experimental import serialize_executable

        blob = pickle.dumps(serialize_executable.serialize(compiled))
        atomic_write(path, lambda tmp: tmp.write_bytes(blob))
    except Exception:  # noqa: BLE001 (an executable that cannot be serialized, a read-only folder)
        pass
