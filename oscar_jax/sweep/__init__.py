"""Simulation sweeps: the Section 7 study (Appendix G) as one compiled batch per method.

A *setting* is (N, c, ρ): N judgments (N = K · G prompts), bias multiplier c and
within-prompt dependence ρ of the Appendix G.1 generator. For each setting the sweep
draws every replicate's dataset with :func:`oscar_jax.simulate.simulate` (vmapped over
keys), and for each method fits all replicates with :func:`oscar_jax.infer.fit_core.fit_core`
(vmapped over the batch of designs, zero start, λ = 0.05, reference judge 0), computes
both covariances with :func:`oscar_jax.infer.sandwich.covariances`, the targets and their
delta-method standard errors, and the per-replicate metrics of Section 7 — all inside
one jitted function, so a (setting, method) is one compiled program run on a batch.

Modules: :mod:`.settings` (what runs, replicate keys), :mod:`.metrics` (the pure
per-replicate metrics), :mod:`.programs` (compiled programs, their cache, padding),
:mod:`.driver` (:func:`sweep`), :mod:`.tables` (:class:`SweepResult`), :mod:`.figures`
(Figures 3 and 4), :mod:`.paper` (comparison with the published numbers).

Replicates whose fit fails a B.3 check are flagged (``ok`` = False, one column per
check) and left out of every aggregate; :meth:`SweepResult.table` reports how many.
Aggregates are means with Monte Carlo SE = sd/√R and t_{R−1} intervals; method
differences are paired by replicate (G.3).

Randomness: replicate r of a setting with N judgments uses the key
``fold_in(fold_in(PRNGKey(seed), N), r)``. It does not depend on how many replicates,
which methods or which other settings are run, so adding replicates never changes
earlier ones, and the controls at one N share their candidate pairs, length noise and
copula draws with the main setting (common random numbers: control contrasts are
paired too).

Example
-------
>>> from oscar_jax.sweep import sweep
>>> res = sweep(ns=(250,), reps=4, methods=("j", "oscar"), seed=0)  # doctest: +SKIP
>>> res.table()[["n", "method", "q_rmse", "coverage_cluster"]]  # doctest: +SKIP
"""

from .driver import sweep
from .metrics import METRICS, ReplicateMetrics, evaluate_replicate, kendall_tau_b
from .paper import compare_with_paper
from .programs import release_compiled
from .settings import (DEFAULT_METHODS, DEFAULT_NS, TABLE_G2_CONTROLS, TABLE_G2_N, Setting, main_and_controls,
                       replicate_keys, settings_grid)
from .tables import SweepResult

__all__ = [
    "DEFAULT_METHODS",
    "DEFAULT_NS",
    "METRICS",
    "ReplicateMetrics",
    "Setting",
    "SweepResult",
    "TABLE_G2_CONTROLS",
    "TABLE_G2_N",
    "evaluate_replicate",
    "kendall_tau_b",
    "compare_with_paper",
    "main_and_controls",
    "release_compiled",
    "replicate_keys",
    "settings_grid",
    "sweep",
]
