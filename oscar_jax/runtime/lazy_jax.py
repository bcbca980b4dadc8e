"""JAX, loaded where a program first needs it.

A plain Bradley–Terry fit (``oscar fit --model bt``), ``--help``, argument and input
errors, and every table drawn from a finished fit run in host numpy; importing JAX would
cost each of them about half a CPU-second, more than the work itself. So the package's
modules take ``jax`` and ``jax.numpy`` from here: stand-ins that import the real module at
the first attribute read (``jnp.sum``, ``jax.jit``, ``jax.Array``) and then hold each
attribute read, so later reads cost what a module's do. Defining a function that uses
them loads nothing; calling it, or tracing it, does.

What must follow JAX's import (:func:`when_loaded`: the settings passed through the
environment put back, the result types registered for ``jax.export``) runs right after
JAX's own import, whoever imports it (a stand-in, the user, NumPyro), or at once where
JAX is imported already. Whether a value is a JAX array is asked without loading JAX
(:func:`is_jax_array`): where JAX is not imported, nothing can be one.
"""

from __future__ import annotations

import sys
import types
from typing import Callable

__all__ = ["is_jax_array", "jax", "jnp", "when_loaded"]

_PENDING: list[Callable[[], None]] = []


def _run_pending() -> None:
    while _PENDING:
        _PENDING.pop(0)()


class _AfterJaxImport:
    """A finder that finds nothing itself: it wraps JAX's loader so that what waits for JAX
    runs once JAX's ``__init__`` has finished, then steps out of the import system."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                load = spec.loader.exec_module

                def exec_module(module, load=load):
                    load(module)
                    _run_pending()

                spec.loader.exec_module = exec_module
                return spec
        return None


def when_loaded(hook: Callable[[], None]) -> None:
    """Run ``hook`` once JAX is imported: now, where it is."""
    if "jax" in sys.modules:
        hook()
        return
    _PENDING.append(hook)
    if not any(isinstance(f, _AfterJaxImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterJaxImport())


class _Deferred(types.ModuleType):
    """A module's name that imports it at the first attribute read."""

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__") and attr != "__version__":
            raise AttributeError(attr)  # introspection (inspect, pickle, doctest) loads nothing
        value = getattr(__import__(self.__name__, fromlist=["_"]), attr)
        setattr(self, attr, value)
        return value


jax = _Deferred("jax")
jnp = _Deferred("jax.numpy")


def is_jax_array(x) -> bool:
    """Whether ``x`` is a JAX array or tracer, without importing JAX where it is not imported."""
    return "jax" in sys.modules and isinstance(x, jax.Array)
