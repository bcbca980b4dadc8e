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
import jax.numpy as jnp
import numpy as np

from . import _x64  # noqa: F401
from .core import fit_core_jit
from .data import load_judgments
from .design import Design, build_design
from .params import Layout
from .program_cache import persistent_jit
from .results import FitResult
from .spec import ModelSpec, parse_model
from .validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = ["OscarFitWarning", "OscarNoteWarning", "as_design", "fit", "start_points"]

START_SD = 0.08  # B.3: second start drawn from N(0, 0.08² I)


class OscarFitWarning(UserWarning):
    """A fit finished but failed one of the Appendix B.3 checks."""


class OscarNoteWarning(UserWarning):
    """Something the fit did that changes what it estimates (a term dropped, records left out).

    Issued once per distinct note per session; the CLI prints the notes in its output
    instead. Silence with ``warnings.filterwarnings("ignore", category=OscarNoteWarning)``.
    """


_NOTES_SHOWN: set[str] = set()


def _warn_notes(notes) -> None:
    for note in notes:
        if note not in _NOTES_SHOWN:
            _NOTES_SHOWN.add(note)
            warnings.warn(f"oscar_jax: {note} (see result.notes)", OscarNoteWarning, stacklevel=3)




def as_design(data, *, schema=None, reference_judge=None, family_map=None, covariates=(),
              bothbad="tie", encoding=None, responses=None, turn=1, missing_responses="error") -> Design:
    """A Design from a Design (returned as is), a path, a DataFrame or records.

    ``responses``, ``turn`` and ``missing_responses`` join response lengths (see
    :func:`~oscar_jax.data.load_judgments`); ``encoding`` is the
    text encoding of CSV/TSV/JSON files.
    """
    if isinstance(data, Design):
        if reference_judge is not None or family_map is not None or covariates or responses is not None:
            raise OscarInputError(
                "reference_judge, family_map, covariates and responses are fixed when the design is built; "
                "pass them to build_design() instead"
            )
        return data
    frame, report = load_judgments(data, schema=schema, bothbad=bothbad, keep_columns=tuple(covariates or ()),
                                   encoding=encoding, responses=responses, turn=turn, missing_responses=missing_responses)
    return build_design(frame, reference_judge=reference_judge, family_map=family_map,
                        covariates=covariates, report=report)


def _draw_starts(key, n_starts: int, n_theta: int):
    zero = jnp.zeros((1, n_theta))
    if n_starts == 1:
        return zero
    draws = START_SD * jax.random.normal(key, (n_starts - 1, n_theta))
    return jnp.concatenate([zero, draws])


# One compiled program per (count, dim θ) rather than five eager ones (seed, normal,
# multiply, zeros, concatenate), each its own XLA compilation in every new process.
_draw_starts_jit = jax.jit(_draw_starts, static_argnums=(1, 2))
def _seeded_starts(seed, n_starts: int, n_theta: int):
    return _draw_starts(jax.random.PRNGKey(seed), n_starts, n_theta)


_seeded_starts_jit = persistent_jit(_seeded_starts, static_argnames=("n_starts", "n_theta"))


def start_points(layout: Layout, n_starts: int, key) -> jnp.ndarray:
    """(n_starts, P): the zero start, then draws from N(0, 0.08² I)."""
    return _draw_starts_jit(key, int(n_starts), layout.n_theta)


@lru_cache(maxsize=64)
def _starts_for(layout: Layout, n_starts: int, seed: int):
    # The starts depend only on (layout, count, seed): drawing them costs more host time
    # than a small compiled fit, so repeated fits of one design reuse them. Same draws as
    # start_points(layout, n_starts, PRNGKey(seed)).
    return _seeded_starts_jit(np.int64(seed), n_starts=int(n_starts), n_theta=layout.n_theta)


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
        A :class:`~oscar_jax.design.Design`, a file path, a DataFrame or a list of
        records in any supported schema (see :func:`~oscar_jax.data.load_judgments`).
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
        the columns); see :data:`oscar_jax.data.SCHEMAS`.
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
    ``result.scores`` is s on the reference judge's scale. Leaderboards use the
    average-judge logit x = γ̄·s, independent of the reference judge, with
    P(i beats j) = σ(x_i − x_j) for a judge of average sensitivity with biases at zero
    (``result.win_prob``). Elo: ``arena_leaderboard(result, scale="elo")`` gives
    1000 + (400/ln 10)·x with intervals and Rank (UB); win rate against a baseline:
    ``oscar_jax.scales.scaled_board(result, scale="winrate", baseline=NAME)``.

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
    design = as_design(data, schema=schema, reference_judge=reference_judge, family_map=family_map,
                       covariates=covariates, bothbad=bothbad)
    spec = parse_model(model, ridge)
    eff, notes = design.effective_spec(spec)
    layout = design.layout(eff)
    theta0 = _starts_for(layout, starts, int(seed))
    omega = _unit_weights(design.n_clusters)
    core = fit_core_jit(design.arrays, omega, theta0, layout=layout, n_clusters=design.n_clusters,
                        ridge=eff.ridge, v_bound=eff.v_bound, max_iter=max_iter, stats=design.arrays.stats)
    core = type(core)(*jax.device_get(tuple(core)))
    if not bool(core.curvature_ok):
        notes.append("covariances not computed: the penalized Hessian failed the B.3 curvature check")
    # Covariances are computed on first use (FitResult.cov): a caller who only needs the
    # estimate (a refit loop, a benchmark against a point-estimate baseline) does not pay
    # for the cluster sandwich.
    result = FitResult(design=design, spec=spec, effective_spec=eff, layout=layout, core=core,
                       notes=tuple(design.notes) + tuple(notes), ci_prob=ci_prob)
    if warn:
        for message in result.failed_checks():
            warnings.warn(f"{eff.name} fit: {message}", OscarFitWarning, stacklevel=2)
        _warn_notes(result.notes)
    return result
