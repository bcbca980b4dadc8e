"""Percentile intervals over replicate draws (bootstrap, paired refit bootstrap).

Replicates that failed a check enter as NaN rows and are ignored; a quantity with no
finite draw at all gets a NaN interval rather than an error.
"""

from __future__ import annotations

import numpy as np

__all__ = ["percentiles"]


def percentiles(draws: np.ndarray, ci_prob: float, method: str = "linear") -> tuple[np.ndarray, np.ndarray]:
    """Pointwise (1 − ci)/2 and (1 + ci)/2 percentiles over axis 0, ignoring NaN draws."""
    alpha = 0.5 * (1.0 - ci_prob)
    if draws.shape[0] == 0:
        nan = np.full(draws.shape[1:], np.nan)
        return nan, nan
    all_nan = np.all(np.isnan(draws), axis=0)
    safe = np.where(all_nan[None], 0.0, draws)
    lo, hi = np.nanquantile(safe, [alpha, 1.0 - alpha], axis=0, method=method)
    return np.where(all_nan, np.nan, lo), np.where(all_nan, np.nan, hi)
