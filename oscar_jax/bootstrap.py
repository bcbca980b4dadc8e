"""The prompt bootstrap (Section 5; method §5): percentile intervals around the full-data fit.

Every resampling scheme in the package is a (B, G) matrix of prompt-cluster weights ω on
one fixed :class:`~oscar_jax.model.design.Design` (:mod:`oscar_jax.infer.weights`), and all its
refits are one compiled batch (:mod:`oscar_jax.infer.batch_fit`). :func:`bootstrap` draws
multinomial prompt counts, refits every replicate started one Newton step from the
full-data θ̂ and returns :class:`BootstrapResult`: percentile intervals and rank
distributions around the full-data fit.

The weight generators and the batched fit are re-exported here under their documented
``oscar_jax.bootstrap`` names.
"""

from __future__ import annotations

import numpy as np

from .infer.batch_fit import REPLICATE_CHECKS, BatchFit, auto_chunk_size, batched_fit_core, batched_fit_core_jit, fit_batch
from .results.bootstrap import BootstrapResult
from .fit import fit
from .infer.starts import one_step_starts
from .model.problem import prepare
from .results.fit import FitResult
from .model.spec import ModelSpec
from .runtime.validate import OscarInputError, check_ci_prob, check_positive_int
from .infer.weights import bootstrap_indices, bootstrap_weights, fold_masks, prompt_folds, replicate_key, within_fold_weights

__all__ = [
    "BatchFit",
    "BootstrapResult",
    "REPLICATE_CHECKS",
    "auto_chunk_size",
    "batched_fit_core",
    "batched_fit_core_jit",
    "bootstrap",
    "bootstrap_indices",
    "bootstrap_weights",
    "fit_batch",
    "fold_masks",
    "prompt_folds",
    "within_fold_weights",
]


def bootstrap(data, model: str | ModelSpec | None = None, replicates: int = 500, seed: int = 0, *,
              ci_prob: float = 0.95, full: FitResult | None = None, chunk_size: int | None = None,
              max_iter: int = 100, show_progress: bool | None = None, warn: bool = True,
              vmap_width: int | None = None, **setup) -> BootstrapResult:
    """Prompt bootstrap of a fit (method §5): refit on multinomial prompt weights in compiled batches.

    Parameters
    ----------
    data
        Anything :func:`~oscar_jax.fit` takes (a path, frame, records, Design or
        prepared Problem).
    model
        Model string or ModelSpec (default ``"oscar"``; a Problem's own model).
    replicates
        B, number of bootstrap replicates (500 in the paper).
    seed
        Seeds both the random second start of the full-data fit and the resampling
        (``jax.random.PRNGKey(seed)`` folded with 1); same seed, same result.
    full
        An existing full-data :class:`~oscar_jax.results.fit.FitResult` of this design and
        model to reuse (else :func:`~oscar_jax.fit` is called with ``seed``).
    chunk_size
        Replicates per compiled call (bounded memory; default automatic).
    vmap_width
        Replicates solved side by side within a call (default: 1 on CPU, the whole chunk
        on an accelerator; see :mod:`oscar_jax.runtime.batching`). The estimates do not depend on it.
    **setup
        The set-up keywords of :func:`~oscar_jax.model.problem.prepare` (``ridge``,
        ``reference_judge``, ``filters``, ``exclude_ties``, ``schema``, …), as for
        :func:`~oscar_jax.fit`.

    Notes
    -----
    Every replicate is warm-started one Newton step from the full-data θ̂ (the linearised
    bootstrap estimate, :func:`oscar_jax.infer.starts.one_step_starts`; at θ̂ itself when that step is not
    available): the solver is a damped Newton with the exact Hessian, so from there it
    converges in a few iterations to the replicate's own minimum (the starting point
    changes the cost, not the estimate). Column selection (B.2) and every B.3 check are
    redone per replicate.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from oscar_jax import simulate_design
    >>> from oscar_jax.bootstrap import bootstrap
    >>> boot = bootstrap(simulate_design(seed=0, n_prompts=300), "j+p", replicates=20, seed=0)
    >>> boot.leaderboard().columns[:4].tolist()
    ['rank', 'candidate', 'score', 'score_lo']
    """
    ci_prob = check_ci_prob(ci_prob)
    replicates = check_positive_int("replicates", replicates, minimum=2)
    max_iter = check_positive_int("max_iter", max_iter)
    problem = prepare(data, model, **setup)
    design, eff = problem.design, problem.effective_spec
    chunk = chunk_size if chunk_size is not None else min(replicates, auto_chunk_size(design, problem.layout))
    chunk = check_positive_int("chunk_size", chunk)
    if full is None:
        full = fit(problem, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn)
    elif full.design is not design or full.effective_spec.structure() != eff.structure():
        raise OscarInputError("full= must be a fit of the same Design object and model as the bootstrap")
    omega = np.asarray(bootstrap_weights(replicate_key(seed, 1), design.n_clusters, replicates))
    starts = one_step_starts(full, omega)
    # The batch carries the full fit's notes: they describe the data and model every replicate shares.
    batch = fit_batch(problem, omega=omega, starts=full.theta if starts is None else starts[:, None, :],
                      chunk_size=chunk, max_iter=max_iter, show_progress=show_progress,
                      desc=f"{eff.name} bootstrap", vmap_width=vmap_width, notes=full.notes)
    return BootstrapResult(full=full, batch=batch, seed=int(seed), ci_prob=ci_prob)
