"""Attenuation: how omitting position shrinks fitted sensitivity (Sections 4.1 and 6.2).

Under balanced display orders and near-equal quality, a model without the position term
fits κ^N ≈ κ^P (1 − D²), D = tanh(β_pos/2) (Eq. 5).

* :func:`attenuation` puts the observed ratio of two full fits next to that prediction,
  per judge (Table D1 / Fig. 1(c)); :func:`balanced_mean`, :func:`logit_slope_at_zero`
  and :func:`population_gamma_no_position` are the population calculations of Fig. 1(b).
* :func:`fixed_score_refit` — Equation (11): with scores (and a position effect) held
  fixed, refit each judge's γ ≥ 0 with and without the position term
  (:mod:`oscar_jax.infer.gamma_refit`), and put γᴺ/γᴾ next to 1 − D² (Appendix D.3);
  :func:`attenuation_refit` runs the whole calibrate-on-one-split, refit-on-another
  protocol with an optional paired bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .model.design import Design
from .infer.gamma_refit import REFIT_RIDGE, refit_gamma_batch
from .model.links import net_preference, sigmoid
from .infer.batch_fit import fit_batch
from .results.intervals import percentiles
from .model.problem import prepare
from .infer.weights import within_fold_weights
from .results.fit import FitResult
from .model.spec import ModelSpec
from .runtime.lazy_jax import jax, jnp
from .runtime.validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = [
    "AttenuationResult",
    "FixedScoreRefit",
    "attenuation",
    "attenuation_refit",
    "balanced_mean",
    "fixed_score_refit",
    "logit_slope_at_zero",
    "median_abs_log_discrepancy",
    "population_gamma_no_position",
]


# --------------------------------------------------------------------------- full fits and population
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


def _finite_median(v) -> float:
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else float("nan")


def median_abs_log_discrepancy(table) -> float | np.ndarray:
    """median_k |log ratio − log(1 − D²)| over judges with finite values (Table D1).

    ``table`` is a table with a ``log_discrepancy`` column (:func:`attenuation`,
    ``FixedScoreRefit.table()``) or the log discrepancies themselves, (K,) or (B, K)
    (then one median per row).
    """
    v = table["log_discrepancy"] if isinstance(table, pd.DataFrame) else table
    v = np.abs(np.asarray(v, dtype=float))
    if v.ndim == 2:
        return np.array([_finite_median(row) for row in v])
    return _finite_median(v)


def balanced_mean(x, beta, gamma=1.0, first_prob=0.5):
    """m(x) = p σ(γx + β) + (1 − p) σ(γx − β): order-averaged preference (Section 4.1)."""
    return first_prob * sigmoid(gamma * x + beta) + (1.0 - first_prob) * sigmoid(gamma * x - beta)


def logit_slope_at_zero(beta, gamma=1.0):
    """d logit m(x) / dx at x = 0 by automatic differentiation (Eq. 5: γ (1 − D²)).

    Exact to rounding, so it can be compared with the closed form to 1e-10.
    """
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


# --------------------------------------------------------------------------- fixed-score refits
def _normalize_scores(s):
    """s̃ = (s − mean)/RMS (Section 6.2), row-wise for (B, C)."""
    s = np.asarray(s, dtype=np.float64)
    centred = s - s.mean(axis=-1, keepdims=True)
    rms = np.sqrt(np.mean(centred ** 2, axis=-1, keepdims=True))
    return centred / np.where(rms > 0, rms, np.nan)


@dataclass(frozen=True, eq=False)
class FixedScoreRefit:
    """Equation (11) refits: γᴺ (no position) and γᴾ (fixed β_k) per judge, scores fixed.

    Arrays are (K,) for one refit sample or (B, K) for a batch of cluster weights.
    ``ratio`` = γᴺ/γᴾ, ``predicted`` = 1 − D² with D = tanh(β/2) (Eq. 5);
    ``log_discrepancy`` = log ratio − log predicted. Judges with no refit data are NaN.
    """

    judges: tuple[str, ...]
    gamma_naive: np.ndarray
    gamma_pos: np.ndarray
    beta_pos: np.ndarray
    weight: np.ndarray
    converged: np.ndarray

    @property
    def D(self) -> np.ndarray:
        return net_preference(self.beta_pos)

    @property
    def predicted(self) -> np.ndarray:
        return 1.0 - self.D ** 2

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.gamma_pos > 0, self.gamma_naive / self.gamma_pos, np.nan)

    @property
    def log_discrepancy(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.ratio > 0, np.log(self.ratio) - np.log(self.predicted), np.nan)

    def table(self) -> pd.DataFrame:
        if self.gamma_naive.ndim != 1:
            raise OscarInputError("table() describes one refit; this FixedScoreRefit holds a batch (B, K)")
        return pd.DataFrame({"judge": list(self.judges), "n": self.weight, "D": self.D,
                             "gamma_naive": self.gamma_naive, "gamma_pos": self.gamma_pos,
                             "ratio": self.ratio, "predicted": self.predicted,
                             "log_discrepancy": self.log_discrepancy})

    def median_abs_log_discrepancy(self) -> float | np.ndarray:
        """median_k |log(γᴺ/γᴾ) − log(1 − D²)| over judges with finite values (per row)."""
        return median_abs_log_discrepancy(self.log_discrepancy)


def fixed_score_refit(design: Design, scores, beta_pos, *, omega=None, ridge: float = REFIT_RIDGE,
                      max_iter: int = 100) -> FixedScoreRefit:
    """Refit each judge's sensitivity with scores held fixed, with and without position (Eq. 11).

    Minimizes Σ_t ℓ_t + 0.05 γ_k²/2 subject to γ_k ≥ 0 (Appendix D.3) for
    p̂ᴺ = σ(γᴺ_k d̃_t) and p̂ᴾ = σ(γᴾ_k d̃_t + β_k), d̃ = s̃_a − s̃_b with s̃ the scores
    centred and scaled to RMS 1, fractional ties.

    Parameters
    ----------
    design
        The refit data.
    scores
        (C,) or (B, C) calibration scores (normalized here).
    beta_pos
        (K,) or (B, K) position effects held fixed in the adjusted refit (e.g. a J+P fit's
        β_pos or an exact-swap calibration); NaN (a dropped column) counts as 0.
    omega
        (G,) or (B, G) cluster weights selecting/resampling the refit prompts (default all).

    Returns
    -------
    FixedScoreRefit with (K,) arrays, or (B, K) when any input is batched.
    """
    if not isinstance(design, Design):
        raise OscarInputError("fixed_score_refit() needs a Design; build one with oscar_jax.prepare(data).design")
    max_iter = check_positive_int("max_iter", max_iter)
    s = np.asarray(scores, dtype=np.float64)
    beta = np.nan_to_num(np.asarray(beta_pos, dtype=np.float64), nan=0.0)
    om = np.ones(design.n_clusters) if omega is None else np.asarray(omega, dtype=np.float64)
    if s.shape[-1] != design.n_cand or s.ndim > 2:
        raise OscarInputError(f"scores must have shape (C,) or (B, C) with C = {design.n_cand}, got {s.shape}")
    if beta.shape[-1] != design.n_judge or beta.ndim > 2:
        raise OscarInputError(f"beta_pos must have shape (K,) or (B, K) with K = {design.n_judge}, got {beta.shape}")
    if om.shape[-1] != design.n_clusters or om.ndim > 2 or np.any(~np.isfinite(om)) or np.any(om < 0):
        raise OscarInputError(f"omega must be finite, ≥ 0, shape (G,) or (B, G) with G = {design.n_clusters}")
    if not np.all(np.isfinite(s)):
        raise OscarInputError("scores contain non-finite values")
    batched = s.ndim == 2 or beta.ndim == 2 or om.ndim == 2
    b = max(x.shape[0] if x.ndim == 2 else 1 for x in (s, beta, om))
    s_t = _normalize_scores(np.broadcast_to(s, (b, design.n_cand)))
    if not np.all(np.isfinite(s_t)):
        raise OscarInputError("scores are all equal: there is no score difference to refit a sensitivity on")
    beta_b = np.broadcast_to(beta, (b, design.n_judge))
    om_b = np.broadcast_to(om, (b, design.n_clusters))
    fn = refit_gamma_batch(design.n_cand, design.n_judge, design.n_cells, max_iter)
    g_n, g_p, ok, weight = (np.asarray(x) for x in fn(design.arrays, jnp.asarray(om_b), jnp.asarray(s_t),
                                                      jnp.asarray(beta_b), float(ridge)))
    empty = weight <= 0
    g_n, g_p = np.where(empty, np.nan, g_n), np.where(empty, np.nan, g_p)
    if not batched:
        g_n, g_p, beta_b, weight, ok = g_n[0], g_p[0], beta_b[0], weight[0], ok[0]
    return FixedScoreRefit(judges=design.judges, gamma_naive=g_n, gamma_pos=g_p, beta_pos=np.array(beta_b),
                           weight=weight, converged=ok)


@dataclass(frozen=True, eq=False)
class AttenuationResult:
    """Section 6.2 protocol: calibrate on one prompt split, refit sensitivities on another.

    ``refit`` holds the point estimates; ``boot`` the paired bootstrap refits (B, K) or None.
    """

    refit: FixedScoreRefit
    split: np.ndarray            # (G,) 0 = calibration cluster, 1 = refit cluster
    calibration_model: str
    boot: FixedScoreRefit | None
    boot_valid: np.ndarray | None
    ci_prob: float
    seed: int

    def table(self) -> pd.DataFrame:
        """Per judge: D, γᴺ, γᴾ, γᴾ − γᴺ, ratio γᴺ/γᴾ, 1 − D², log discrepancy (+ percentile CIs)."""
        t = self.refit.table()
        t.insert(5, "difference", t["gamma_pos"] - t["gamma_naive"])
        if self.boot is not None:
            v = self.boot_valid
            for name, draws in (("gamma_naive", self.boot.gamma_naive), ("gamma_pos", self.boot.gamma_pos),
                                ("difference", self.boot.gamma_pos - self.boot.gamma_naive),
                                ("ratio", self.boot.ratio), ("D", self.boot.D)):
                lo, hi = percentiles(np.asarray(draws)[v], self.ci_prob)
                t[f"{name}_lo"], t[f"{name}_hi"] = lo, hi
        return t


def attenuation_refit(data, model: str | ModelSpec = "j+p", *, refit_fraction: float = 0.25, seed: int = 0,
                      replicates: int = 0, beta_pos=None, ci_prob: float = 0.95, chunk_size: int | None = None,
                      show_progress: bool | None = None, **setup) -> AttenuationResult:
    """The fixed-score attenuation check of Section 6.2 / Appendix D.3 on any data.

    Prompt clusters are split at random (``seed``) into a calibration set and a refit
    set (``refit_fraction`` of the clusters). ``model`` (with a position term) is fitted
    on the calibration set; its scores — and its β_pos unless ``beta_pos`` (K,) is given,
    e.g. from an exact-swap calibration — are held fixed while each judge's γ is refitted
    on the refit set with and without position (:func:`fixed_score_refit`).
    ``replicates`` > 0 adds the paired prompt bootstrap of D.3: prompts are resampled
    within each fixed split, and calibration fit and refits are redone per replicate
    (calibration fits vmapped in one batch, warm-started at the calibration estimate).
    ``data`` and ``**setup`` are as for :func:`~oscar_jax.fit` (``reference_judge``,
    ``filters``, …; see :func:`~oscar_jax.model.problem.prepare`).
    """
    ci_prob = check_ci_prob(ci_prob)
    replicates = check_positive_int("replicates", replicates, minimum=0)
    if not 0.0 < float(refit_fraction) < 1.0:
        raise OscarInputError(f"refit_fraction must lie strictly between 0 and 1, got {refit_fraction}")
    problem = prepare(data, model, **setup)
    design, eff = problem.design, problem.effective_spec
    if beta_pos is None and "pos" not in eff.terms:
        raise OscarInputError(f"calibration model {eff.name} has no position term; use e.g. 'j+p' or pass beta_pos=")
    g = design.n_clusters
    n_refit = int(round(refit_fraction * g))
    if n_refit < 1 or n_refit >= g:
        raise OscarInputError(f"refit_fraction = {refit_fraction} leaves an empty split of the {g} prompt clusters")
    perm = np.asarray(jax.random.permutation(jax.random.PRNGKey(int(seed)), g))
    split = np.zeros(g, dtype=np.int64)
    split[perm[:n_refit]] = 1
    calib_w, refit_w = (split == 0).astype(float), (split == 1).astype(float)

    def calibrate(omega, starts):
        batch = fit_batch(problem, omega=omega, starts=starts, chunk_size=chunk_size, show_progress=show_progress,
                          desc=f"{eff.name} calibration")
        s = batch.targets.s
        beta = np.nan_to_num(batch.coefficient("pos"), nan=0.0) if beta_pos is None else \
            np.broadcast_to(np.asarray(beta_pos, float), (batch.n, design.n_judge))
        return batch, s, beta

    cal, s, beta = calibrate(calib_w[None], None)
    refit = fixed_score_refit(design, s[0], beta[0], omega=refit_w)
    boot, boot_valid = None, None
    if replicates:
        omega = np.asarray(within_fold_weights(jax.random.fold_in(jax.random.PRNGKey(int(seed)), 5), split, replicates))
        cal_b, s_b, beta_b = calibrate(omega * calib_w[None], cal.theta[0])
        boot = fixed_score_refit(design, s_b, beta_b, omega=omega * refit_w[None])
        boot_valid = cal_b.valid & np.asarray(boot.converged)
    return AttenuationResult(refit=refit, split=split, calibration_model=eff.name, boot=boot, boot_valid=boot_valid,
                             ci_prob=ci_prob, seed=int(seed))
