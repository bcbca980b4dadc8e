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

import numpy as np

from .infer.fit_core import complete_checks, fit_core_program
from .infer.plain_bt import bt_fit_core
from .infer.selection import column_mask
from .model.problem import Problem, prepare
from .model.spec import ModelSpec, parse_model
from .results.boards import score_board
from .results.fit import FitResult, prepare_report_programs
from .runtime.lazy_jax import jax
from .runtime.validate import OscarFitWarning, OscarNoteWarning, check_ci_prob, check_positive_int, check_seed

__all__ = ["OscarFitWarning", "OscarNoteWarning", "RECORDS_PER_PARAMETER", "companion_fit", "companion_fits", "fit", "point_fit",
           "small_data_advice"]

RECORDS_PER_PARAMETER = 50  # below this many judgments per free parameter, compare with the smaller model
WIDER = 1.5  # intervals this many times as wide as the smaller model's are worth a note


_NOTES_SHOWN: set[str] = set()


def _warn_notes(notes, stacklevel: int) -> None:
    for note in notes:
        if note not in _NOTES_SHOWN:
            _NOTES_SHOWN.add(note)
            warnings.warn(f"oscar_jax: {note} (see result.notes)", OscarNoteWarning, stacklevel=stacklevel)


@lru_cache(maxsize=64)
def _unit_weights(n_clusters: int):
    return jax.device_put(np.ones(n_clusters))  # jnp.ones/jnp.asarray would compile a program


def fit(data, model: str | ModelSpec | None = None, *, starts: int | None = None, seed: int = 0, ci_prob: float = 0.95,
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
    starts = None if starts is None else check_positive_int("starts", starts)
    seed = check_seed("seed", seed)
    max_iter = check_positive_int("max_iter", max_iter)
    return _fit(prepare(data, model, **setup), starts=starts, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn,
                report_programs=True)


def point_fit(problem: Problem, *, seed: int = 0) -> FitResult:
    """The one-start penalized fit another estimator starts from or reads flags off (the
    posterior's mode approximation, its separation check and γ̄ judges): :func:`fit` with
    ``starts=1``, without compiling ahead the programs a fit's own report uses (an empty
    compile cache: 1.3–2.1 CPU-s of `oscar bayes`)."""
    return _fit(problem, starts=1, seed=check_seed("seed", seed), ci_prob=0.95, max_iter=100, warn=False,
                report_programs=False)


def _fit(problem: Problem, *, starts, seed, ci_prob, max_iter, warn, report_programs: bool) -> FitResult:
    design, eff, layout = problem.design, problem.effective_spec, problem.layout
    plain_bt = eff.structure().plain_bt
    host_bt = starts is None and plain_bt
    adaptive = starts is None and design.arrays.group_cell is not None
    starts = 2 if starts is None else starts
    if host_bt:
        # Plain BT: a strictly convex (C−1)-dimensional problem on the pair table, which host
        # numpy solves faster than a compiled program is dispatched (infer/plain_bt.py).
        core = bt_fit_core(design.arrays, layout, eff.ridge, design.n_clusters, max_iter=max_iter)
        return _result(problem, core, ci_prob, warn)
    omega = _unit_weights(design.n_clusters)
    args = (design.arrays, omega, np.int64(seed))
    program, host_checks = fit_core_program(design.n_cells)
    kw = dict(n_starts=starts, adaptive=adaptive, layout=layout, n_clusters=design.n_clusters, ridge=eff.ridge,
              v_bound=eff.v_bound, max_iter=max_iter, stats=design.arrays.stats, host_checks=host_checks)
    if host_checks:  # a small design: B.2's selection and B.3's spectra in host numpy (fit_core_program)
        kw["free"] = tuple(int(x) for x in column_mask(design.arrays, design.arrays.stats, layout, xp=np))
    # Inside compile_ahead (the CLI): trace the fit first, then hand what will report on it
    # to the worker thread, whose tracing then runs while this thread compiles the fit.
    program.preload(*args, **kw)
    if report_programs and not plain_bt:  # plain BT reports in host numpy
        prepare_report_programs(design, layout, eff.ridge)
    core = program(*args, **kw)
    core = type(core)(*jax.device_get(tuple(core)))
    if host_checks:
        live = np.asarray(design.arrays.stats)[:, 0] > 0  # the comparisons the graph check links
        a, b = (np.asarray(x)[live] for x in (design.arrays.a, design.arrays.b))
        core = complete_checks(core, a, b, layout.n_cand)
    return _result(problem, core, ci_prob, warn)


def _result(problem: Problem, core, ci_prob, warn) -> FitResult:
    """The result of :func:`fit`; its warnings point at fit's caller."""
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
            warnings.warn(f"{eff.name} fit: {message}", OscarFitWarning, stacklevel=3)
        _warn_notes(result.notes, 4)
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


def small_data_advice(result: FitResult, *, ci: str = "sandwich", ridge: float | None = None, seed: int = 0,
                      board=None) -> list[str]:
    """Plain-language notes when the data are too small for the model asked for.

    A default OSCAR fit estimates a position, length and own-family coefficient per
    judge. On a few hundred judgments those per-judge terms are barely determined, and
    their uncertainty flows into every candidate's interval: the board then ranks every
    model 1 and "checks: all passed" reads as if all were well. The notes say so and name
    the smaller model to try, measured rather than guessed: the smaller model is fitted on
    the same data (:func:`companion_fit`) and the interval widths are compared. ``board`` is the
    leaderboard the user is shown (anchored, on a scale, draw-based); the note about Rank (UB)
    reads that one, so it never contradicts the table above it.
    """
    notes = []
    d, eff = result.design, result.effective_spec
    shown = result.leaderboard(ci) if board is None else board
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
    if len(shown) > 1 and (shown.rank_ub == 1).all():
        pct = f"{100 * result.ci_prob:g}%"
        notes.append(f"no candidate is separated from another at {pct}: every Rank (UB) is 1. The order of the "
                     "point estimates is not established by these data; more prompts narrow the intervals.")
    return notes
