"""Intervals and ranks from draws: the one toolkit of bootstrap, posterior and draw-based tables.

Draws are (n_draws, …) arrays — bootstrap replicates or flattened posterior draws; every
function here is plain numpy on the host. :class:`Draws` is the protocol by which a result
that carries draws hands them over (``result.theta_draws()``): the bootstrap's valid
replicates, the posterior's draws on the point fit's scale.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..runtime.validate import OscarInputError, check_ci_prob, check_choice

__all__ = ["CI_KINDS", "CI_KIND_NAMES", "CI_SOURCES", "Draws", "SCORE_SCALES", "draw_interval", "draw_ranks",
           "interval_request", "mcse_of_mean", "p_best", "percentiles", "rank_probabilities"]


class Draws(NamedTuple):
    """θ draws in a fit's parametrization, as ``result.theta_draws()`` returns them.

    ``theta`` (B, P) holds only the draws that passed their checks (``n_failed`` counts
    the others); ``targets`` are the :class:`~oscar_jax.infer.sandwich.Targets` of every
    row (B-leading arrays). ``kind`` is the interval they give by default: ``"percentile"``
    (bootstrap), ``"eti"`` or ``"hdi"`` (posterior); ``source`` is ``"bootstrap"`` or
    ``"bayes"`` (what ``oscar fit --ci`` names them).
    """

    theta: np.ndarray
    targets: object
    kind: str
    source: str
    n_failed: int = 0

# Posterior intervals are equal-tailed by default: as ``oscar fit --ci bayes``, the
# bootstrap's percentiles and ArviZ 1.x (``stats.ci_kind``), and invariant under monotone
# maps (the interval of q = σ(γ̄ Δs) is the map of that of γ̄ Δs), which the HDI is not.
# For q near its bounds the HDI gave up coverage on the long side: 92.6% against 94.2%
# for 95% intervals on the 50 Appendix G datasets (docs/bayes.md).
CI_KINDS = ("eti", "hdi")
CI_KIND_NAMES = {"eti": "ETI", "hdi": "HDI"}  # table headers and plot labels
# Where a leaderboard's intervals come from, and the scales a score is shown on (the CLI's
# --ci and --scale; here, in a module without JAX, so that `oscar CMD --help` starts light).
CI_SOURCES = ("sandwich", "model", "bootstrap", "bayes")
SCORE_SCALES = ("logit", "elo", "winrate")


def percentiles(draws: np.ndarray, ci_prob: float, method: str = "linear") -> tuple[np.ndarray, np.ndarray]:
    """Pointwise (1 − ci)/2 and (1 + ci)/2 percentiles over axis 0, ignoring NaN draws."""
    alpha = 0.5 * (1.0 - ci_prob)
    if draws.shape[0] == 0:
        nan = np.full(draws.shape[1:], np.nan)
        return nan, nan
    if not np.isnan(draws).any():  # one vectorised pass; nanquantile loops over columns
        lo, hi = np.quantile(draws, [alpha, 1.0 - alpha], axis=0, method=method)
        return lo, hi
    all_nan = np.all(np.isnan(draws), axis=0)
    safe = np.where(all_nan[None], 0.0, draws)
    lo, hi = np.nanquantile(safe, [alpha, 1.0 - alpha], axis=0, method=method)
    return np.where(all_nan, np.nan, lo), np.where(all_nan, np.nan, hi)


def draw_interval(values: np.ndarray, ci_prob: float, kind: str = "percentile") -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) over axis 0 of (n_draws, …) draws: equal-tailed percentiles (``"percentile"``,
    ``"eti"``) or the highest-density interval (``"hdi"``, ArviZ's)."""
    if kind != "hdi":
        return percentiles(values, ci_prob)
    from arviz_stats.base import array_stats

    band = np.asarray(array_stats.hdi(values[None], ci_prob, axis=(0, 1)))
    return band[..., 0], band[..., 1]


def mcse_of_mean(draws: np.ndarray, *, independent: bool) -> np.ndarray:
    """Monte Carlo standard error of the mean over the leading (chain, draw) axes of ``draws``.

    Independent draws (bootstrap replicates, a variational approximation's samples):
    sd/√n, for an indicator √(p(1 − p)/n). Markov chains: sd/√ESS with ArviZ's ESS of the
    mean. A quantity constant over the draws has SE 0.
    """
    draws = np.asarray(draws, dtype=float)
    n = draws.shape[0] * draws.shape[1]
    if n == 0:
        return np.full(draws.shape[2:], np.nan)
    if independent:
        return draws.std(axis=(0, 1)) / np.sqrt(n)
    from arviz_stats.base import array_stats

    constant = np.all(draws == draws[:1, :1], axis=(0, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.asarray(array_stats.mcse(np.moveaxis(draws, (0, 1), (-2, -1)), method="mean"))
    return np.where(constant, 0.0, se)


def draw_ranks(scores: np.ndarray) -> np.ndarray:
    """(n_draws, C) rank of each candidate in each draw of (n_draws, C) scores (1 = highest; ties stable)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(scores.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, scores.shape[1] + 1)[None, :]
    return ranks


def rank_probabilities(ranks: np.ndarray) -> np.ndarray:
    """(C, C) P(rank = r): row = candidate, column r − 1; NaN without draws."""
    c = ranks.shape[1]
    n = max(ranks.shape[0], 1)
    probs = np.stack([(ranks == r).sum(axis=0) / n for r in range(1, c + 1)], axis=1)
    if ranks.shape[0] == 0:
        probs[:] = np.nan
    return probs


def p_best(ranks: np.ndarray) -> np.ndarray:
    """(C,) share of draws in which each candidate ranks first (NaN without draws)."""
    return (ranks == 1).mean(axis=0) if ranks.shape[0] else np.full(ranks.shape[1], np.nan)


def interval_request(ci, ci_prob, *, kinds: tuple[str, ...], default_prob: float) -> tuple[str, float]:
    """(kind, level) of the tables' one signature ``table(ci=None, *, ci_prob=None)``.

    ``ci`` names the interval kind (the first of ``kinds`` by default); ``ci_prob`` the
    level (the result's own by default). A number passed as ``ci`` is the level: the
    posterior tables took ``ci_prob`` as their first argument before.
    """
    if isinstance(ci, (int, float, np.floating)) and not isinstance(ci, bool):
        if ci_prob is not None:
            raise OscarInputError(f"ci={ci!r} is a level and ci_prob={ci_prob!r} is another: give one")
        ci, ci_prob = None, ci
    kind = kinds[0] if ci is None else check_choice("ci", ci, kinds)
    return kind, default_prob if ci_prob is None else check_ci_prob(ci_prob)
