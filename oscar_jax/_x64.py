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

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
