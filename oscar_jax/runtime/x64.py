"""The one place numeric configuration is set, without importing JAX.

Every estimator in oscar_jax works in float64: the Newton solver's stopping rule
(‖∇L‖∞/N ≤ 1e-10), the identification check (eigenvalue ratios down to 1e-13) and
the agreement tests against statsmodels (1e-6 relative) are not attainable in float32.
Importing this module (``import oscar_jax`` does, first) makes float64 the default
before any array is created: where JAX is not imported yet it sets ``JAX_ENABLE_X64``,
which JAX reads when it is imported, so ``import oscar_jax`` and ``oscar --help`` do not
pay for JAX; where it is, ``jax.config``. Variables set only for JAX's import are put
back right after it, whoever imports JAX (:func:`jax_loaded`, run by
:func:`~oscar_jax.runtime.lazy_jax.when_loaded`), so child processes do not inherit them.
The size of XLA's CPU thread pool for the sampler is chosen here too
(:func:`one_thread_cpu_backend`), and how the command line's process hands freed memory
back (:func:`return_freed_memory`).
"""

import os
import sys
from contextlib import contextmanager

from .lazy_jax import when_loaded

# Variable → (its value before oscar_jax set it for JAX's import (None: unset), the value set).
_SET_FOR_JAX: dict[str, tuple[str | None, str]] = {}


def set_before_jax(variable: str, value: str, option: str, option_value=None) -> None:
    """Give JAX a setting before it makes any array: ``jax.config.update(option, ...)`` when
    JAX is imported, else the environment variable JAX reads for it at its import."""
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "config"):
        jax.config.update(option, value if option_value is None else option_value)
        return
    if not _SET_FOR_JAX:
        when_loaded(jax_loaded)
    _SET_FOR_JAX[variable] = (_SET_FOR_JAX.get(variable, (os.environ.get(variable), value))[0], value)
    os.environ[variable] = value


def jax_loaded() -> None:
    """Put back the variables set for JAX's import (JAX has read them: call after importing it)."""
    for variable, (before, ours) in _SET_FOR_JAX.items():
        if os.environ.get(variable) != ours:
            continue  # changed since by someone else: theirs
        if before is None:
            del os.environ[variable]
        else:
            os.environ[variable] = before
    _SET_FOR_JAX.clear()

# The fits solve many small (≤ a few hundred) dense systems, often a batch at a time;
# JAX's CPU LAPACK kernels (Cholesky, eigh, SVD) are scipy's OpenBLAS, and a
# multi-threaded BLAS only adds contention there (a batch of 100 64×64 eigvalsh ran 30×
# slower threaded on 2 shared cores). Users can still set their own value.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

_SET_THREADS = ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "openblas_set_num_threads",
                "openblas_set_num_threads64_")


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, held there


def return_freed_memory() -> None:
    """Make freed memory leave the process at once: for the ``oscar`` command's own process.

    glibc raises its mmap threshold each time a large block is freed, so later large arrays
    come from the heap and stay counted after they are freed, and pyarrow's default pool
    (mimalloc) keeps what a read used. Holding the threshold at its initial 128 KiB (any
    array above it is mapped and unmapped by itself) and reading through the system
    allocator took the peak of ``oscar fit`` at 10⁶ records from 0.96 to 0.65 GB and at 10⁷
    from 4.3 to 3.9 GB before the sandwich and design kept less, for ~0.2 CPU-s of page
    faults at 10⁶ (``benchmarks/results/RESULTS.md``, "Memory at Arena scale"). A
    library does not change its host's allocator: Python callers may set
    ``MALLOC_MMAP_THRESHOLD_=131072`` and ``ARROW_DEFAULT_MEMORY_POOL=system`` themselves. A
    value the user set for the pool wins; where there is no glibc ``mallopt`` (macOS) only
    the pool is chosen.
    """
    if "pyarrow" not in sys.modules:  # pyarrow reads the variable when it first makes its pool
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:  # the user's own setting, read by glibc at start
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries this process has loaded already."""
    paths = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ", 5)[-1].strip()
                if path.startswith("/") and "openblas" in os.path.basename(path).lower():
                    paths.add(path)
    except OSError:  # no /proc (macOS, Windows): the libraries numpy and scipy bundle
        import glob

        for name in ("numpy", "scipy"):
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__file__", None):
                root = os.path.dirname(module.__file__)
                for where in (root + ".libs", os.path.join(root, ".dylibs")):
                    paths.update(glob.glob(os.path.join(where, "*openblas*")))
    return sorted(paths)


def blas_threads_as_set() -> int:
    """Give the OpenBLAS libraries loaded before this package the thread count of
    ``OPENBLAS_NUM_THREADS`` (1 unless the user chose), as those loaded after it read it;
    returns how many libraries were set.

    Importing scipy first (arviz, statsmodels and scikit-learn do) loads its OpenBLAS with
    a thread per core before the variable is read, and a 500-replicate UltraFeedback
    bootstrap then took 1.4–1.5 s instead of 0.7–0.9 s on 2 cores (issue 16).
    """
    try:
        threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    except ValueError:  # a value OpenBLAS itself would ignore
        return 0
    if threads < 1:
        return 0
    import ctypes

    count = 0
    for path in _loaded_openblas():
        try:  # RTLD_NOLOAD: a handle to the library already loaded, never a new load
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for symbol in _SET_THREADS:
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                setter(threads)
                count += 1
                break
    return count


if "numpy" in sys.modules or "scipy" in sys.modules:
    blas_threads_as_set()

# Results are deterministic per seed. On a GPU, XLA's scatter-adds (the segment sums of the
# per-record derivatives) use atomics whose order varies from run to run: the same bootstrap
# twice differed by 3e-15 on an H200. Deterministic scatters cost little at these sizes.
# The flag must be in place before JAX starts its GPU backend; a user's own setting wins.
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_gpu_deterministic_ops" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_gpu_deterministic_ops=true").strip()

set_before_jax("JAX_ENABLE_X64", "1", "jax_enable_x64", True)


# XLA's CPU thread pool. XLA:CPU sizes its intra-op pool once, when the backend starts, from
# the CPUs the process may run on, and offers no option to choose it. NUTS is ~10⁵ leapfrog
# steps of a few dozen small operations each, one chain after another; there the pool's
# hand-offs cost more than they save: the default `oscar bayes` on MT-Bench took 77.8 CPU-s
# (59.5 s wall) with the pool of a 2-core machine and 53.6 CPU-s (53.5 s wall) with one
# thread, the same draws to the bit (benchmarks/results/bayes_speed_mtbench.md). So `oscar
# bayes` starts the backend while the process may run on one CPU only, then gives the process
# its CPUs back.


def _backend_running() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    running = getattr(xla_bridge, "backends_are_initialized", None)
    return True if running is None else running()  # a JAX without the call: assume it runs


def _threads() -> set[str]:
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


@contextmanager
def one_thread_cpu_backend():
    """Within the block, the process may run on one CPU; a JAX backend started there gets a
    one-thread intra-op pool (and keeps it). Yields whether the restriction was applied.

    Nothing is restricted where a backend is already running (JAX used earlier in the
    process), where the OS has no affinity call (macOS, Windows), where the process has one
    CPU, or where ``OSCAR_JAX_CPU_THREADS=all``. On exit the calling thread and every thread
    started inside the block (the pool's, Arrow's reader pool) may run on all the CPUs again:
    the pool keeps its size, not the CPU, so processes side by side do not share one core.
    """
    if (os.environ.get("OSCAR_JAX_CPU_THREADS", "").lower() == "all" or not hasattr(os, "sched_setaffinity")
            or _backend_running()):
        yield False
        return
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        yield False
        return
    before = _threads()
    os.sched_setaffinity(0, {sorted(cpus)[os.getpid() % len(cpus)]})
    try:
        yield True
    finally:
        os.sched_setaffinity(0, cpus)
        for tid in _threads() - before:
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:  # a thread that has ended since
                pass
