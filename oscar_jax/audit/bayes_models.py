"""The audit's Bayesian effect models in NumPyro (their joint densities; the fits are in
:mod:`.bayes` for NUTS and :mod:`.bayes_svi` for SVI).

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
count, mean and within-(i, c) sum of squares of x. The models also take a leading batch
of A independent audits (a plate): the calibration study samples all of them in one
MCMC run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from ..runtime.lazy_jax import jax, jnp


__all__ = ["PROB_EPS", "BayesPrior", "centred_effects", "insert_ref", "logit_model", "logit_model_centred", "model_for",
           "ordinal_log_probs", "ordinal_model", "ordinal_model_centred", "sufficient_stats"]

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


def insert_ref(free, ref: int):
    """(…, C) effects with δ_ref = 0 put back into the (…, C − 1) free ones."""
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
        eta = alpha[..., :, None] + insert_ref(delta_free, ref)[..., None, :]          # (…, I, C)
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
        sigma_inter = numpyro.sample("sigma_inter", dist.HalfNormal(prior.inter_sd)) if interaction else None
        mean = mu[..., None, None] + alpha[..., :, None] + insert_ref(delta_free, ref)[..., None, :]
        numpyro.factor("loglik", _gaussian_loglik(mean, sigma_noise, sigma_inter, n, xbar, ss))


def _gaussian_loglik(mean, sigma_noise, sigma_inter, n, xbar, ss):
    """Log likelihood of the logit model, summed over (i, c), from the cell statistics.

    Exact marginal over u_ic: the run mean carries σ_inter² + σ_noise²/n, the within-(i, c)
    spread carries σ_noise² alone (n − 1 degrees of freedom).
    """
    sn = sigma_noise[..., None, None]
    var_mean = sn ** 2 / jnp.maximum(n, 1.0)
    if sigma_inter is not None:
        var_mean = sigma_inter[..., None, None] ** 2 + var_mean
    ll_mean = dist.Normal(mean, jnp.sqrt(var_mean)).log_prob(xbar)
    ll_within = -(n - 1.0) * jnp.log(sn) - ss / (2.0 * sn ** 2)
    return jnp.sum(jnp.where(n > 0, ll_mean + ll_within, 0.0), axis=(-2, -1))


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
# The same models in centred coordinates (for a mean-field variational fit)
# ---------------------------------------------------------------------------------------
#
# In the coordinates above, δ_c is strongly correlated a posteriori with sums over many
# local terms: a common shift of all α_i trades against all δ_c, the mean over items of
# the interaction u_·c trades against δ_c (it is what makes δ uncertain beyond the run
# noise: the items at hand react to brand c a little differently from the population),
# and the mean over conditions u_i· trades against α_i. A mean-field Gaussian ignores
# all three, so its δ intervals come out far too narrow. The centred coordinates make
# the likelihood depend only on
#
#     η_ic = λ_i + (g_c − ḡ) + σ_inter dc(z)_ic
#
# (item levels λ, realized condition contrasts g with g_ref = 0, the doubly centred
# cell deviations dc(z) = z − z̄_i· − z̄_·c + z̄), and carry the rest of the interaction
# in extra standard normals: w_c (C) and v_i (I), with u_ic = σ_inter (dc(z)_ic +
# (v_i − v̄)/√C + w_c/√I), again I·C independent N(0, σ_inter²) terms. Then
#
#     δ_c = g_c − σ_inter (w_c − w_ref)/√I,
#     α_i = λ_i − ḡ − σ_inter w_ref/√I − σ_inter (v_i − v̄)/√C,
#
# a shift of unit Jacobian, so the prior of (α, δ) is evaluated at those values and the
# joint density is the original one times that of the I + C unused directions (the row,
# column and grand means of z and v̄; tests/test_audit_svi.py checks the identity). For
# probabilities (u integrated out) λ also absorbs μ: α_i = λ_i − μ − ḡ and δ = g.

def centred_effects(contrast, ref: int, n_items: int, sigma_inter=None, z_mean=None):
    """(…, C) effects δ (0 at the reference) from the centred coordinates (``z_mean`` None:
    no sampled interaction, δ = g)."""
    if z_mean is None:
        return insert_ref(contrast, ref)
    shift = jnp.asarray(sigma_inter)[..., None] * z_mean / jnp.sqrt(float(n_items))
    return insert_ref(contrast - (jnp.delete(shift, ref, axis=-1) - shift[..., ref:ref + 1]), ref)


def _centred_priors(contrast, level, offset, delta, ref: int, sigma_item, prior: BayesPrior):
    numpyro.factor("delta_prior", jnp.sum(dist.Normal(0.0, prior.effect_sd).log_prob(jnp.delete(delta, ref))))
    numpyro.factor("alpha_prior", jnp.sum(dist.Normal(0.0, sigma_item).log_prob(level - offset)))


def ordinal_model_centred(counts, *, ref: int, interaction: bool, prior: BayesPrior = BayesPrior()):
    """:func:`ordinal_model` (one audit, counts (I, C, M)) in the centred coordinates."""
    n_items, n_cond, m = counts.shape
    cut = numpyro.sample("cutpoints", dist.ImproperUniform(constraints.ordered_vector, (), event_shape=(m - 1,)))
    numpyro.factor("cutpoints_prior", jnp.sum(dist.Normal(0.0, prior.cut_sd).log_prob(cut), axis=-1))
    sigma_item = numpyro.sample("sigma_item", dist.HalfNormal(prior.item_sd))
    contrast = numpyro.sample("contrast", dist.ImproperUniform(constraints.real, (), event_shape=(n_cond - 1,)))
    level = numpyro.sample("item_level", dist.ImproperUniform(constraints.real, (), event_shape=(n_items,)))
    g = insert_ref(contrast, ref)
    eta = level[:, None] + (g - g.mean())[None, :]
    if interaction:
        sigma_inter = numpyro.sample("sigma_inter", dist.HalfNormal(prior.inter_sd))
        z_cell = numpyro.sample("z_cell", dist.Normal(0.0, 1.0).expand([n_items, n_cond]).to_event(2))
        z_mean = numpyro.sample("z_mean", dist.Normal(0.0, 1.0).expand([n_cond]).to_event(1))
        z_item = numpyro.sample("z_item", dist.Normal(0.0, 1.0).expand([n_items]).to_event(1))
        dc = z_cell - z_cell.mean(0) - z_cell.mean(1, keepdims=True) + z_cell.mean()
        eta = eta + sigma_inter * dc
        delta = centred_effects(contrast, ref, n_items, sigma_inter, z_mean)
        offset = (g.mean() + sigma_inter * z_mean[ref] / jnp.sqrt(float(n_items))
                  + sigma_inter * (z_item - z_item.mean()) / jnp.sqrt(float(n_cond)))
    else:
        delta, offset = g, g.mean()
    _centred_priors(contrast, level, offset, delta, ref, sigma_item, prior)
    numpyro.factor("loglik", jnp.sum(counts * ordinal_log_probs(eta, cut)))


def logit_model_centred(n, xbar, ss, *, ref: int, interaction: bool, prior: BayesPrior = BayesPrior()):
    """:func:`logit_model` (one audit, arguments (I, C)) in the centred coordinates."""
    n_items, n_cond = n.shape
    mu = numpyro.sample("mu", dist.Normal(0.0, prior.intercept_sd))
    sigma_item = numpyro.sample("sigma_item", dist.HalfNormal(prior.item_sd))
    sigma_noise = numpyro.sample("sigma_noise", dist.HalfNormal(prior.noise_sd))
    contrast = numpyro.sample("contrast", dist.ImproperUniform(constraints.real, (), event_shape=(n_cond - 1,)))
    level = numpyro.sample("item_level", dist.ImproperUniform(constraints.real, (), event_shape=(n_items,)))
    g = insert_ref(contrast, ref)
    _centred_priors(contrast, level, mu + g.mean(), g, ref, sigma_item, prior)
    sigma_inter = numpyro.sample("sigma_inter", dist.HalfNormal(prior.inter_sd)) if interaction else None
    mean = level[:, None] + (g - g.mean())[None, :]
    numpyro.factor("loglik", _gaussian_loglik(mean, sigma_noise, sigma_inter, n, xbar, ss))
