"""The one place numeric configuration is set.

Every estimator in oscar_jax works in float64: the Newton solver's stopping rule
(‖∇L‖∞/N ≤ 1e-10), the identification check (eigenvalue ratios down to 1e-13) and
the agreement tests against statsmodels (1e-6 relative) are not attainable in float32.
Importing this module before any array is created makes float64 the default.
"""

import os

# The fits solve many small (≤ a few hundred) dense systems, often a batch at a time;
# a multi-threaded BLAS only adds contention there (a batch of 100 64×64 eigvalsh ran
# 30× slower threaded on 2 shared cores). Users can still set their own value.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Results are deterministic per seed. On a GPU, XLA's scatter-adds (the segment sums of the
# per-record derivatives) use atomics whose order varies from run to run: the same bootstrap
# twice differed by 3e-15 on an H200. Deterministic scatters cost little at these sizes.
# The flag must be in place before JAX starts its GPU backend; a user's own setting wins.
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_gpu_deterministic_ops" not in _flags:
    os.environ["XLA_FLAGS"] = (_flags + " --xla_gpu_deterministic_ops=true").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
