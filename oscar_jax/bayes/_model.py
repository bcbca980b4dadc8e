"""The NumPyro model: priors over the point fit's θ and its likelihood through ``loss_value``.

The predictor is not written here. The plain model adds the point fit's summed negative
log quasi-likelihood ``derivatives.loss_value`` (fractional ties or Davidson, at cell
statistics) through ``numpyro.factor``; the prompt random effect evaluates
``model.shifted_loss`` over the (prompt, cell) pairs: each cell's η from the one formula in
``model.local_eta``, plus γ_k times the pair's shift of s_a − s_b, so
η = γ_k (s_a − s_b + σ_u z_g) + bias. With a Normal(0, 1/λ) prior on every free coordinate the log
posterior is minus the penalized objective of Eq. 4, so the posterior mode is the point
fit's θ̂ (the v bound |v_k| ≤ 15 lies 3.4 prior sds out and is not imposed).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import numpyro
import numpyro.distributions as dist

from ..infer.derivatives import loss_value
from ..model.design import DesignArrays
from ..model.likelihood import local_index, shifted_loss
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError
from ._coordinates import (CandidateEffectIndex, candidate_effects, log_jacobian, model_coordinates,
                           prompt_candidate_index, theta_from_unconstrained, u_free)

__all__ = ["Priors", "ModelData", "PROMPT_EFFECTS", "oscar_model", "prompt_loss", "prompt_candidate_loss",
           "prompt_prior", "model_data", "prior_scales", "effect_kind"]

# Prompt random effects: "candidate" is s_{i,g} = s_i + σ_u u_{g,i} (prompt × candidate);
# "slot" is the older single shift σ_u z_g of the slot-A score per prompt, kept for comparison.
PROMPT_EFFECTS = ("candidate", "slot")

_BLOCKS = ("u", "v", "pos", "len", "fam", "cov", "tau")


@dataclass(frozen=True)
class Priors:
    """Prior scales of the Bayesian OSCAR model (all centred at zero).

    Every free θ coordinate gets an independent Normal(0, sd²) prior. A block left at
    ``None`` takes sd = 1/√λ with λ the model's ridge (0.05 → sd ≈ 4.47), the prior
    whose log density is the ridge penalty −(λ/2)‖θ‖² of Eq. 4: the posterior mode is
    then the penalized point estimate.

    Parameters
    ----------
    u
        sd of the Helmert score coordinates u (s = C u; since CᵀC = I the scores get
        the exchangeable, sum-zero prior s ~ N(0, sd² (I − 11ᵀ/C))).
    v
        sd of log γ_k of the non-reference judges.
    pos, len, fam, cov
        sd of the per-judge position, length, family and user-covariate coefficients.
    tau
        sd of the Davidson tie parameters τ_k.
    sigma_prompt
        Scale of the HalfNormal prior on σ_u, the sd of the prompt random effect on the
        score scale (default 1/√λ, as for the scores it perturbs). Under the prompt ×
        candidate effect σ_u is the sd of one candidate's effect u_{g,i}, so a pair's
        score difference varies over prompts with sd √2 σ_u.
    """

    u: float | None = None
    v: float | None = None
    pos: float | None = None
    len: float | None = None
    fam: float | None = None
    cov: float | None = None
    tau: float | None = None
    sigma_prompt: float | None = None

    def __post_init__(self):
        for name, value in asdict(self).items():
            if value is None:
                continue
            try:
                ok = math.isfinite(float(value)) and float(value) > 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise OscarInputError(f"prior scale Priors.{name} must be a finite number > 0, got {value!r}")

    def resolved(self, ridge: float) -> "Priors":
        """These priors with every unset scale filled in from the ridge λ (sd = 1/√λ)."""
        if not (ridge > 0):
            unset = [k for k, v in asdict(self).items() if v is None]
            if unset:
                raise OscarInputError(
                    f"ridge λ = {ridge} gives no proper default prior (sd = 1/√λ); use ridge > 0 or set "
                    f"Priors({', '.join(f'{k}=…' for k in unset)}) explicitly"
                )
            return self
        default = 1.0 / math.sqrt(ridge)
        return Priors(**{k: (default if v is None else float(v)) for k, v in asdict(self).items()})


def prior_scales(priors: Priors, layout: Layout) -> np.ndarray:
    """(n_theta,) prior sd of every θ coordinate, block by block (``priors`` resolved)."""
    sd = np.empty(layout.n_theta)
    for block, sl in layout.theta_blocks.items():
        value = getattr(priors, block)
        if value is None:
            raise OscarInputError(f"prior scale for block {block!r} is unset; call Priors.resolved(ridge) first")
        sd[sl] = float(value)
    return sd


class ModelData(NamedTuple):
    """Traced inputs of :func:`oscar_model` (a pytree; one simulated dataset per leaf batch).

    arrays   : DesignArrays of the design.
    stats    : (C_, 3) cell statistics (plain model) or (P, 3) pair statistics (prompt effect).
    free     : (F,) int32 θ indices of the free coordinates (B.2 mask); fixed ones stay 0.
    prior_sd : (F,) prior sd of each free coordinate.
    sigma_scale : () HalfNormal scale of σ_u (unused without the prompt effect).
    is_log_gamma : (F,) bool, the free coordinates that are log γ_k (sampled through
        :func:`theta_from_unconstrained`).
    occ : :class:`CandidateEffectIndex` for the prompt × candidate effect; None for the
        plain model and the slot shift.
    """

    arrays: DesignArrays
    stats: jax.Array
    free: jax.Array
    prior_sd: jax.Array
    sigma_scale: jax.Array
    is_log_gamma: jax.Array
    occ: CandidateEffectIndex | None = None


def effect_kind(prompt_effect) -> str | None:
    """None (no prompt effect), "candidate" (True or "candidate") or "slot"."""
    if prompt_effect is None or prompt_effect is False or prompt_effect is np.False_:
        return None
    if prompt_effect is True or prompt_effect is np.True_:
        return "candidate"
    if prompt_effect in PROMPT_EFFECTS:
        return prompt_effect
    raise OscarInputError(f"prompt_effect must be True, False or one of {PROMPT_EFFECTS}, got {prompt_effect!r}")


def model_data(arrays: DesignArrays, mask, priors: Priors, layout: Layout, *, prompt_effect: bool | str,
               stats=None) -> ModelData:
    """Assemble :class:`ModelData` from a design, its B.2 mask and resolved priors.

    ``mask`` must be concrete (numpy): the number of free coordinates fixes the shape of
    the sampled vector. ``stats`` defaults to the design's own statistics.
    ``prompt_effect``: False (plain), True or ``"candidate"`` (prompt × candidate
    effect), ``"slot"`` (one slot-A shift per prompt).
    """
    kind = effect_kind(prompt_effect)
    mask = np.asarray(mask)
    free = np.flatnonzero(mask > 0).astype(np.int32)
    sd = prior_scales(priors, layout)[free]
    if stats is None:
        stats = arrays.pair_stats if kind else arrays.stats
    is_v = np.zeros(layout.n_theta, bool)
    if "v" in layout.theta_blocks:
        is_v[layout.theta_blocks["v"]] = True
    return ModelData(arrays=arrays, stats=jnp.asarray(stats, jnp.float64), free=jnp.asarray(free),
                     prior_sd=jnp.asarray(sd, jnp.float64),
                     sigma_scale=jnp.asarray(float(priors.sigma_prompt), jnp.float64),
                     is_log_gamma=jnp.asarray(is_v[free]),
                     occ=prompt_candidate_index(arrays, u_free(free, layout)) if kind == "candidate" else None)


def prompt_loss(theta, shift, arrays: DesignArrays, pair_stats, layout: Layout):
    """Σ over (prompt, cell) pairs of the cell's loss with s_a shifted by ``shift[g]``.

    η_p = γ_k (s_a + shift_g − s_b) + bias: the prompt random effect enters as a change
    of the slot-A score in the local parameter vector, so the predictor (fractional
    ties or Davidson) is the one in ``model.local_eta``. With ``shift = 0`` and
    ``pair_stats = arrays.pair_stats`` this equals ``loss_value(θ, arrays, arrays.stats)``.

    Parameters
    ----------
    theta : (n_theta,) free coordinates θ.
    shift : (G,) score shift σ_u z_g of each prompt cluster.
    pair_stats : (P, 3) statistics (w, wy, wt) of each (prompt, cell) pair.
    """
    return _pair_loss(theta, shift[arrays.pair_g], None, arrays, pair_stats, layout)


def prompt_candidate_loss(theta, effect, arrays: DesignArrays, pair_stats, layout: Layout,
                          index: CandidateEffectIndex):
    """Σ over (prompt, cell) pairs of the cell's loss at s_{a,g} = s_a + effect[occ(g, a)], same for b.

    ``effect`` is the (O,) σ_u u of every (prompt, candidate) occurrence
    (:func:`candidate_effects`); the predictor is the one in ``model.local_eta``.
    """
    return _pair_loss(theta, effect[index.pair_occ_a], effect[index.pair_occ_b], arrays, pair_stats, layout)


def _pair_loss(theta, shift_a, shift_b, arrays: DesignArrays, pair_stats, layout: Layout):
    """Σ_p local loss of the pair's cell with s_a (slot 0) and s_b (slot 1) shifted by (P,) arrays
    (``model.shifted_loss``: the cell's η once, plus γ_k times the pair's shift of s_a − s_b)."""
    phi = jnp.asarray(layout.jacobian) @ theta
    ploc = phi[local_index(layout, arrays.a, arrays.b, arrays.k)].T          # (n_local, C_)
    shift = shift_a if shift_b is None else shift_a - shift_b
    return shifted_loss(ploc, arrays.z.T, arrays.pair_cell, shift, pair_stats.T, layout)


def oscar_model(data: ModelData, *, layout: Layout, n_clusters: int | None = None):
    """NumPyro model of OSCAR over the point fit's θ parametrization (Sections 3.2–3.4).

    Sites
    -----
    theta : (F,) NUTS coordinates w of the free θ coordinates (u Helmert scores,
        v = log γ of the non-reference judges, per-judge bias blocks): θ = w except
        log γ_k = log softplus(c(w_k)) (see :func:`theta_from_unconstrained`). The prior
        is Normal(0, prior_sd²) on θ itself, entered with the log-Jacobian as a factor,
        so the posterior of θ is the one stated in the docs.
    sigma_prompt : () σ_u ~ HalfNormal(sigma_scale), only with a prompt effect.
    z_prompt : with the prompt × candidate effect (``data.occ`` set), (O − G,) iid N(0, 1)
        Helmert coordinates ζ, u = :func:`candidate_effects` (ζ) and s_{i,g} = s_i + σ_u u_{g,i};
        with the slot shift, (G,) z_g, standard normal with the mean removed
        (:func:`prompt_prior`), added as σ_u z_g to the slot-A score. Both non-centred:
        the effect is σ_u times a standard variable, which keeps the geometry simple when
        prompts carry few records.
    loglik : factor, −loss_value (plain), −prompt_candidate_loss or −prompt_loss.

    ``n_clusters`` = G switches the prompt random effect on; ``data.stats`` must then
    be the (P, 3) pair statistics. The signature is unchanged from the slot-shift model:
    which effect is sampled is read from ``data.occ``.
    """
    w = numpyro.sample("theta", dist.ImproperUniform(dist.constraints.real_vector, (), data.prior_sd.shape))
    if n_clusters is None:
        theta = _prior(w, theta_from_unconstrained(w, data.is_log_gamma), data, layout)
        numpyro.factor("loglik", -loss_value(theta, data.arrays, data.stats, layout))
        return
    sigma = numpyro.sample("sigma_prompt", dist.HalfNormal(data.sigma_scale))
    if data.occ is not None:
        n_zeta = data.occ.zeta_slot.shape[0]  # static under jit
        z = numpyro.sample("z_prompt", dist.Normal(jnp.zeros(n_zeta), 1.0).to_event(1))
        theta_free, zeta = model_coordinates(w, sigma, z, data.occ, data.is_log_gamma)
        theta = _prior(w, theta_free, data, layout)
        effect = sigma * candidate_effects(zeta, data.occ)
        numpyro.factor("loglik", -prompt_candidate_loss(theta, effect, data.arrays, data.stats, layout, data.occ))
        return
    theta = _prior(w, theta_from_unconstrained(w, data.is_log_gamma), data, layout)
    z = numpyro.sample("z_prompt", prompt_prior(n_clusters))
    numpyro.factor("loglik", -prompt_loss(theta, sigma * z, data.arrays, data.stats, layout))


def _prior(w, theta_free, data: ModelData, layout: Layout):
    """Add θ's prior (with log γ's Jacobian) as a factor; return the full θ vector."""
    prior = dist.Normal(jnp.zeros_like(data.prior_sd), data.prior_sd).log_prob(theta_free)
    numpyro.factor("prior", jnp.sum(prior) + log_jacobian(w, data.is_log_gamma))
    return jnp.zeros(layout.n_theta, theta_free.dtype).at[data.free].set(theta_free)


def prompt_prior(n_clusters: int):
    """z ~ N(0, I − 11ᵀ/G): iid N(0, 1) effects with their mean removed (``ZeroSumNormal``).

    A common shift of every z_g moves every η by γ_k σ_u z̄, exactly like the judges'
    position terms β_pos,k, so the mean prompt effect is not identified apart from them
    (and J, which has no position term, should not acquire one through it). Removing it
    takes that flat direction out of the posterior; NUTS then samples G − 1 coordinates.
    """
    return dist.ZeroSumNormal(1.0, event_shape=(n_clusters,))
