"""Tests and resampling for audits, in pure JAX so simulated audits vmap in one call.

* :func:`ttest_ind` — the paper's two-sample t-test across repeated runs (pooled or
  Welch), masked; agrees with ``scipy.stats.ttest_ind``.
* :func:`item_bootstrap` — paired item-level differences with an item-cluster
  bootstrap: B multinomial item weights from one key, every replicate one weighted
  mean, all replicates in one vmapped call.
* :func:`clustered_mcnemar` — McNemar's test for two conditions on a binary outcome,
  with the Durkalski et al. (2003) cluster correction for repeated runs of one item
  (equal to the ordinary McNemar χ² with one run).
* :func:`sign_test` — exact sign test on item-level differences (exact McNemar with
  one run).

p-values come from the regularized incomplete beta function (t and binomial tails)
and erfc (normal tails), so nothing leaves JAX.
"""

from __future__ import annotations

from typing import NamedTuple

from jax.scipy.special import betainc, erfc

from ..runtime.lazy_jax import jax, jnp


__all__ = [
    "ALTERNATIVES",
    "TTest",
    "binom_cdf_half",
    "clustered_mcnemar",
    "item_bootstrap",
    "normal_p",
    "sign_test",
    "t_ppf",
    "t_sf",
    "ttest_ind",
]

ALTERNATIVES = ("two-sided", "less", "greater")


def t_sf(t, df):
    """P(T ≥ t) for Student's t with ``df`` degrees of freedom (any real df > 0)."""
    t = jnp.asarray(t, jnp.float64)
    df = jnp.asarray(df, jnp.float64)
    # I_{ν/(ν+t²)}(ν/2, ½) is the two-sided tail; halving gives one tail.
    half_tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return jnp.where(t >= 0, half_tail, 1.0 - half_tail)


def t_ppf(q, df, n_iter: int = 100):
    """Quantile of Student's t by bisection on :func:`t_sf` (monotone, so it cannot miss)."""
    q = jnp.asarray(q, jnp.float64)
    df = jnp.asarray(df, jnp.float64)
    upper = jnp.abs(q - 0.5) + 0.5  # solve for the upper quantile, then reflect

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        too_small = t_sf(mid, df) > 1.0 - upper
        return jnp.where(too_small, mid, lo), jnp.where(too_small, hi, mid)

    lo, hi = jax.lax.fori_loop(0, n_iter, body, (jnp.zeros_like(df), jnp.full_like(df, 1e8)))
    x = 0.5 * (lo + hi)
    return jnp.where(q >= 0.5, x, -x)


def normal_p(z, alternative: str):
    """p-value of a standard-normal statistic."""
    z = jnp.asarray(z, jnp.float64)
    upper = 0.5 * erfc(z / jnp.sqrt(2.0))
    if alternative == "greater":
        return upper
    if alternative == "less":
        return 1.0 - upper
    return jnp.minimum(1.0, erfc(jnp.abs(z) / jnp.sqrt(2.0)))


class TTest(NamedTuple):
    """Two-sample t-test of mean(x) − mean(y); every field has the batch shape."""

    diff: jax.Array
    se: jax.Array
    df: jax.Array
    t: jax.Array
    p: jax.Array
    lo: jax.Array
    hi: jax.Array


def ttest_ind(x, x_mask, y, y_mask, *, alternative: str = "two-sided", equal_var: bool = True,
              ci_prob: float = 0.95) -> TTest:
    """Two-sample t-test over the last axis, counting only masked-in values.

    Parameters
    ----------
    x, y : (..., R) float
        Per-run values of the two conditions (e.g. Bad DR of each run).
    x_mask, y_mask : (..., R) bool
    alternative
        ``"two-sided"``, ``"less"`` (H1: mean x < mean y) or ``"greater"``.
    equal_var
        Pooled variance (scipy's default, and the paper's "two-sample t-test") or Welch.
    ci_prob
        Level of the interval for the difference (one-sided alternatives give a
        one-sided interval, as scipy's ``confidence_interval``).

    Returns
    -------
    TTest
        NaN where a side has < 2 runs (no variance, no test).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    xm = x_mask.astype(jnp.float64)
    ym = y_mask.astype(jnp.float64)
    nx, ny = xm.sum(-1), ym.sum(-1)
    x0, y0 = jnp.where(x_mask, x, 0.0), jnp.where(y_mask, y, 0.0)
    mx = x0.sum(-1) / jnp.maximum(nx, 1.0)
    my = y0.sum(-1) / jnp.maximum(ny, 1.0)
    vx = (((x0 - mx[..., None]) ** 2) * xm).sum(-1) / jnp.maximum(nx - 1.0, 1.0)
    vy = (((y0 - my[..., None]) ** 2) * ym).sum(-1) / jnp.maximum(ny - 1.0, 1.0)
    if equal_var:
        df = nx + ny - 2.0
        pooled = ((nx - 1.0) * vx + (ny - 1.0) * vy) / jnp.maximum(df, 1.0)
        se = jnp.sqrt(pooled * (1.0 / jnp.maximum(nx, 1.0) + 1.0 / jnp.maximum(ny, 1.0)))
    else:
        ax, ay = vx / jnp.maximum(nx, 1.0), vy / jnp.maximum(ny, 1.0)
        se = jnp.sqrt(ax + ay)
        df = (ax + ay) ** 2 / (ax ** 2 / jnp.maximum(nx - 1.0, 1.0) + ay ** 2 / jnp.maximum(ny - 1.0, 1.0))
    valid = (nx >= 2) & (ny >= 2)
    diff = mx - my
    # Rounding in the means leaves |diff| and se at ~1e-17 when both samples are constant
    # and equal (every run identical); t = diff/se is then ±inf or NaN and p = 0 claims a
    # certain difference. Differences within rounding of the means are exactly 0: no
    # evidence of a difference (t = 0, p = 1).
    tol = 64.0 * jnp.finfo(jnp.float64).eps * jnp.maximum(jnp.maximum(jnp.abs(mx), jnp.abs(my)), 1e-300)
    same = (jnp.abs(diff) <= tol) & (se <= tol)
    diff = jnp.where(same, 0.0, diff)
    se = jnp.where(same, 0.0, se)
    t = jnp.where(same, 0.0, diff / jnp.where(same, 1.0, se))
    if alternative == "two-sided":
        p = 2.0 * t_sf(jnp.abs(t), df)
        crit = t_ppf(0.5 + ci_prob / 2.0, df)
        lo, hi = diff - crit * se, diff + crit * se
    elif alternative == "greater":
        p = t_sf(t, df)
        lo, hi = diff - t_ppf(ci_prob, df) * se, jnp.full_like(diff, jnp.inf)
    else:
        p = 1.0 - t_sf(t, df)
        lo, hi = jnp.full_like(diff, -jnp.inf), diff + t_ppf(ci_prob, df) * se
    nan = jnp.nan
    return TTest(*(jnp.where(valid, v, nan) for v in (diff, se, df, t, jnp.minimum(p, 1.0), lo, hi)))


def item_bootstrap(key, d, obs, n_boot: int, *, ci_prob: float = 0.95, alternative: str = "two-sided"):
    """Paired item-level differences, resampled by items (the unit that was matched).

    Parameters
    ----------
    key
        PRNG key.
    d : (I, K) float
        Item-level differences for K contrasts (e.g. item mean of "bad" under a
        condition minus under the reference, over runs).
    obs : (I, K) bool
        Item judged in both sides of the contrast.
    n_boot
        Replicates B (static).

    Returns
    -------
    dict with ``estimate`` (K,), ``se`` (K,), ``lo``/``hi`` (K,) percentile interval,
    ``p`` (K,) and ``draws`` (B, K). The p-value inverts the percentile interval,
    ``2 · min(1 + #{Δ* ≤ 0}, 1 + #{Δ* ≥ 0}) / (B + 1)`` (one side for one-sided
    alternatives), so it is < α exactly when the interval excludes 0 (up to the +1).
    """
    n_items = d.shape[0]
    o = obs.astype(jnp.float64)
    d0 = jnp.where(obs, d, 0.0)

    def stat(w):
        ww = w[:, None] * o
        den = ww.sum(0)
        return jnp.where(den > 0, (ww * d0).sum(0) / jnp.where(den > 0, den, 1.0), jnp.nan)

    idx = jax.random.randint(key, (n_boot, n_items), 0, n_items)
    # Multinomial(I, 1/I) item counts: a resample as weights keeps the shapes static.
    weights = jax.vmap(lambda i: jnp.bincount(i, length=n_items).astype(jnp.float64))(idx)
    draws = jax.vmap(stat)(weights)                                   # (B, K)
    est = stat(jnp.ones(n_items))
    a = (1.0 - ci_prob) / 2.0
    lo = jnp.nanquantile(draws, a if alternative == "two-sided" else 1.0 - ci_prob, axis=0)
    hi = jnp.nanquantile(draws, 1.0 - a if alternative == "two-sided" else ci_prob, axis=0)
    if alternative == "greater":
        hi = jnp.full_like(hi, jnp.inf)
    elif alternative == "less":
        lo = jnp.full_like(lo, -jnp.inf)
    # A replicate whose resampled items cancel exactly is a tie at 0 in exact arithmetic,
    # but its computed mean carries a rounding error of either sign, which would decide
    # its side by the order of a reduction (another XLA, another batch shape). Draws
    # within the bound of that error (I terms: I·ε·max|d|, times 4) count as ties on both
    # sides. A true non-zero mean of label differences is at least 1/(R·I), orders of
    # magnitude above the bound, so no real difference is ever counted as a tie.
    tie = 4.0 * n_items * jnp.finfo(jnp.float64).eps * jnp.max(jnp.abs(d0), axis=0)
    n_le = 1.0 + jnp.sum(draws <= tie, axis=0)
    n_ge = 1.0 + jnp.sum(draws >= -tie, axis=0)
    b1 = n_boot + 1.0
    if alternative == "two-sided":
        p = jnp.minimum(1.0, 2.0 * jnp.minimum(n_le, n_ge) / b1)
    elif alternative == "greater":
        p = n_le / b1
    else:
        p = n_ge / b1
    # The independent units are the items judged on both sides. One item resamples to
    # itself (every replicate identical: a zero-width interval and p = 2/(B+1) claimed
    # certainty, issue 35); items that all differ by the same amount (identical
    # conditions: all 0) have nothing to resample either. Then the interval is withheld
    # (NaN, and AuditResult's note says why); with one item the p-value too.
    n_units = o.sum(0)
    spread = jnp.max(jnp.where(obs, d0, -jnp.inf), axis=0) - jnp.min(jnp.where(obs, d0, jnp.inf), axis=0)
    ok = jnp.isfinite(est) & (n_units >= 2)
    shown = ok & (spread > tie)
    return {"estimate": est, "se": jnp.nanstd(draws, axis=0, ddof=1), "lo": jnp.where(shown, lo, jnp.nan),
            "hi": jnp.where(shown, hi, jnp.nan), "p": jnp.where(ok, p, jnp.nan), "draws": draws,
            "n_items": n_units}


def _discordance(x_c, x_ref, both):
    """Per item: b = runs with x_c = 1, x_ref = 0; c = the reverse (judged in both)."""
    bf = both.astype(jnp.float64)
    b = jnp.sum(bf * x_c * (1.0 - x_ref), axis=-1)
    c = jnp.sum(bf * (1.0 - x_c) * x_ref, axis=-1)
    return b, c, bf.sum(-1)


def clustered_mcnemar(x_c, x_ref, both, *, alternative: str = "two-sided"):
    """McNemar test of P(x_c = 1) = P(x_ref = 1) with runs clustered within items.

    Parameters
    ----------
    x_c, x_ref : (I, R) 0/1 float
        Binary outcome (e.g. "labelled bad") of each item-run under the condition and
        under the reference.
    both : (I, R) bool
        Judged under both in that run.

    Returns
    -------
    dict with ``estimate`` (difference in proportions over the paired judgments),
    ``stat`` (χ², 1 df) and ``p``. Durkalski et al. (2003): with item differences
    d_i = b_i − c_i, χ² = (Σ d_i)² / Σ d_i²; with one run per item d_i² = b_i + c_i and
    this is McNemar's (b − c)² / (b + c).
    """
    b, c, n = _discordance(x_c, x_ref, both)
    d = b - c
    num, den = jnp.sum(d), jnp.sum(d * d)
    z = jnp.where(den > 0, num / jnp.sqrt(jnp.where(den > 0, den, 1.0)), 0.0)
    total = jnp.sum(n)
    est = jnp.where(total > 0, num / jnp.where(total > 0, total, 1.0), jnp.nan)
    return {"estimate": est, "stat": z * z, "p": normal_p(z, alternative)}


def binom_cdf_half(k, n):
    """P(X ≤ k) for X ~ Binomial(n, ½), k and n float arrays of whole numbers."""
    k = jnp.asarray(k, jnp.float64)
    n = jnp.asarray(n, jnp.float64)
    inside = (k >= 0) & (k < n)
    val = betainc(jnp.where(inside, n - k, 1.0), jnp.where(inside, k + 1.0, 1.0), 0.5)
    return jnp.where(k >= n, 1.0, jnp.where(k < 0, 0.0, val))


def sign_test(x_c, x_ref, both, *, alternative: str = "two-sided"):
    """Exact sign test on item differences d_i = Σ_r (x_c − x_ref) over paired runs.

    Exact under H0 that the two conditions are exchangeable within each item (then each
    non-zero d_i is positive with probability ½, independently across items). With one
    run per item it is the exact (binomial) McNemar test.

    Returns dict with ``estimate`` (difference in proportions), ``n_pos``, ``n_neg``, ``p``.
    """
    b, c, n = _discordance(x_c, x_ref, both)
    d = b - c
    n_pos = jnp.sum(d > 0).astype(jnp.float64)
    n_neg = jnp.sum(d < 0).astype(jnp.float64)
    m = n_pos + n_neg
    if alternative == "two-sided":
        p = jnp.minimum(1.0, 2.0 * binom_cdf_half(jnp.minimum(n_pos, n_neg), m))
    elif alternative == "greater":
        p = binom_cdf_half(n_neg, m)  # P(X ≥ n_pos) = P(X ≤ n_neg) by symmetry
    else:
        p = binom_cdf_half(n_pos, m)
    total = jnp.sum(n)
    est = jnp.where(total > 0, jnp.sum(d) / jnp.where(total > 0, total, 1.0), jnp.nan)
    return {"estimate": est, "n_pos": n_pos, "n_neg": n_neg, "p": jnp.where(m > 0, p, 1.0)}
