"""What the audit's Bayesian fits share: the set-up of the model from an audit, the
posterior summaries of the condition effects and the :class:`AuditPosterior` they
return, whichever inference (NUTS in :mod:`.bayes`, SVI in :mod:`.bayes_svi`) drew them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..runtime.lazy_jax import jnp
from ..runtime.validate import OscarInputError
from .bayes_models import PROB_EPS, sufficient_stats
from .data import AuditData

__all__ = ["AuditPosterior", "ModelSetup", "posterior_from_draws", "setup_model", "summarize_draws"]


def summarize_draws(delta, ci_prob: float = 0.95) -> dict[str, np.ndarray]:
    """Posterior summaries of (chains, draws, K) effect draws: mean, sd, equal-tailed interval,
    P(δ > 0), the two-sided tail area 2·min(P(δ > 0), P(δ < 0)), split R̂ and bulk ESS.

    The tail area is below 1 − ci_prob when the equal-tailed interval excludes 0 (up to
    the discreteness of the draws at the boundary), so "reject" means the same thing for
    the Bayesian rows as for the tests. R̂ and ESS need two chains of four draws (NaN
    otherwise, e.g. for the single "chain" of draws from an SVI guide).
    """
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    delta = np.asarray(delta, float)
    flat = delta.reshape(-1, delta.shape[-1])
    a = (1.0 - ci_prob) / 2.0
    p_gt = (flat > 0).mean(0)
    p_lt = (flat < 0).mean(0)
    if delta.shape[0] >= 2 and delta.shape[1] >= 4:
        rhat = np.asarray(split_gelman_rubin(delta))
        ess = np.asarray(effective_sample_size(delta))
    else:
        rhat = np.full(delta.shape[-1], np.nan)
        ess = np.full(delta.shape[-1], np.nan)
    return {"estimate": flat.mean(0), "sd": flat.std(0, ddof=1), "lo": np.quantile(flat, a, axis=0),
            "hi": np.quantile(flat, 1 - a, axis=0), "p_gt_0": p_gt,
            "p": np.minimum(1.0, 2.0 * np.minimum(p_gt, p_lt)), "r_hat": rhat, "ess": ess}


@dataclass(frozen=True, eq=False)
class AuditPosterior:
    """Posterior of the condition effects of one audit.

    ``delta`` (chains, draws, C) has 0 in the reference column; ``summary`` is a tidy
    table (condition, estimate, sd, lo, hi, p_gt_0, p, r_hat, ess) including the focal
    contrast "others (mean)"; ``diagnostics`` holds the method (``"nuts"`` or ``"svi"``)
    and its checks: divergences and the worst R̂/ESS (NUTS), or the ELBO plateau check
    (SVI, whose loss trace is ``elbo``).
    """

    kind: str
    conditions: tuple[str, ...]
    reference: str
    delta: np.ndarray
    summary: pd.DataFrame
    hyper: dict
    diagnostics: dict
    interaction: bool
    ci_prob: float
    notes: tuple[str, ...] = field(default_factory=tuple)
    elbo: np.ndarray | None = None

    @property
    def scale(self) -> str:
        return "log-odds of a more favourable label" if self.kind == "label" else "logit pRel"

    @property
    def method(self) -> str:
        return self.diagnostics.get("method", "nuts")

    def sample_stats(self):
        """The ELBO trace as an xarray Dataset (SVI; None for NUTS), as in ``fit_bayes``'s DataTree."""
        if self.elbo is None:
            return None
        from ..infer.posterior import svi_sample_stats

        return svi_sample_stats(self.elbo)


class ModelSetup(NamedTuple):
    """An audit turned into model arguments: reference index, interaction, sufficient statistics, notes."""

    ref: int
    interaction: bool
    args: tuple
    notes: list


def setup_model(data: AuditData, reference: str, interaction="auto") -> ModelSetup:
    """Resolve the reference and the interaction term, compute the sufficient statistics and
    the notes on the data (clipped probabilities, labels that never occur)."""
    ref = data.condition_index(reference, "reference condition")
    notes = []
    max_runs = int(data.mask.sum(axis=2).max())
    if interaction == "auto":
        interaction = max_runs >= 2
        if not interaction:
            notes.append("one run per (item, condition): the item × condition interaction is not identified "
                         "and is absorbed into the judgment noise")
    elif interaction not in (True, False):
        raise OscarInputError(f"interaction must be 'auto', True or False, got {interaction!r}")
    args = sufficient_stats(jnp.asarray(data.values), jnp.asarray(data.mask), kind=data.kind,
                            n_labels=max(data.n_labels, 2))
    if data.kind == "prob":
        p = data.values[data.mask]
        n_clip = int(np.sum((p < PROB_EPS) | (p > 1 - PROB_EPS)))
        if n_clip:
            notes.append(f"{n_clip} probabilities outside [{PROB_EPS:g}, 1 − {PROB_EPS:g}] moved to that range "
                         "before the logit (Bayesian model only)")
    else:
        seen = np.asarray(args[0]).sum(axis=(0, 1))
        if np.any(seen == 0):
            notes.append(f"label(s) {[data.label_name(j) for j in np.flatnonzero(seen == 0)]} never occur; their "
                         "cutpoints are informed by the prior only")
    return ModelSetup(ref=ref, interaction=bool(interaction), args=args, notes=notes)


def hyper_summary(samples: dict, ci_prob: float) -> dict:
    """Mean and equal-tailed interval of each hyperparameter site present in ``samples``
    (arrays with leading (chains, draws) axes)."""
    out = {}
    for site in ("sigma_item", "sigma_inter", "sigma_noise", "mu", "cutpoints"):
        if site in samples:
            v = np.asarray(samples[site])
            v = v.reshape(v.shape[0] * v.shape[1], -1)
            out[site] = {"mean": v.mean(0).tolist(), "lo": np.quantile(v, (1 - ci_prob) / 2, 0).tolist(),
                         "hi": np.quantile(v, 1 - (1 - ci_prob) / 2, 0).tolist()}
    return out


def posterior_from_draws(data: AuditData, setup: ModelSetup, delta, hyper_samples: dict, *, others, ci_prob: float,
                         diagnostics: dict, notes: list, elbo=None) -> AuditPosterior:
    """The :class:`AuditPosterior` of (chains, draws, C) effect draws ``delta`` (0 at the reference)."""
    delta = np.asarray(delta, float)
    ref = setup.ref
    names = list(data.conditions)
    pool = [c for c in range(len(names)) if c != ref] if others is None else \
        [data.condition_index(o) for o in others]
    focal = delta[..., pool].mean(-1, keepdims=True)
    free = [c for c in range(len(names)) if c != ref]
    # δ_ref ≡ 0 has no spread; leave it out of the diagnostics (its R̂ is 0/0).
    summ = summarize_draws(np.concatenate([delta[..., free], focal], axis=-1), ci_prob)
    rows = names + ["others (mean)"]
    order = free + [len(names)]
    table = pd.DataFrame({"condition": rows})
    for k, v in summ.items():
        col = np.full(len(rows), np.nan)
        col[order] = v
        table[k] = col
    diagnostics = dict(diagnostics)
    if delta.shape[0] >= 2:
        diagnostics.update(max_r_hat=float(np.nanmax(summ["r_hat"])), min_ess=float(np.nanmin(summ["ess"])))
    else:
        diagnostics.update(max_r_hat=None, min_ess=None)
    return AuditPosterior(kind=data.kind, conditions=tuple(names), reference=names[ref], delta=delta, summary=table,
                          hyper=hyper_summary(hyper_samples, ci_prob), diagnostics=diagnostics,
                          interaction=setup.interaction, ci_prob=ci_prob, notes=tuple(notes),
                          elbo=None if elbo is None else np.asarray(elbo, float))
