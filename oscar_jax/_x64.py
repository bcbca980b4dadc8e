"""The one place numeric configuration is set.

Every estimator in oscar_jax works in float64: the Newton solver's stopping rule
(‖∇L‖∞/N ≤ 1e-10), the identification check (eigenvalue ratios down to 1e-13) and
the agreement tests against statsmodels (1e-6 relative) are not attainable in float32.
Importing this module before any array is created makes float64 the default.
"""

import jax

jax.config.update("jax_enable_x64", True)
