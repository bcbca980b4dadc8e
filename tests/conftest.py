import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The CLI and the API keep compiled programs in ~/.cache; tests must not write there. They get
# a fresh cache of their own instead of none: the suite compiles the same programs many times
# (new closures of one shape, CLI subprocesses, again after release_compiled), and reading them
# back instead cut a CLI-heavy subset from 757 s to 571 s. The first process to get here owns
# the folder; pytest-xdist workers inherit it from the controller's environment and share it.
_OWN_CACHE = None
if "OSCAR_JAX_CACHE_DIR" not in os.environ:
    _OWN_CACHE = os.environ["OSCAR_JAX_CACHE_DIR"] = tempfile.mkdtemp(prefix="oscar_jax_tests_")


def pytest_configure(config):
    # Informational, once per note per session; tests/test_api_display.py checks it is issued.
    # Not in pyproject.toml: pytest imports a filter's warning category while it reads the
    # ini file, before this file sets OSCAR_JAX_CACHE_DIR, and importing oscar_jax enables
    # the compile cache — the suite then wrote to (and read stale programs from) ~/.cache.
    config.addinivalue_line("filterwarnings", "ignore::oscar_jax.fit.OscarNoteWarning")
    from oscar_jax.runtime import cache

    if _OWN_CACHE is not None and cache.cache_dir() != Path(_OWN_CACHE):
        raise pytest.UsageError(f"oscar_jax was imported before tests/conftest.py set {cache.ENV_VAR}: "
                                f"its compile cache is {cache.cache_dir()}, not {_OWN_CACHE}")


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)

import jax  # noqa: E402
from helpers import n_memory_mappings  # noqa: E402

jax.config.update("jax_enable_x64", True)

# Every executable XLA:CPU compiles keeps a handful of memory mappings for its code until
# it is freed, and jit caches keep executables alive. The suite compiles thousands of
# programs in one process; near Linux's vm.max_map_count (65,530 by default) the next
# compilation's mmap fails and XLA aborts or segfaults (seen in CI in test_sweep, never
# when a module runs alone). Between modules, drop the compiled programs once the process
# holds more than MAP_BUDGET mappings; modules below it keep their session-wide caches.
MAP_BUDGET = int(os.environ.get("OSCAR_TEST_MAP_BUDGET", 20_000))


@pytest.fixture(autouse=True, scope="module")
def _bounded_compiled_programs():
    yield
    n = n_memory_mappings()  # None off Linux: no such limit to respect
    if n is not None and n > MAP_BUDGET:
        from oscar_jax.sweep import release_compiled

        release_compiled()
