"""Penalized point fit of any OSCAR-family model (Sections 3.4, 5; Appendix B).

``fit()`` validates in Python, then makes one call to the jitted core, which runs the
damped Newton solver from two starts (zero and N(0, 0.08²), as in B.3; on a large
grouped design the second only when the first does not settle) one after the other and
keeps the smaller objective; the cluster-robust and model-based covariances are computed
on first use. Failed B.3 checks are recorded in the result and raised as
warnings.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import jax
import numpy as np

from .infer.fit_core import fit_core_seeded_jit
from .infer.plain_bt import bt_fit_core
from .model.problem import Problem, as_design, prepare
from .results.fit import FitResult, prepare_report_programs
from .model.spec import ModelSpec
from .infer.starts import start_points
from .runtime.validate import check_ci_prob, check_positive_int

__all__ = ["OscarFitWarning", "OscarNoteWarning", "as_design", "fit", "fit_problem",
           "start_points"]


class OscarFitWarning(UserWarning):
    """A fit finished but failed one of the Appendix B.3 checks."""


class OscarNoteWarning(UserWarning):
    """Something the fit did that changes what it estimates (a term dropped, records left out).

    Issued once per distinct note per session; the CLI prints the notes in its output
    instead. Silence with ``warnings.filterwarnings("ignore", category=OscarNoteWarning)``.
    """


_NOTES_SHOWN: set[str] = set()


def _warn_notes(notes, stacklevel: int) -> None:
    for note in notes:
        if note not in _NOTES_SHOWN:
            _NOTES_SHOWN.add(note)
            warnings.warn(f"oscar_jax: {note} (see result.notes)", OscarNoteWarning, stacklevel=stacklevel)


@lru_cache(maxsize=64)
def _unit_weights(n_clusters: int):
    return jax.device_put(np.ones(n_clusters))  # jnp.ones/jnp.asarray would compile a program


def fit(data, model: str | ModelSpec = "oscar", *, reference_judge: str | None = None,
        family_map=None, covariates=(), ridge: float | None = None, starts: int | None = None,
        seed: int = 0, schema: str | None = None, ci_prob: float = 0.95,
        max_iter: int = 100, bothbad: str = "tie", warn: bool = True) -> FitResult:
    """Fit an OSCAR-family model by penalized maximum likelihood.

    Parameters
    ----------
    data
        A :class:`~oscar_jax.model.design.Design`, a file path, a DataFrame or a list of
        records in any supported schema (see :func:`~oscar_jax.io.data.load_judgments`).
    model
        ``"j"``, ``"j+p"``, ``"j+l"``, ``"j+f"``, ``"bt+plf"``, ``"davidson+plf"``,
        ``"oscar"`` (default), any combination such as ``"j+p+l"``, or a ModelSpec.
    reference_judge
        Judge with γ = 1 (exact name or unique substring); default: most records. It
        fixes the unit of the raw scores ``result.scores`` (s scales as 1/γ_ref), not the
        average-judge logit used for leaderboards (see Scales below).
    family_map
        dict model or judge name → family, overriding the built-in family rules used by
        the self-family term (e.g. ``{"my-judge-v2": "llama"}``).
    covariates
        Names of numeric record-level contrast columns in ``data`` that enter η with a
        per-judge coefficient (used by models with the ``c`` term, e.g. ``"oscar+c"``).
    ridge
        λ (default 0.05, the paper's value) on the summed loss.
    starts
        An int k: k starts, all run (zero plus k − 1 draws from N(0, 0.08²)); the smallest
        objective is kept. None (default): two starts, except on a grouped design (many
        records per (candidate A, candidate B, judge), e.g. continuous lengths at Arena
        scale, :func:`~oscar_jax.model.design.with_groups`), where the draw runs only when
        the zero start does not settle — does not converge, ends with a log-sensitivity at
        its bound, or where the penalized Hessian is not positive definite (the B.3 checks a
        start can fail). There a start costs seconds, and the solver's continuation
        (γ frozen, then s frozen, then all) reached the same minimum from both starts in
        every fit measured (``benchmarks/results/RESULTS.md``).
    seed
        Seed of the random starts (explicit; results are deterministic given it).
    schema
        Input convention of ``data`` when it is a file or frame (default: detected from
        the columns); see :data:`oscar_jax.io.data.SCHEMAS`.
    ci_prob
        Level of the intervals in the result's tables.
    max_iter
        Newton iterations allowed per start (default 100); a fit that needs more fails
        the convergence check.
    bothbad
        Arena's ``tie (bothbad)``: ``"tie"`` scores it ½ (default), ``"drop"`` removes it.
    warn
        Issue :class:`OscarFitWarning` for failed B.3 checks and, once per distinct note,
        :class:`OscarNoteWarning` for the fit's notes (terms dropped, loader notes).

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
    starts = None if starts is None else check_positive_int("starts", starts)
    max_iter = check_positive_int("max_iter", max_iter)
    problem = prepare(data, model, ridge=ridge, schema=schema, reference_judge=reference_judge,
                      family_map=family_map, covariates=covariates, bothbad=bothbad)
    return fit_problem(problem, starts=starts, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn,
                       stacklevel=3)


def fit_problem(problem: Problem, *, starts: int | None = None, seed: int = 0, ci_prob: float = 0.95,
                max_iter: int = 100, warn: bool = True, stacklevel: int = 2) -> FitResult:
    """:func:`fit` of a prepared :class:`~oscar_jax.model.problem.Problem` (see :func:`~oscar_jax.model.problem.prepare`).

    ``stacklevel`` places the warnings (2: the caller of this function).
    """
    ci_prob = check_ci_prob(ci_prob)
    design, eff, layout = problem.design, problem.effective_spec, problem.layout
    host_bt = starts is None and _plain_bt(eff)
    adaptive = starts is None and design.arrays.group_cell is not None
    starts = 2 if starts is None else check_positive_int("starts", starts)
    max_iter = check_positive_int("max_iter", max_iter)
    if host_bt:
        # Plain BT: a strictly convex (C−1)-dimensional problem on the pair table, which host
        # numpy solves faster than a compiled program is dispatched (infer/plain_bt.py).
        core = bt_fit_core(design.arrays, layout, eff.ridge, design.n_clusters, max_iter=max_iter)
        return _result(problem, core, ci_prob, warn, stacklevel)
    omega = _unit_weights(design.n_clusters)
    args = (design.arrays, omega, np.int64(seed))
    kw = dict(n_starts=starts, adaptive=adaptive, layout=layout, n_clusters=design.n_clusters, ridge=eff.ridge,
              v_bound=eff.v_bound, max_iter=max_iter, stats=design.arrays.stats)
    # Inside compile_ahead (the CLI): trace the fit first, then hand what will report on it
    # to the worker thread, whose tracing then runs while this thread compiles the fit.
    fit_core_seeded_jit.preload(*args, **kw)
    prepare_report_programs(design, layout, eff.ridge)
    core = fit_core_seeded_jit(*args, **kw)
    core = type(core)(*jax.device_get(tuple(core)))
    return _result(problem, core, ci_prob, warn, stacklevel)


def _plain_bt(spec: ModelSpec) -> bool:
    """Plain BT: γ ≡ 1, no bias terms, fractional ties (fitted on the host at the default starts)."""
    st = spec.structure()
    return not st.terms and not st.learn_gamma and not st.davidson


def _result(problem: Problem, core, ci_prob, warn, stacklevel) -> FitResult:
    design, eff, layout = problem.design, problem.effective_spec, problem.layout
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
            warnings.warn(f"{eff.name} fit: {message}", OscarFitWarning, stacklevel=stacklevel)
        _warn_notes(result.notes, stacklevel + 1)
    return result
