import os

import pytest

# The CLI enables a persistent XLA cache in ~/.cache; tests must not write there.
os.environ.setdefault("OSCAR_JAX_CACHE_DIR", "off")

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
        import oscar_jax

        oscar_jax.release_compiled()
