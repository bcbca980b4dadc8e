"""One R-hat threshold and one wording for every NUTS run (``oscar bayes``, ``oscar audit``).

Vehtari et al. (2021, "Rank-normalization, folding, and localization"): rank-normalized
split R-hat below 1.01. Both Bayesian models flag a run at or above it the same way.
"""

from __future__ import annotations

import math

__all__ = ["RHAT_MAX", "rhat_ok", "rhat_message", "rhat_flag"]

RHAT_MAX = 1.01


def rhat_ok(value) -> bool:
    """True when R-hat is below the threshold (or undefined: one chain, nothing to compare)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value < RHAT_MAX


def rhat_message(value: float, where: str | None = None) -> str:
    """The warning for a failed R-hat: value, threshold, the worst variable and the fix."""
    at = f" ({where})" if where else ""
    return f"R-hat {value:.3f} ≥ {RHAT_MAX}{at}: chains disagree; run more warm-up/draws"


def rhat_flag(value) -> str:
    """``"ok"`` or ``"POOR"`` next to a printed R-hat."""
    return "ok" if rhat_ok(value) else "POOR"
