"""θ draws behind ``--ci bootstrap`` / ``--ci bayes`` and the percentile intervals they give.

A draw source is the prompt bootstrap (:func:`oscar_jax.bootstrap.bootstrap`) or the
posterior (:func:`oscar_jax.bayes.fit_bayes`); both are imported only when asked for, so
NumPyro stays out of the start-up of every other command. Every draw is in the full-data
fit's parametrization, and its point estimates stay those of the full-data fit.
"""

from __future__ import annotations

import jax
import numpy as np

from ..results.bootstrap import BootstrapResult
from ..results.intervals import percentiles
from ..model.links import sigmoid
from ..results.fit import FitResult
from ..infer.sandwich import targets_batch_jit
from ..runtime.validate import OscarInputError, check_choice, check_ci_prob, check_positive_int

__all__ = ["DRAW_SOURCES", "draw_intervals", "interval_draws", "interval_source", "theta_draws"]

DRAW_SOURCES = ("bootstrap", "bayes")


def interval_source(kind: str):
    """The function that provides the draws: ``bootstrap`` → :func:`oscar_jax.bootstrap.bootstrap`,
    ``bayes`` → :func:`oscar_jax.bayes.fit_bayes`."""
    check_choice("ci", kind, DRAW_SOURCES)
    if kind == "bootstrap":
        from ..bootstrap import bootstrap

        return bootstrap
    from ..bayes import fit_bayes

    return fit_bayes


def theta_draws(obj, layout, kind: str) -> tuple[np.ndarray, int]:
    """(B, P) θ draws of a :class:`~oscar_jax.bootstrap.BootstrapResult` or a
    :class:`~oscar_jax.bayes.BayesResult`, and the number left out as failed (reported, not hidden).

    Bootstrap replicates that failed a B.3 check are left out; posterior draws are taken on
    the prompt-averaged scale (:meth:`~oscar_jax.bayes.BayesResult.population_theta`).
    """
    if isinstance(obj, BootstrapResult):
        found, ok = np.asarray(obj.batch.theta, dtype=float), np.asarray(obj.batch.valid, dtype=bool)
    else:
        from ..bayes import BayesResult

        if not isinstance(obj, BayesResult):
            raise TypeError(f"theta_draws takes a BootstrapResult or a BayesResult, not {type(obj).__name__}")
        found, ok = np.asarray(obj.population_theta(), dtype=float), None
    if found.shape[1] != layout.n_theta:
        raise OscarInputError(
            f"--ci {kind}: the draws have {found.shape[1]} coordinates but the fit's θ has "
            f"{layout.n_theta}; the draws must use the full-data fit's parametrization"
        )
    finite = np.all(np.isfinite(found), axis=1)
    if ok is not None:
        finite &= ok
    if not finite.any():
        raise OscarInputError(f"--ci {kind}: no draw passed its checks; intervals cannot be formed")
    return found[finite], int((~finite).sum())


def interval_draws(kind: str, result: FitResult, *, replicates: int = 500, seed: int = 0,
                   prompt_effect: bool | None = None) -> tuple[np.ndarray, int]:
    """(B, P) θ draws for ``--ci bootstrap`` / ``--ci bayes`` around ``result``, and the failed count.

    ``bootstrap`` reuses ``result`` as the full-data fit (the point estimate stays this
    one). ``prompt_effect`` (``bayes`` only): None for the posterior's default (the prompt ×
    candidate effect when at least half of the records share their prompt), False to drop it.
    """
    fn = interval_source(kind)
    if kind == "bootstrap":
        replicates = check_positive_int("replicates", replicates, minimum=2)
        out = fn(result.design, result.spec, replicates, seed, ci_prob=result.ci_prob, full=result)
    else:
        extra = {} if prompt_effect is None else {"prompt_effect": prompt_effect}
        out = fn(result.design, result.spec, seed=seed, ci_prob=result.ci_prob, **extra)
    return theta_draws(out, result.layout, kind)


def draw_intervals(result: FitResult, draws, ci_prob: float | None = None) -> dict:
    """Percentile intervals of the main targets over θ draws (B, P).

    Returns a dict of (lo, hi) array pairs: ``x`` (C,) average-judge logits, ``s`` (C,),
    ``q`` (C, C) win probabilities, ``q_field`` (C,), ``kappa`` (K,). Point estimates stay those of ``result``.
    """
    ci_prob = check_ci_prob(result.ci_prob if ci_prob is None else ci_prob)
    draws = np.asarray(draws, dtype=float)
    t = jax.tree_util.tree_map(np.asarray, targets_batch_jit(draws, result.layout))
    out = {"x": percentiles(t.x, ci_prob), "s": percentiles(t.s, ci_prob)}
    lo, hi = percentiles(t.h, ci_prob)
    out["q"] = (sigmoid(lo), sigmoid(hi))
    lo, hi = percentiles(t.field, ci_prob)
    out["q_field"] = (sigmoid(lo), sigmoid(hi))
    lo, hi = percentiles(t.log_kappa, ci_prob)
    out["kappa"] = (np.exp(lo), np.exp(hi))
    return out
