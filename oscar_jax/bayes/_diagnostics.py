"""Sampling diagnostics of a posterior: rank-normalized R-hat, bulk/tail ESS, divergences, E-BFMI."""

from __future__ import annotations

import arviz_stats
import numpy as np
import xarray as xr

from ..infer.posterior import RHAT_MAX, rhat_message
from ._sampler import NutsSettings

__all__ = ["BFMI_MIN", "ESS_PER_CHAIN_MIN", "RHAT_MAX", "compute_diagnostics"]

# Thresholds of Vehtari et al. (2021, "Rank-normalization, folding, and localization"):
# rank-normalized split R-hat below 1.01 and bulk/tail ESS of at least 100 per chain;
# E-BFMI below 0.3 signals that the momentum resampling explores the energy poorly.
ESS_PER_CHAIN_MIN = 100
BFMI_MIN = 0.3
TAIL_PROB = (0.05, 0.95)  # quantiles of the tail ESS (ArviZ's default)

SAMPLED = ("theta", "sigma_prompt", "z_prompt")


def compute_diagnostics(idata: xr.DataTree, settings: NutsSettings) -> dict:
    """R-hat, ESS, divergences and E-BFMI over the *sampled* parameters.

    Derived quantities (s, q, κ, …) are functions of the sampled θ (and σ_u); fixed
    entries such as γ of the reference judge are constants, for which R-hat is undefined,
    so the diagnostics are taken over ``theta``, ``sigma_prompt`` and ``z_prompt``.
    """
    names = [n for n in SAMPLED if n in idata.posterior.data_vars]
    rhat = arviz_stats.rhat(idata, var_names=names)
    ess_bulk = arviz_stats.ess(idata, var_names=names, method="bulk")
    ess_tail = arviz_stats.ess(idata, var_names=names, method="tail", prob=TAIL_PROB)

    def extreme(ds, fn):
        best_val, best_name = None, None
        for name in names:
            da = ds[name]
            vals = np.atleast_1d(da.values)
            # R-hat is undefined (NaN) with one chain: nothing to rank.
            if vals.size == 0 or not np.any(np.isfinite(vals)):
                continue
            i = int(fn(vals))
            label = name
            if da.ndim:
                dim = da.dims[0]
                label = f"{name}[{da[dim].values[i]}]"
            v = float(vals[i])
            if best_val is None or (fn is np.nanargmax and v > best_val) or (fn is np.nanargmin and v < best_val):
                best_val, best_name = v, label
        return best_val, best_name

    max_rhat, worst_rhat = extreme(rhat, np.nanargmax)
    min_bulk, worst_bulk = extreme(ess_bulk, np.nanargmin)
    min_tail, worst_tail = extreme(ess_tail, np.nanargmin)
    stats = idata.sample_stats
    divergences = int(stats["diverging"].values.sum())
    depth_hits = int((stats["tree_depth"].values >= settings.max_tree_depth).sum())
    bfmi = arviz_stats.bfmi(idata)
    bfmi = np.asarray(bfmi["energy"].values if isinstance(bfmi, (xr.Dataset, xr.DataTree)) else bfmi).ravel()
    n_total = settings.chains * settings.draws
    ess_min_required = ESS_PER_CHAIN_MIN * settings.chains
    messages = []
    if settings.chains > 1 and max_rhat is not None and not max_rhat < RHAT_MAX:
        messages.append(rhat_message(max_rhat, worst_rhat))
    min_ess = min((v for v in (min_bulk, min_tail) if v is not None), default=None)
    if min_ess is not None and min_ess < ess_min_required:
        which = worst_bulk if (min_bulk is not None and min_bulk <= (min_tail or np.inf)) else worst_tail
        messages.append(f"effective sample size {min_ess:.0f} < {ess_min_required} ({ESS_PER_CHAIN_MIN} per chain; {which}): "
                        "intervals are Monte Carlo-noisy; run more draws")
    if divergences:
        messages.append(f"{divergences} divergent transition(s) of {n_total}: the posterior may be biased; "
                        "raise target_accept (e.g. 0.99) or check for near-separated data")
    if bfmi.size and np.nanmin(bfmi) < BFMI_MIN:
        messages.append(f"E-BFMI {np.nanmin(bfmi):.2f} < {BFMI_MIN}: the energy is poorly explored")
    return {
        "max_rhat": max_rhat, "worst_rhat": worst_rhat,
        "min_ess": min_ess, "min_ess_bulk": min_bulk, "worst_ess_bulk": worst_bulk,
        "min_ess_tail": min_tail, "worst_ess_tail": worst_tail,
        "divergences": divergences, "tree_depth_hits": depth_hits,
        "min_bfmi": float(np.nanmin(bfmi)) if bfmi.size else None,
        "chains": settings.chains, "warmup": settings.warmup, "draws": settings.draws,
        "mean_step_size": float(np.mean(stats["step_size"].values)),
        "mean_leapfrog_steps": float(np.mean(stats["n_steps"].values)),
        "ok": not messages, "messages": messages,
    }
