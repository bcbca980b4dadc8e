"""Penalized point fit of any OSCAR-family model (Sections 3.4, 5; Appendix B).

``fit()`` validates in Python, then makes one call to the jitted core, which runs the
damped Newton solver from two starts (zero and N(0, 0.08²), as in B.3) one after the
other and keeps the smaller objective; the cluster-robust and model-based covariances
are computed on first use. Failed B.3 checks are recorded in the result and raised as
warnings.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import jax
import numpy as np

from .infer.fit_core import fit_core_seeded_jit
from .model.problem import prepare
from .results.fit import FitResult, prepare_report_programs
from .model.spec import ModelSpec
from .runtime.validate import OscarFitWarning, OscarNoteWarning, check_ci_prob, check_positive_int

__all__ = ["OscarFitWarning", "OscarNoteWarning", "fit"]


_NOTES_SHOWN: set[str] = set()


def _warn_notes(notes, stacklevel: int) -> None:
    for note in notes:
        if note not in _NOTES_SHOWN:
            _NOTES_SHOWN.add(note)
            warnings.warn(f"oscar_jax: {note} (see result.notes)", OscarNoteWarning, stacklevel=stacklevel)


@lru_cache(maxsize=64)
def _unit_weights(n_clusters: int):
    return jax.device_put(np.ones(n_clusters))  # jnp.ones/jnp.asarray would compile a program


def fit(data, model: str | ModelSpec | None = None, *, starts: int = 2, seed: int = 0, ci_prob: float = 0.95,
        max_iter: int = 100, warn: bool = True, **setup) -> FitResult:
    """Fit an OSCAR-family model by penalized maximum likelihood.

    Parameters
    ----------
    data
        A file path, a DataFrame or a list of records in any supported schema (see
        :func:`~oscar_jax.io.data.load_judgments`), what ``load_judgments`` returned, a
        :class:`~oscar_jax.model.design.Design` or a prepared
        :class:`~oscar_jax.model.problem.Problem`.
    model
        ``"j"``, ``"j+p"``, ``"j+l"``, ``"j+f"``, ``"bt+plf"``, ``"davidson+plf"``,
        ``"oscar"`` (default; a Problem's own model), any combination such as
        ``"j+p+l"``, or a ModelSpec.
    starts
        Number of starts (zero plus ``starts − 1`` draws from N(0, 0.08²)); the smallest
        objective is kept.
    seed
        Seed of the random starts (explicit; results are deterministic given it).
    ci_prob
        Level of the intervals in the result's tables.
    max_iter
        Newton iterations allowed per start (default 100); a fit that needs more fails
        the convergence check.
    warn
        Issue :class:`OscarFitWarning` for failed B.3 checks and, once per distinct note,
        :class:`OscarNoteWarning` for the fit's notes (terms dropped, loader notes).
    **setup
        The set-up keywords of :func:`~oscar_jax.model.problem.prepare`, among them
        ``ridge`` (λ, default 0.05, the paper's value, on the summed loss);
        ``reference_judge`` (the judge with γ = 1: exact name or unique substring;
        default the one with most records; it fixes the unit of the raw scores
        ``result.scores``, not the average-judge logit of the leaderboards);
        ``family_map`` (dict name → family overriding the built-in family rules);
        ``covariates`` (numeric record-level contrast columns, used by models with the
        ``c`` term such as ``"oscar+c"``); and the reading keywords ``schema``,
        ``bothbad``, ``filters`` (e.g. ``{"category": "coding"}``), ``exclude_ties``,
        ``baseline``, ``strong_weight``, ``encoding``, ``responses``, ``turn``,
        ``missing_responses`` (see :func:`~oscar_jax.io.data.load_judgments`).

    Returns
    -------
    FitResult
        ``result.notes`` says what was dropped or changed; ``result.failed_checks()``
        lists failed checks.

    Scales
    ------
    ``result.leaderboard()["score"]`` (and the ``score`` of every ``oscar`` output) is
    the average-judge logit x = γ̄·s, independent of the reference judge, with
    P(i beats j) = σ(x_i − x_j) for a judge of average sensitivity with biases at zero
    (``result.win_prob``). The raw s, on the reference judge's scale, is
    ``result.scores`` and the leaderboard's ``s`` column. Elo:
    ``arena_leaderboard(result, scale="elo")`` gives 1000 + (400/ln 10)·x with
    intervals and Rank (UB); win rate against a baseline:
    ``oscar_jax.report.scales.scaled_board(result, scale="winrate", baseline=NAME)``.

    Examples
    --------
    >>> from oscar_jax import fit, simulate_design
    >>> design = simulate_design(seed=0, n_prompts=400)
    >>> result = fit(design, "oscar")
    >>> result.leaderboard().columns[:3].tolist()
    ['rank', 'candidate', 'score']
    """
    ci_prob = check_ci_prob(ci_prob)
    starts = check_positive_int("starts", starts)
    max_iter = check_positive_int("max_iter", max_iter)
    problem = prepare(data, model, **setup)
    design, eff, layout = problem.design, problem.effective_spec, problem.layout
    omega = _unit_weights(design.n_clusters)
    args = (design.arrays, omega, np.int64(seed))
    kw = dict(n_starts=starts, layout=layout, n_clusters=design.n_clusters, ridge=eff.ridge, v_bound=eff.v_bound,
              max_iter=max_iter, stats=design.arrays.stats)
    # Inside compile_ahead (the CLI): trace the fit first, then hand what will report on it
    # to the worker thread, whose tracing then runs while this thread compiles the fit.
    fit_core_seeded_jit.preload(*args, **kw)
    prepare_report_programs(design, layout, eff.ridge)
    core = fit_core_seeded_jit(*args, **kw)
    core = type(core)(*jax.device_get(tuple(core)))
    notes = problem.notes
    if not bool(core.curvature_ok):
        notes += ("covariances not computed: the penalized Hessian failed the B.3 curvature check",)
    # Covariances are computed on first use (FitResult.cov): a caller who only needs the
    # estimate (a refit loop, a benchmark against a point-estimate baseline) does not pay
    # for the cluster sandwich.
    result = FitResult(design=design, spec=problem.spec, effective_spec=eff, layout=layout, core=core,
                       notes=notes, ci_prob=ci_prob)
    if warn:
        for message in result.failed_checks():
            warnings.warn(f"{eff.name} fit: {message}", OscarFitWarning, stacklevel=2)
        _warn_notes(result.notes, 3)
    return result
