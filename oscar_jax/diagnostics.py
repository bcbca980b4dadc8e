"""Attenuation diagnostics: how omitting position shrinks fitted sensitivity (Section 4.1).

Under balanced display orders and near-equal quality, a model without the position term
fits κ^N ≈ κ^P (1 − D²), D = tanh(β_pos/2) (Eq. 5). :func:`attenuation` puts the
observed ratio of two fits next to that prediction, per judge (Table D1 / Fig. 1(c)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .links import sigmoid
from .results import FitResult
from .validate import OscarInputError

__all__ = ["attenuation", "median_abs_log_discrepancy", "population_gamma_no_position",
           "balanced_mean", "logit_slope_at_zero"]


def attenuation(naive: FitResult, adjusted: FitResult) -> pd.DataFrame:
    """Per judge: κ without and with position, their ratio, D and the predicted 1 − D².

    ``naive`` is a fit without the position term (e.g. J); ``adjusted`` one with it (J+P
    or OSCAR); both on the same design. D comes from the adjusted fit.
    """
    if naive.design.judges != adjusted.design.judges:
        raise OscarInputError("attenuation() needs two fits of the same judges")
    if "pos" not in adjusted.effective_spec.terms:
        raise OscarInputError(f"the adjusted fit ({adjusted.effective_spec.name}) has no position term")
    if "pos" in naive.effective_spec.terms:
        raise OscarInputError(f"the naive fit ({naive.effective_spec.name}) already has a position term")
    d = adjusted.D
    ratio = naive.kappa / adjusted.kappa
    predicted = 1.0 - d ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = np.log(ratio) - np.log(predicted)
    return pd.DataFrame({
        "judge": list(adjusted.design.judges),
        "kappa_naive": naive.kappa,
        "kappa_adjusted": adjusted.kappa,
        "ratio": ratio,
        "D": d,
        "predicted": predicted,
        "log_discrepancy": disc,
    })


def median_abs_log_discrepancy(table: pd.DataFrame) -> float:
    """median_k |log(κᴶ/κᴶ⁺ᴾ) − log(1 − D²)| over judges with finite values (Table D1)."""
    v = np.abs(table["log_discrepancy"].to_numpy(dtype=float))
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else float("nan")


def balanced_mean(x, beta, gamma=1.0, first_prob=0.5):
    """m(x) = p σ(γx + β) + (1 − p) σ(γx − β): order-averaged preference (Section 4.1)."""
    return first_prob * sigmoid(gamma * x + beta) + (1.0 - first_prob) * sigmoid(gamma * x - beta)


def logit_slope_at_zero(beta, gamma=1.0):
    """d logit m(x) / dx at x = 0 by automatic differentiation (Eq. 5: γ (1 − D²)).

    Exact to rounding, so it can be compared with the closed form to 1e-10.
    """
    import jax
    import jax.numpy as jnp

    def logit_m(x):
        m = 0.5 * (jax.nn.sigmoid(gamma * x + beta) + jax.nn.sigmoid(gamma * x - beta))
        return jnp.log(m) - jnp.log1p(-m)

    return float(jax.grad(logit_m)(jnp.float64(0.0)))


def population_gamma_no_position(x, m):
    """argmin_{γ ≥ 0} Σ_j [log(1 + e^{γ x_j}) − m(x_j) γ x_j] (Eq. 6, Lemma A.2).

    Solved by root-finding on the strictly increasing first-order condition
    Σ x_j (σ(γ x_j) − m_j) = 0, bracketed between 0 and a value where it is positive.
    """
    from scipy.optimize import brentq  # scipy.optimize is slow to import; only needed here

    x = np.asarray(x, dtype=float)
    m = np.asarray(m, dtype=float)

    def foc(g):
        return float(np.sum(x * (sigmoid(g * x) - m)))

    if foc(0.0) >= 0:
        return 0.0
    hi = 1.0
    while foc(hi) <= 0:
        hi *= 2.0
        if hi > 1e8:
            raise OscarInputError("population fit diverges: the means are separable")
    return brentq(foc, 0.0, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
