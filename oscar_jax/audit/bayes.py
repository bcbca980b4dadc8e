"""Bayesian attribute-effect models for audits (NumPyro, NUTS).

Labels — a cumulative-logit (ordinal logistic) model with item effects, condition
effects and an item × condition interaction:

    P(y_icr ≤ j | α, δ, u) = σ(κ_j − α_i − δ_c − u_ic),   j = 0 … M−2 (0 = least favourable)
    α_i ~ N(0, σ_item²),  u_ic ~ N(0, σ_inter²),  δ_ref = 0,  δ_c ~ N(0, s_δ²)

so δ_c is condition c's effect on the log-odds of a *more favourable* label relative to
the reference (δ_c > 0: c is judged more favourably). Probabilities — the same on the
logit scale, a Gaussian hierarchical model for x = logit(p):

    x_icr = μ + α_i + δ_c + u_ic + ε_icr,   ε ~ N(0, σ_noise²).

u_ic repeats in every run of (i, c); leaving it out would treat ten runs of one item as
ten independent items and make the intervals far too narrow whenever the judge reacts
idiosyncratically to a condition. For labels it is sampled (non-centred, I·C standard
normals; fixed-node Gauss–Hermite quadrature was tried and is not accurate enough for
ten runs per cell); for the Gaussian model it is integrated out exactly. With one run
per (item, condition) u is not identified and is left out (``interaction="auto"``).

The data enter as sufficient statistics: label counts (I, C, M), or per (i, c) the run
count, mean and within-(i, c) sum of squares of x. ``fit_audit_model`` runs NumPyro's
MCMC with ``chain_method="vectorized"``. The models also take a leading batch of A
independent audits (a plate): the calibration study samples all of them in one MCMC run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from numpyro.distributions import constraints
from numpyro.infer import MCMC, NUTS

from .. import _x64  # noqa: F401
from ..convergence import rhat_message, rhat_ok
from ..progress import announce, bar_enabled
from ..validate import OscarInputError, check_choice, check_ci_prob, check_positive_int
from .data import AuditData

__all__ = ["AuditPosterior", "BayesPrior", "fit_audit_model", "logit_model", "model_for", "ordinal_log_probs",
           "ordinal_model", "sufficient_stats", "summarize_draws"]

PROB_EPS = 1e-4  # probabilities are moved into [eps, 1 − eps] before the logit (counted)


@dataclass(frozen=True)
class BayesPrior:
    """Prior scales (weakly informative on the log-odds / logit scale).

    effect_sd: δ_c ~ N(0, effect_sd²); item_sd, inter_sd, noise_sd: half-normal scales
    of σ_item, σ_inter, σ_noise; cut_sd: ordered cutpoints i.i.d. N(0, cut_sd²) restricted
    to the ordered region; intercept_sd: μ ~ N(0, intercept_sd²).
    """

    effect_sd: float = 2.5
    item_sd: float = 2.5
    inter_sd: float = 1.0
    noise_sd: float = 1.0
    cut_sd: float = 5.0
    intercept_sd: float = 5.0


def ordinal_log_probs(eta, cut):
    """log P(y = j | η) for the cumulative logit, (…, M), computed without cancellation.

    P(j) = σ(κ_j − η) − σ(κ_{j−1} − η) = σ(b)·σ(−a)·(1 − e^{a−b}) with a = κ_{j−1} − η,
    b = κ_j − η, so the log is a sum of log-sigmoids and log(−expm1(a − b)), all stable
    in the tails where the plain difference would round to 0.
    """
    z = cut - eta[..., None]                                   # (…, M−1)
    first = jax.nn.log_sigmoid(z[..., :1])
    last = jax.nn.log_sigmoid(-z[..., -1:])
    if z.shape[-1] == 1:
        return jnp.concatenate([first, last], axis=-1)
    a, b = z[..., :-1], z[..., 1:]
    mid = jax.nn.log_sigmoid(b) + jax.nn.log_sigmoid(-a) + jnp.log(-jnp.expm1(a - b))
    return jnp.concatenate([first, mid, last], axis=-1)


def _insert_ref(free, ref: int):
    return jnp.concatenate([free[..., :ref], jnp.zeros(free.shape[:-1] + (1,)), free[..., ref:]], axis=-1)


def _plate(batch: tuple):
    # Leading batch dims = independent audits (the calibration study); the joint posterior
    # is the product of the audits' posteriors, so each audit's marginal is its own posterior.
    if not batch:
        return contextlib.nullcontext()
    if len(batch) != 1:
        raise ValueError(f"at most one batch dimension of audits, got {batch}")
    return numpyro.plate("audits", batch[0], dim=-1)


def ordinal_model(counts, *, ref: int, interaction: bool, prior: BayesPrior = BayesPrior()):
    """NumPyro cumulative-logit model.

    ``counts`` (I, C, M) label counts in code order (0 = least favourable), or (A, I, C, M)
    for A independent audits.
    """
    *batch, n_items, n_cond, m = counts.shape
    batch = tuple(batch)
    with _plate(batch):
        cut = numpyro.sample("cutpoints", dist.ImproperUniform(constraints.ordered_vector, (), event_shape=(m - 1,)))
        numpyro.factor("cutpoints_prior", jnp.sum(dist.Normal(0.0, prior.cut_sd).log_prob(cut), axis=-1))
        sigma_item = numpyro.sample("sigma_item", dist.HalfNormal(prior.item_sd))
        delta_free = numpyro.sample("delta_free", dist.Normal(0.0, prior.effect_sd).expand([n_cond - 1]).to_event(1))
        alpha = numpyro.sample("alpha", dist.Normal(jnp.zeros(batch + (n_items,)), sigma_item[..., None]).to_event(1))
        eta = alpha[..., :, None] + _insert_ref(delta_free, ref)[..., None, :]          # (…, I, C)
        if interaction:
            sigma_inter = numpyro.sample("sigma_inter", dist.HalfNormal(prior.inter_sd))
            # Non-centred: a few runs per (item, condition) inform u_ic weakly, so sampling the
            # standardized deviation avoids the funnel between u and σ_inter.
            z_inter = numpyro.sample("z_inter", dist.Normal(0.0, 1.0).expand([n_items, n_cond]).to_event(2))
            eta = eta + sigma_inter[..., None, None] * z_inter
        lp = ordinal_log_probs(eta, cut[..., None, None, :])
        numpyro.factor("loglik", jnp.sum(counts * lp, axis=(-3, -2, -1)))


def logit_model(n, xbar, ss, *, ref: int, interaction: bool, prior: BayesPrior = BayesPrior()):
    """NumPyro Gaussian model for logit(p); per (i, c) run count ``n``, mean ``xbar``, SS ``ss``.

    Each argument is (I, C), or (A, I, C) for A independent audits.
    """
    *batch, n_items, n_cond = n.shape
    batch = tuple(batch)
    with _plate(batch):
        mu = numpyro.sample("mu", dist.Normal(0.0, prior.intercept_sd))
        sigma_item = numpyro.sample("sigma_item", dist.HalfNormal(prior.item_sd))
        sigma_noise = numpyro.sample("sigma_noise", dist.HalfNormal(prior.noise_sd))
        delta_free = numpyro.sample("delta_free", dist.Normal(0.0, prior.effect_sd).expand([n_cond - 1]).to_event(1))
        alpha = numpyro.sample("alpha", dist.Normal(jnp.zeros(batch + (n_items,)), sigma_item[..., None]).to_event(1))
        sn = sigma_noise[..., None, None]
        var_run = sn ** 2 / jnp.maximum(n, 1.0)
        if interaction:
            sigma_inter = numpyro.sample("sigma_inter", dist.HalfNormal(prior.inter_sd))
            var_mean = sigma_inter[..., None, None] ** 2 + var_run
        else:
            var_mean = var_run
        mean = mu[..., None, None] + alpha[..., :, None] + _insert_ref(delta_free, ref)[..., None, :]
        # Exact marginal over u_ic: the run mean carries σ_inter² + σ_noise²/n, the within-(i, c)
        # spread carries σ_noise² alone (n − 1 degrees of freedom).
        ll_mean = dist.Normal(mean, jnp.sqrt(var_mean)).log_prob(xbar)
        ll_within = -(n - 1.0) * jnp.log(sn) - ss / (2.0 * sn ** 2)
        numpyro.factor("loglik", jnp.sum(jnp.where(n > 0, ll_mean + ll_within, 0.0), axis=(-2, -1)))


def sufficient_stats(values, mask, *, kind: str, n_labels: int, eps: float = PROB_EPS):
    """Model arguments from (I, C, R) arrays (pure; vmaps over audits).

    Labels: ``(counts,)`` with counts (I, C, M). Probabilities: ``(n, xbar, ss)`` of
    x = logit(clip(p, eps, 1 − eps)), each (I, C).
    """
    if kind == "label":
        onehot = jax.nn.one_hot(jnp.where(mask, values, -1), n_labels, dtype=jnp.float64)
        return (jnp.sum(onehot, axis=2),)
    x = jax.scipy.special.logit(jnp.clip(jnp.where(mask, values, 0.5), eps, 1.0 - eps))
    m = mask.astype(jnp.float64)
    n = m.sum(-1)
    xbar = (x * m).sum(-1) / jnp.maximum(n, 1.0)
    ss = (((x - xbar[..., None]) ** 2) * m).sum(-1)
    return n, xbar, ss


def model_for(kind: str):
    return ordinal_model if kind == "label" else logit_model


# ---------------------------------------------------------------------------------------
# User-facing fit
# ---------------------------------------------------------------------------------------

def summarize_draws(delta, ci_prob: float = 0.95) -> dict[str, np.ndarray]:
    """Posterior summaries of (chains, draws, K) effect draws: mean, sd, equal-tailed interval,
    P(δ > 0), the two-sided tail area 2·min(P(δ > 0), P(δ < 0)), split R̂ and bulk ESS.

    The tail area is below 1 − ci_prob when the equal-tailed interval excludes 0 (up to
    the discreteness of the draws at the boundary), so "reject" means the same thing for
    the Bayesian rows as for the tests.
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
    contrast "others (mean)"; ``diagnostics`` holds divergences and the worst R̂/ESS.
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

    @property
    def scale(self) -> str:
        return "log-odds of a more favourable label" if self.kind == "label" else "logit pRel"


def fit_audit_model(data: AuditData, reference: str, *, others=None, seed: int = 0, num_warmup: int = 500,
                    num_samples: int = 500, num_chains: int = 4, ci_prob: float = 0.95, interaction="auto",
                    prior: BayesPrior = BayesPrior(), progress_bar: bool | None = None,
                    target_accept: float = 0.8, chain_method: str = "vectorized") -> AuditPosterior:
    """Fit the ordinal (labels) or logit-Gaussian (probabilities) effect model by NUTS.

    Parameters
    ----------
    data
        The audit.
    reference
        Condition with δ = 0 (exact name or unique substring).
    others
        Condition names pooled in the focal contrast (default: all but the reference).
    seed
        Seed of the sampler (explicit; results are deterministic given it).
    num_warmup, num_samples, num_chains
        NUTS settings; chains run vectorized on one device.
    interaction
        ``"auto"`` (include u_ic when some (item, condition) has ≥ 2 runs), True or False.
    chain_method
        NumPyro's ``"vectorized"`` (default; all chains in one vmapped sampler, the fast
        choice on accelerators) or ``"sequential"`` (on CPU about 4× cheaper per
        chain-step for small models, see :func:`~oscar_jax.audit.bayes_calibration`).

    Returns
    -------
    AuditPosterior
    """
    ci_prob = check_ci_prob(ci_prob)
    num_warmup = check_positive_int("num_warmup", num_warmup)
    num_samples = check_positive_int("num_samples", num_samples)
    num_chains = check_positive_int("num_chains", num_chains)
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
    model = partial(model_for(data.kind), ref=ref, interaction=bool(interaction), prior=prior)
    mcmc = MCMC(NUTS(model, target_accept_prob=target_accept), num_warmup=num_warmup, num_samples=num_samples,
                num_chains=num_chains, chain_method=check_choice("chain_method", chain_method,
                                                                  ("vectorized", "sequential")),
                progress_bar=bar_enabled(progress_bar))
    if progress_bar is None and not bar_enabled(None):  # no bar off a terminal: say what is running
        announce(f"audit: sampling the Bayesian {data.kind} model, NUTS {num_chains} chains × ({num_warmup} warm-up "
                 f"+ {num_samples} draws); this can take minutes")
    mcmc.run(jax.random.PRNGKey(seed), *args, extra_fields=("diverging",))
    samples = mcmc.get_samples(group_by_chain=True)
    delta = np.asarray(_insert_ref(jnp.asarray(samples["delta_free"]), ref))   # (chains, draws, C)
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
    div = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    hyper = {}
    for site in ("sigma_item", "sigma_inter", "sigma_noise", "mu", "cutpoints"):
        if site in samples:
            v = np.asarray(samples[site]).reshape(num_chains * num_samples, -1)
            hyper[site] = {"mean": v.mean(0).tolist(), "lo": np.quantile(v, (1 - ci_prob) / 2, 0).tolist(),
                           "hi": np.quantile(v, 1 - (1 - ci_prob) / 2, 0).tolist()}
    diagnostics = {"divergences": int(div.sum()), "n_draws": int(num_chains * num_samples),
                   "max_r_hat": float(np.nanmax(summ["r_hat"])) if num_chains >= 2 else None,
                   "min_ess": float(np.nanmin(summ["ess"])) if num_chains >= 2 else None,
                   "num_warmup": num_warmup, "num_chains": num_chains}
    if diagnostics["divergences"]:
        notes.append(f"{diagnostics['divergences']} divergent transitions; consider more warm-up")
    if not rhat_ok(diagnostics["max_r_hat"]):
        notes.append(rhat_message(diagnostics["max_r_hat"]))
    return AuditPosterior(kind=data.kind, conditions=tuple(names), reference=names[ref], delta=delta, summary=table,
                       hyper=hyper, diagnostics=diagnostics, interaction=bool(interaction), ci_prob=ci_prob,
                       notes=tuple(notes))
