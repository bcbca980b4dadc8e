"""``persistent_jit``: jitted functions whose compiled programs persist across processes.

XLA's persistent compilation cache (:mod:`oscar_jax.runtime.cache`) skips the compile step
in a new process, but its key is the lowered program, so every process still traces and
lowers each function first: for the fit core that is 1–2 s of Python, most of a warm
``oscar fit``. :func:`persistent_jit` stores the *lowered* program (``jax.export``,
StableHLO) per (function, static arguments, argument shapes) in the cache's ``exported/``
subfolder and, once compiled, its executable in ``compiled/``
(:mod:`oscar_jax.runtime.executables`): a new process loads the executable and runs it
without tracing, lowering or compiling (where it cannot, it compiles the stored StableHLO).
The program run is the same StableHLO the plain jit would compile, so results are
bit-identical (tests/test_program_cache.py). :func:`stored_program` gives the same store to
code that compiles ahead of time (the simulation sweep's per-method programs). Inside
:func:`~oscar_jax.runtime.batching.compile_ahead` (the CLI), a program's ``prepare``
compiles it on a worker thread while the fit compiles. How and why: ``docs/caching.md``.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import weakref
from concurrent.futures import Future
from functools import cached_property, lru_cache
from pathlib import Path

from . import cache
from .batching import ahead_pool
from .executables import compile_and_store, executable_path, load_executable, load_lapack_modules, machine_key
from .lazy_jax import jax, when_loaded
from .progress import compiling
from .validate import atomic_write

__all__ = ["RUN_ONCE", "environment_key", "forget", "persistent_jit", "register_pytree_names", "stored_program"]

_FAILED = object()
_ALL: "weakref.WeakSet[_PersistentJit]" = weakref.WeakSet()


def register_pytree_names(*types) -> None:
    """Let ``jax.export`` (de)serialize these NamedTuples as inputs or outputs (once JAX is loaded:
    the modules that call this at their import are loaded by paths that compile nothing)."""
    def register():
        for cls in types:
            try:
                jax.export.register_namedtuple_serialization(cls,
                                                             serialized_name=f"{cls.__module__}.{cls.__qualname__}")
            except ValueError:  # registered already (a module reloaded)
                pass

    when_loaded(register)


@lru_cache(maxsize=1)
def _environment_digest() -> str:
    """Package source + JAX versions + backend: any change gives new program keys."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # the whole package, not this folder
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    import jaxlib

    h.update(f"{jax.__version__}|{jaxlib.__version__}|{jax.default_backend()}|"
             f"{jax.config.jax_enable_x64}".encode())
    return h.hexdigest()


def environment_key() -> str:
    """What a value that XLA computes depends on beyond its inputs: the package source, the JAX
    versions and backend (:func:`_environment_digest`) and the machine's processor features
    (:mod:`~oscar_jax.runtime.executables`)."""
    return hashlib.sha256(f"{_environment_digest()}|{machine_key()}".encode()).hexdigest()[:40]


def _folder() -> Path | None:
    where = cache.cache_dir()
    return None if where is None else where / "exported"


def _top_level() -> bool:
    """False inside a trace (jit, vmap, grad), where even concrete arguments become part
    of the enclosing program: the plain jit is what that program should inline."""
    try:
        from jax._src import core

        return bool(core.trace_state_clean())
    except (ImportError, AttributeError):  # another JAX: the tracer check alone decides
        return True


def _fast_signature(leaf):
    try:
        return (leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False))
    except AttributeError:  # a Python scalar: its type decides the (weak) dtype
        return type(leaf)


def _signature_of(leaf) -> str:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        aval = jax.core.ShapedArray(leaf.shape, leaf.dtype, weak_type=leaf.weak_type)
    else:
        aval = jax.typeof(leaf)
    return f"{aval.str_short()}{'w' if getattr(aval, 'weak_type', False) else ''}"


class _PersistentJit:
    def __init__(self, fun, static_argnames: tuple[str, ...], compiler_options: dict | None = None):
        self._fun = fun
        self._static = tuple(static_argnames)
        self._options = compiler_options
        params = inspect.signature(fun).parameters.values()
        # Calls are keyed by parameter name; a keyword absorbed by **kw (or an argument by
        # *args) would send every call to the plain jit, silently, in every process.
        variadic = [("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name
                    for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if variadic:
            raise TypeError(f"persistent_jit needs named parameters; {fun.__qualname__} takes {variadic[0]}")
        self._positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._names = {p.name for p in params}
        self._programs: dict = {}
        self._lock = threading.Lock()
        self.__wrapped__ = fun
        self.__doc__ = fun.__doc__
        self.__name__ = getattr(fun, "__name__", "program")
        _ALL.add(self)

    @cached_property
    def _jit(self):  # made on first use: defining a program at import loads no JAX
        return jax.jit(self._fun, static_argnames=self._static)

    @cached_property
    def _top(self):
        # JAX accepts compiler options on a top-level jit only; under a trace the plain
        # jit is inlined into the enclosing program, which has its own.
        if self._options is None:
            return self._jit
        return jax.jit(self._fun, static_argnames=self._static, compiler_options=self._options)

    def __getattr__(self, name):  # lower, eval_shape, _cache_size, … of the plain jit
        if name.startswith("__") or name in ("_jit", "_top"):
            raise AttributeError(name)
        return getattr(self._jit, name)

    def _split(self, args, kwargs):
        """(fast key, text-key parts) of a call, or None where the plain jit must run it."""
        if len(args) > len(self._positional) or any(k not in self._names for k in kwargs):
            return None  # let jit raise its usual error
        given = dict(zip(self._positional, args))  # cheaper than Signature.bind (hot loops call this)
        given.update(kwargs)
        static = {k: given[k] for k in self._static if k in given}
        dynamic = {k: v for k, v in given.items() if k not in self._static}
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        if not _top_level() or any(isinstance(x, jax.core.Tracer) for x in leaves):
            return None
        try:  # a cheap hashable key for this process; the text key only on a miss
            fast = (tuple(static.items()), tree, tuple(map(_fast_signature, leaves)))
            hash(fast)
        except TypeError:  # an unhashable static argument
            return None
        return fast, static, dynamic, tree, leaves

    def _program(self, folder: Path, split):
        fast, static, dynamic, tree, leaves = split
        static_text = repr(sorted(static.items()))
        if " at 0x" in static_text:  # a static argument without a stable text form
            return _FAILED
        key = (static_text, str(tree), tuple(_signature_of(x) for x in leaves))
        return self._load_or_export(folder, key, static, dynamic)

    def cached(self, *args, **kwargs) -> bool | None:
        """Whether this call's program is loaded or stored (True), must be traced and
        compiled (False), or cannot be told (None: the cache is off or the call is traced)."""
        folder = _folder()
        split = None if folder is None else self._split(args, kwargs)
        if split is None:
            return None
        if split[0] in self._programs:
            return True
        fast, static, dynamic, tree, leaves = split
        key = (repr(sorted(static.items())), str(tree), tuple(_signature_of(x) for x in leaves))
        name = f"{self._fun.__module__}.{self._fun.__qualname__}"
        return _stored_path(folder, self.__name__, repr((name, key))).exists()

    def __call__(self, *args, **kwargs):
        folder = _folder()
        split = None if folder is None else self._split(args, kwargs)
        if split is None:
            if folder is None and _top_level():
                compiling(cache_off=True)
            return (self._top if _top_level() else self._jit)(*args, **kwargs)
        fast, dynamic = split[0], split[2]
        program = self._programs.get(fast)
        if isinstance(program, Future):
            program = program.result()
            if program is not _FAILED:
                try:
                    out = program(dynamic)
                except TypeError:  # compiled for other argument types: compile as usual
                    program = None
                else:
                    self._programs[fast] = program
                    return out
            program = None  # compile as usual (this replaces the future below)
        if program is None:
            with self._lock:  # chunks called side by side (batching.run_in_order): load or export once
                program = self._programs.get(fast)
                if program is None or isinstance(program, Future):
                    program = self._programs[fast] = self._program(folder, split)
        if program is _FAILED:
            return self._top(*args, **kwargs)
        if isinstance(program, _Exported):
            with self._lock:
                program = self._programs.get(fast)
                if isinstance(program, _Exported):
                    program = self._programs[fast] = program.compile(dynamic)
        try:
            return program(dynamic)
        except TypeError:  # a stored executable built for other argument types: the plain jit
            return self._top(*args, **kwargs)

    def preload(self, *args, **kwargs) -> None:
        """Trace and lower (or load) the program of this call now; compile it at the call.

        Before :meth:`prepare` of other programs, it keeps the worker's tracing, which
        holds the GIL, off this thread's tracing and inside its compilation, which does not.
        """
        folder = _folder()
        split = None if folder is None else self._split(args, kwargs)
        if split is not None and split[0] not in self._programs:
            self._programs[split[0]] = self._program(folder, split)

    def prepare(self, *args, **kwargs) -> None:
        """Start loading or compiling the program of this call on the worker thread.

        Arguments as for a call, arrays or ``jax.ShapeDtypeStruct``; a no-op unless
        :func:`~oscar_jax.runtime.batching.compile_ahead` is on and the program cache is, or where the program is
        known already. A call with the same argument types then waits for it.
        """
        pool, folder = ahead_pool(), _folder()
        split = None if pool is None or folder is None else self._split(args, kwargs)
        if split is None or split[0] in self._programs:
            return

        def compile_now():
            try:
                program = self._program(folder, split)
                return program.compile(split[2]) if isinstance(program, _Exported) else program
            except Exception:  # noqa: BLE001 (the call compiles as usual)
                return _FAILED

        self._programs[split[0]] = pool.submit(compile_now)

    def _load_or_export(self, folder: Path, key, static: dict, dynamic: dict):
        """The stored executable of this call, else its exported program (:class:`_Exported`),
        else _FAILED."""
        fun = self._fun
        key_text = repr((f"{fun.__module__}.{fun.__qualname__}", key))
        program = _stored(folder, self.__name__, key_text, lambda dyn: fun(**dyn, **static), lambda: (dynamic,),
                          self._options)
        return _FAILED if program is None else program


class _Exported:
    """An exported program not compiled yet: :meth:`compile` compiles it for the arguments
    of a call (arrays or ``jax.ShapeDtypeStruct``) and stores its executable, which the
    next process loads without lowering (:mod:`oscar_jax.runtime.executables`)."""

    def __init__(self, exported, path: Path | None, options: dict | None):
        self._exported, self._path, self._options = exported, path, options

    def compile(self, *args):
        return compile_and_store(self._exported, args, self._path, self._options)


def _stored(folder: Path, label: str, key_text: str, fun, args_of, options: dict | None):
    """The stored executable of ``fun(*args_of())``, else its exported program
    (:class:`_Exported`, exported now if absent), else None (``fun`` cannot be exported)."""
    path = executable_path(folder.parent, label, key_text, _environment_digest(), options)
    compiled = load_executable(path)
    if compiled is not None:
        return compiled
    exp = _exported_in(folder, label, key_text, fun, args_of())
    return None if exp is None else _Exported(exp, path, options)


def _stored_path(folder: Path, label: str, key_text: str) -> Path:
    digest = hashlib.sha256(repr((key_text, _environment_digest())).encode()).hexdigest()[:40]
    return folder / f"{label}-{digest}.stablehlo"


def _exported_in(folder: Path, label: str, key_text: str, fun, args):
    path = _stored_path(folder, label, key_text)
    if not path.exists():
        compiling()
    if path.exists():
        try:
            return jax.export.deserialize(bytearray(path.read_bytes()))
        except Exception:  # truncated or foreign file: export again
            pass
    # Lowering a Cholesky or an eigensolver initialises jaxlib's LAPACK kernels from scipy's
    # two LAPACK modules, which otherwise imports the whole of scipy.linalg (158 modules, its
    # array-API layer and numpy.f2py among them: ~0.1 s of a cold fit's trace).
    load_lapack_modules()
    try:
        exp = jax.export.export(jax.jit(fun))(*args)
        blob = exp.serialize()
    except Exception:  # a callback or another construct export cannot store
        return None
    try:
        atomic_write(path, lambda tmp: tmp.write_bytes(blob))
    except OSError:
        pass
    return exp


def stored_program(label: str, key_text: str, fun, args_of, compiler_options: dict | None = None):
    """The compiled program of ``fun(*args_of())``: its stored executable, else compiled from
    its stored export (exported now if absent) and its executable stored; None when the
    cache is off or ``fun`` cannot be exported (then compile ``fun`` as usual).

    ``key_text`` must identify ``fun``, every constant it closes over (its static arguments)
    and the shapes of its arguments: ``args_of`` (returning arrays or
    ``jax.ShapeDtypeStruct``) is called only when the program has to be exported or
    compiled, so a process that loads the executable never works out the shapes (the
    sweep's evaluators take theirs from tracing the simulator, 0.15 s each). Run the
    result on arguments of the same shapes.
    """
    folder = _folder()
    if folder is None or " at 0x" in key_text:
        return None
    args_of = lru_cache(maxsize=1)(args_of)
    program = _stored(folder, label, key_text, fun, args_of, compiler_options)
    return program.compile(*args_of()) if isinstance(program, _Exported) else program


def forget() -> None:
    """Drop the programs loaded in this process (the next call loads or exports again)."""
    for wrapper in list(_ALL):
        wrapper._programs.clear()


def persistent_jit(fun=None, *, static_argnames=(), compiler_options=None):
    """``jax.jit(fun, static_argnames=…, compiler_options=…)`` whose lowered programs persist
    across processes.

    Static arguments must have a stable ``repr`` (ints, strings, frozen dataclasses such
    as :class:`~oscar_jax.model.params.Layout`); NamedTuple inputs and outputs must be
    registered with :func:`register_pytree_names`.
    """
    if fun is None:
        return lambda f: _PersistentJit(f, tuple(static_argnames), compiler_options)
    return _PersistentJit(fun, tuple(static_argnames), compiler_options)


# For programs that run once per result on θ-sized arrays (targets, their delta-method
# SEs): XLA's backend optimisations cost a third of their compile time and save
# microseconds of run time. Over the records they pay on large data (the covariances at
# 10⁶ records: 0.16 s optimised, 0.21 s not; sandwich.covariances_program).
RUN_ONCE = {"xla_backend_optimization_level": 0}
