"""Every frequentist audit test on one masked audit, as one pure (vmappable) function.

For each metric (``bad_dr``, ``fair_dr`` for labels; ``mean_prel`` for probabilities)
and each contrast k — condition c minus the reference (k = c), and the paper's focal
contrast "mean of the other conditions minus the reference" (k = C) — it returns

* ``ttest_runs``: the paper's two-sample t-test across runs (per-run rates);
* ``bootstrap_items``: paired item-level difference, item-cluster bootstrap interval;
* ``mcnemar_clustered`` and ``sign_exact``: paired tests of two conditions on the
  binary outcome (labels only; NaN for the focal contrast, which is not binary).

All as dicts of (C+1,) arrays ``estimate, lo, hi, p`` (NaN where undefined, e.g. the
reference against itself). :func:`consistency_tests` adds the consistency measure
against an anchor condition, compared with the duplicated-baseline consistency.
The same function serves a user's audit and the calibration study's vmapped replicates.
"""

from __future__ import annotations

from ..runtime.lazy_jax import jax, jnp
from .measures import agreement, item_means, label_indicators, masked_mean, run_rates
from .stats import clustered_mcnemar, item_bootstrap, sign_test, ttest_ind

__all__ = ["METRICS", "METRIC_LABEL", "PERCENT_METRICS", "consistency_tests", "consistency_tests_jit", "frequentist_tests",
           "frequentist_tests_jit", "metric_arrays"]

METRICS = {"label": ("bad_dr", "fair_dr"), "prob": ("mean_prel",)}
# How tables and plots name each metric; shares are shown in percent (effects in points).
METRIC_LABEL = {"bad_dr": "Bad DR", "fair_dr": "Fair DR", "mean_prel": "pRel", "consistency": "Consistency",
                "log_odds_favourable": "log-odds (more favourable)", "logit_prel": "logit pRel"}
PERCENT_METRICS = ("bad_dr", "fair_dr", "mean_prel", "consistency")
BINARY = ("bad_dr", "fair_dr")


def metric_arrays(values, kind: str, n_labels: int) -> dict[str, jax.Array]:
    """(I, C, R) float arrays whose means are the metrics (indicators or probabilities)."""
    if kind == "prob":
        return {"mean_prel": jnp.asarray(values, jnp.float64)}
    ind = label_indicators(values, n_labels)
    return {f"{k}_dr": v for k, v in ind.items()}


def _contrast_runs(rates, run_mask, others):
    """(C+1, R) per-run values: each condition, then the mean of ``others`` per run."""
    om = jnp.zeros(rates.shape[0], bool).at[jnp.asarray(others)].set(True)[:, None] & run_mask
    focal = masked_mean(rates, om, axis=0)
    focal_mask = jnp.any(om, axis=0)
    return jnp.vstack([rates, focal[None]]), jnp.vstack([run_mask, focal_mask[None]])


def _contrast_items(means, obs, ref, others):
    """(I, C+1) paired item differences vs the reference, and their observed flags."""
    sel = jnp.zeros(means.shape[1], bool).at[jnp.asarray(others)].set(True)[None, :] & obs
    focal = masked_mean(means, sel, axis=1)
    d = jnp.column_stack([means - means[:, [ref]], focal - means[:, ref]])
    o = jnp.column_stack([obs & obs[:, [ref]], jnp.any(sel, axis=1) & obs[:, ref]])
    return d, o


def frequentist_tests(key, values, mask, *, kind: str, n_labels: int, ref: int, others: tuple[int, ...],
                      n_boot: int = 2000, alternative: str = "two-sided", ci_prob: float = 0.95,
                      equal_var: bool = True) -> dict:
    """All run-level and item-paired tests of one audit.

    Parameters
    ----------
    key
        PRNG key of the bootstrap.
    values, mask : (I, C, R)
        Label codes (0 = least favourable) or probabilities, and the observed mask.
    kind, n_labels
        ``"label"`` / ``"prob"`` and M (static).
    ref
        Reference condition index (static).
    others
        Conditions pooled in the focal contrast (static tuple; the paper: every
        substituted condition except the reference, not the original).
    n_boot, alternative, ci_prob, equal_var
        Bootstrap size (static); H1 for (condition − reference); interval level;
        pooled or Welch t-test.

    Returns
    -------
    dict metric → method → {"estimate", "lo", "hi", "p"} with (C+1,) arrays.
    """
    metrics = metric_arrays(values, kind, n_labels)
    names = tuple(metrics)
    n_c = mask.shape[1]
    width = n_c + 1
    run_mask = jnp.any(mask, axis=0)                             # (C, R)
    both = mask & mask[:, [ref], :]                              # (I, C, R)

    # One trace per statistic, vmapped over metrics: compile time stays flat in M.
    def one_metric(x):
        rates = run_rates(x, mask)                              # (C, R)
        runs, rmask = _contrast_runs(rates, run_mask, others)
        tt = ttest_ind(runs, rmask, jnp.broadcast_to(rates[ref], runs.shape),
                       jnp.broadcast_to(run_mask[ref], runs.shape), alternative=alternative,
                       equal_var=equal_var, ci_prob=ci_prob)
        means, obs = item_means(x, mask)
        d, o = _contrast_items(means, obs, ref, others)
        return tt, d, o

    stacked = jnp.stack([metrics[k] for k in names])             # (Mt, I, C, R)
    tt, d, o = jax.vmap(one_metric)(stacked)
    # One set of item weights for every metric and contrast: replicates are joint.
    boot = item_bootstrap(key, jnp.hstack(list(d)), jnp.hstack(list(o)), n_boot, ci_prob=ci_prob,
                          alternative=alternative)
    out: dict = {}
    for j, name in enumerate(names):
        sl = slice(j * width, (j + 1) * width)
        out[name] = {"ttest_runs": {"estimate": tt.diff[j], "lo": tt.lo[j], "hi": tt.hi[j], "p": tt.p[j]},
                     "bootstrap_items": {k: boot[k][sl] for k in ("estimate", "lo", "hi", "p")}}
    binary = tuple(n for n in names if n in BINARY)
    if binary:
        xb = jnp.stack([metrics[k] for k in binary])             # (Mb, I, C, R)

        def pair(x, c):
            mc = clustered_mcnemar(x[:, c, :], x[:, ref, :], both[:, c, :], alternative=alternative)
            st = sign_test(x[:, c, :], x[:, ref, :], both[:, c, :], alternative=alternative)
            return mc["estimate"], mc["p"], st["p"]

        est, p_mc, p_sign = jax.vmap(jax.vmap(pair, in_axes=(None, 0)), in_axes=(0, None))(xb, jnp.arange(n_c))
        nan = jnp.full(width, jnp.nan)
        for j, name in enumerate(binary):
            e = jnp.append(est[j], jnp.nan)
            out[name]["mcnemar_clustered"] = {"estimate": e, "lo": nan, "hi": nan, "p": jnp.append(p_mc[j], jnp.nan)}
            out[name]["sign_exact"] = {"estimate": e, "lo": nan, "hi": nan, "p": jnp.append(p_sign[j], jnp.nan)}
    not_self = jnp.arange(width) != ref
    for by_method in out.values():
        for method, res in by_method.items():
            by_method[method] = {k: jnp.where(not_self, v, jnp.nan) for k, v in res.items()}
    return out


def consistency_tests(key, codes, mask, *, anchor: int, duplicate: int | None, n_boot: int = 2000,
                      alternative: str = "two-sided", ci_prob: float = 0.95, equal_var: bool = True) -> dict:
    """Consistency of every condition with ``anchor``, and tests against the duplicate.

    Consistency of condition c in run r = share of items judged under c and the anchor
    in run r that got the same label. For the anchor itself it is its agreement with
    the duplicated baseline (the judge's own run-to-run noise), the reference level.

    Returns
    -------
    dict with ``value`` (C,) mean over runs, ``runs`` (C, R), and when a duplicate is
    given ``ttest_runs`` / ``bootstrap_items`` dicts of (C,) arrays for
    consistency(c) − consistency(duplicate) (NaN for the anchor and the duplicate).
    """
    n_c = mask.shape[1]

    def per_cond(c):
        agree, both = agreement(codes, mask, c, anchor)
        return masked_mean(agree, both, axis=0), jnp.any(both, axis=0), masked_mean(agree, both, axis=1), \
            jnp.any(both, axis=1)

    base = anchor if duplicate is None else duplicate
    conds = jnp.arange(n_c).at[anchor].set(base)   # the anchor's own row: agreement with the duplicate
    runs, rmask, item_rate, item_obs = jax.vmap(per_cond)(conds)   # (C, R), (C, R), (C, I), (C, I)
    if duplicate is None:
        runs = runs.at[anchor].set(jnp.nan)
        rmask = rmask.at[anchor].set(False)
    value = jnp.nanmean(jnp.where(rmask, runs, jnp.nan), axis=1)
    out = {"value": value, "runs": jnp.where(rmask, runs, jnp.nan)}
    if duplicate is None:
        return out
    tt = ttest_ind(runs, rmask, jnp.broadcast_to(runs[duplicate], runs.shape),
                   jnp.broadcast_to(rmask[duplicate], runs.shape), alternative=alternative,
                   equal_var=equal_var, ci_prob=ci_prob)
    d = (item_rate - item_rate[duplicate]).T
    o = (item_obs & item_obs[duplicate]).T
    boot = item_bootstrap(key, d, o, n_boot, ci_prob=ci_prob, alternative=alternative)
    keep = (jnp.arange(n_c) != anchor) & (jnp.arange(n_c) != duplicate)
    out["ttest_runs"] = {k: jnp.where(keep, v, jnp.nan) for k, v in
                         {"estimate": tt.diff, "lo": tt.lo, "hi": tt.hi, "p": tt.p}.items()}
    out["bootstrap_items"] = {k: jnp.where(keep, boot[k], jnp.nan) for k in ("estimate", "lo", "hi", "p")}
    return out


# Jitted at the API edge (``audit``); the calibration study jits its own vmapped batch.
frequentist_tests_jit = jax.jit(frequentist_tests, static_argnames=(
    "kind", "n_labels", "ref", "others", "n_boot", "alternative", "ci_prob", "equal_var"))
consistency_tests_jit = jax.jit(consistency_tests, static_argnames=(
    "anchor", "duplicate", "n_boot", "alternative", "ci_prob", "equal_var"))
