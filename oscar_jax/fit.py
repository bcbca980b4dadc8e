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
from .model.problem import Problem, as_design, prepare
from .results.boards import score_board
from .results.fit import FitResult, prepare_report_programs
from .model.spec import ModelSpec, parse_model
from .infer.starts import start_points
from .runtime.validate import check_ci_prob, check_positive_int

__all__ = ["OscarFitWarning", "OscarNoteWarning", "RECORDS_PER_PARAMETER", "as_design", "companion_fit", "companion_fits",
           "fit", "fit_problem", "small_data_advice", "start_points"]

RECORDS_PER_PARAMETER = 50  # below this many judgments per free parameter, compare with the smaller model
WIDER = 1.5  # intervals this many times as wide as the smaller model's are worth a note


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
        family_map=None, covariates=(), ridge: float | None = None, starts: int = 2,
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
        Number of starts (zero plus ``starts − 1`` draws from N(0, 0.08²)); the smallest
        objective is kept.
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
    ``result.leaderboard(scale="winrate", anchor=NAME)``.

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
    problem = prepare(data, model, ridge=ridge, schema=schema, reference_judge=reference_judge,
                      family_map=family_map, covariates=covariates, bothbad=bothbad)
    return fit_problem(problem, starts=starts, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn,
                       stacklevel=3)


def fit_problem(problem: Problem, *, starts: int = 2, seed: int = 0, ci_prob: float = 0.95, max_iter: int = 100,
                warn: bool = True, stacklevel: int = 2) -> FitResult:
    """:func:`fit` of a prepared :class:`~oscar_jax.model.problem.Problem` (see :func:`~oscar_jax.model.problem.prepare`).

    ``stacklevel`` places the warnings (2: the caller of this function).
    """
    ci_prob = check_ci_prob(ci_prob)
    starts = check_positive_int("starts", starts)
    max_iter = check_positive_int("max_iter", max_iter)
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
            warnings.warn(f"{eff.name} fit: {message}", OscarFitWarning, stacklevel=stacklevel)
        _warn_notes(result.notes, stacklevel + 1)
    return result


def companion_fit(result: FitResult, model: str | ModelSpec, *, ridge: float | None = None, seed: int = 0,
                  warn: bool = True) -> FitResult:
    """``model`` fitted on ``result``'s data and level, once per result: ``result`` itself when it is that model.

    The fits beside a chosen model — J for the judge panel's κ, J+P for the attenuation
    plot, the next smaller model for :func:`small_data_advice` — come from here, so
    ``oscar fit``, ``oscar report`` and the advice fit each model at most once.
    ``ridge`` and ``seed``: those ``result`` was fitted with (the defaults: the defaults).
    """
    spec = parse_model(model)
    if result.effective_spec.structure() == spec.structure():
        return result
    cache = result.__dict__.setdefault("_companions", {})
    key = (spec.structure(), ridge, seed)
    if key not in cache:
        cache[key] = fit(result.design, spec, ridge=ridge, seed=seed, ci_prob=result.ci_prob, warn=warn)
    return cache[key]


def companion_fits(result: FitResult, *, ridge: float | None = None, seed: int = 0) -> tuple[FitResult, FitResult]:
    """(J fit, fit with the position term) on ``result``'s data, reusing ``result`` where it is one of them.

    The judge panel compares κ under J with the chosen model; the attenuation plot needs a
    fit without and one with the position term.
    """
    pos = result if "pos" in result.effective_spec.terms else companion_fit(result, "j+p", ridge=ridge, seed=seed)
    return companion_fit(result, "j", ridge=ridge, seed=seed), pos


def small_data_advice(result: FitResult, *, ci: str = "sandwich", ridge: float | None = None, seed: int = 0) -> list[str]:
    """Plain-language notes when the data are too small for the model asked for.

    A default OSCAR fit estimates a position, length and own-family coefficient per
    judge. On a few hundred judgments those per-judge terms are barely determined, and
    their uncertainty flows into every candidate's interval: the board then ranks every
    model 1 and "checks: all passed" reads as if all were well. The notes say so and name
    the smaller model to try, measured rather than guessed: the smaller model is fitted on
    the same data (:func:`companion_fit`) and the interval widths are compared.
    """
    notes = []
    d, eff = result.design, result.effective_spec
    board = result.leaderboard(ci)
    n_free = max(int(result.core.n_free), 1)
    extra = [t for t in eff.terms if t != "pos"]
    if extra and d.n_records / n_free < RECORDS_PER_PARAMETER and ci in ("sandwich", "model"):
        smaller = "j+p" if "pos" in eff.terms else "j"
        alt = companion_fit(result, smaller, ridge=ridge, seed=seed, warn=False)
        # Its score intervals only (no status, no identification): the width is all the note reads.
        alt_board = score_board(alt, ci=ci).set_index("candidate").loc[board.candidate]
        ratio = float(np.median((board.score_hi - board.score_lo).to_numpy()
                                / (alt_board.score_hi - alt_board.score_lo).to_numpy()))
        if np.isfinite(ratio) and ratio > WIDER:
            names = {"len": "length", "fam": "own-family", "cov": "covariate", "pos": "position"}
            terms = ", ".join(names.get(t, t) for t in extra)
            notes.append(
                f"small data for this model: {d.n_records:,} judgments for {n_free} parameters; the per-judge "
                f"{terms} terms are barely determined and make the intervals {ratio:.1f}× as wide as under "
                f"--model {smaller}. Try --model {smaller}.")
    if len(board) > 1 and (board.rank_ub == 1).all():
        pct = f"{100 * result.ci_prob:g}%"
        notes.append(f"no candidate is separated from another at {pct}: every Rank (UB) is 1. The order of the "
                     "point estimates is not established by these data.")
    return notes
