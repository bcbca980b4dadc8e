"""Bayesian attribute-effect models for audits: the user-facing fit (NUTS, or SVI).

The models (:mod:`.bayes_models`): a cumulative-logit model for labels and a
logit-Gaussian model for probabilities, both with item effects, condition effects δ_c
(δ_ref = 0) and an item × condition interaction. ``fit_audit_model`` samples them by
NumPyro's NUTS (chains one after another on a CPU, vectorized on an accelerator), or with
``method="svi"`` fits a Gaussian variational approximation (:mod:`.bayes_svi`), much
faster on large audits, with intervals that may be too narrow.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
from numpyro.infer import MCMC, NUTS

from ..infer.posterior import rhat_message, rhat_ok
from ..runtime.lazy_jax import jax, jnp
from ..runtime.progress import announce, bar_enabled
from ..runtime.validate import OscarInputError, check_choice, check_ci_prob, check_positive_int
from .bayes_models import (
    PROB_EPS,
    BayesPrior,
    insert_ref,
    logit_model,
    model_for,
    ordinal_log_probs,
    ordinal_model,
    sufficient_stats,
)
from .bayes_svi import fit_audit_svi
from .data import AuditData
from .posterior import AuditPosterior, posterior_from_draws, setup_model, summarize_draws

__all__ = ["PROB_EPS", "AuditPosterior", "BayesPrior", "fit_audit_model", "insert_ref", "logit_model", "model_for",
           "ordinal_log_probs", "ordinal_model", "sufficient_stats", "summarize_draws"]


def fit_audit_model(data: AuditData, reference: str, *, others=None, seed: int = 0, num_warmup: int = 500,
                    num_samples: int = 500, num_chains: int = 4, ci_prob: float = 0.95, interaction="auto",
                    prior: BayesPrior = BayesPrior(), progress_bar: bool | None = None,
                    target_accept: float = 0.8, chain_method: str = "auto", method: str = "nuts",
                    svi=None, warn: bool = True) -> AuditPosterior:
    """Fit the ordinal (labels) or logit-Gaussian (probabilities) effect model by NUTS or SVI.

    Parameters
    ----------
    data
        The audit.
    reference
        Condition with δ = 0 (exact name or unique substring).
    others
        Condition names pooled in the focal contrast (default: all but the reference).
    seed
        Seed of the sampler or of the optimizer (explicit; results are deterministic given it).
    num_warmup, num_samples, num_chains
        NUTS settings.
    interaction
        ``"auto"`` (include u_ic when some (item, condition) has ≥ 2 runs), True or False.
    chain_method
        ``"auto"`` (default): ``"sequential"`` on a CPU, where one chain at a time is about
        4× cheaper per chain-step than vmapped chains (see
        :func:`~oscar_jax.audit.bayes_calibration`), ``"vectorized"`` (NumPyro's vmapped
        chains) on an accelerator; or either by name. Recorded in ``diagnostics``.
    method
        ``"nuts"`` (default) or ``"svi"``: a Gaussian approximation of the same
        posterior fitted by NumPyro SVI with optax Adam (:mod:`oscar_jax.audit.bayes_svi`;
        the NUTS options are then unused). Its intervals may be too narrow.
    svi
        :class:`~oscar_jax.infer.posterior.SviSettings` for ``method="svi"`` (default:
        :data:`~oscar_jax.audit.bayes_svi.AUDIT_SVI`).
    warn
        SVI: warn (``VariationalWarning``) that the intervals may be too narrow, and when
        the ELBO had not levelled off.

    Returns
    -------
    AuditPosterior
    """
    ci_prob = check_ci_prob(ci_prob)
    method = check_choice("method", method, ("nuts", "svi"))
    if method == "svi":
        return fit_audit_svi(data, reference, others=others, seed=seed, ci_prob=ci_prob, interaction=interaction,
                             prior=prior, settings=svi, warn=warn)
    if svi is not None:
        raise OscarInputError("svi settings are for method='svi'")
    num_warmup = check_positive_int("num_warmup", num_warmup)
    num_samples = check_positive_int("num_samples", num_samples)
    num_chains = check_positive_int("num_chains", num_chains)
    chain_method = check_choice("chain_method", chain_method, ("auto", "vectorized", "sequential"))
    if chain_method == "auto":
        chain_method = "sequential" if jax.default_backend() == "cpu" else "vectorized"
    setup = setup_model(data, reference, interaction)
    notes = list(setup.notes)
    model = partial(model_for(data.kind), ref=setup.ref, interaction=setup.interaction, prior=prior)
    mcmc = MCMC(NUTS(model, target_accept_prob=target_accept), num_warmup=num_warmup, num_samples=num_samples,
                num_chains=num_chains, chain_method=chain_method,
                progress_bar=bar_enabled(progress_bar))
    if progress_bar is None and not bar_enabled(None):  # no bar off a terminal: say what is running
        announce(f"audit: sampling the Bayesian {data.kind} model, NUTS {num_chains} chains × ({num_warmup} warm-up "
                 f"+ {num_samples} draws); this can take minutes")
    mcmc.run(jax.random.PRNGKey(seed), *setup.args, extra_fields=("diverging",))
    samples = mcmc.get_samples(group_by_chain=True)
    delta = np.asarray(insert_ref(jnp.asarray(samples["delta_free"]), setup.ref))   # (chains, draws, C)
    div = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    diagnostics = {"method": "nuts", "divergences": int(div.sum()), "n_draws": int(num_chains * num_samples),
                   "num_warmup": num_warmup, "num_chains": num_chains, "chain_method": chain_method}
    if diagnostics["divergences"]:
        notes.append(f"{diagnostics['divergences']} divergent transitions; consider more warm-up")
    post = posterior_from_draws(data, setup, delta, samples, others=others, ci_prob=ci_prob,
                                diagnostics=diagnostics, notes=notes)
    if not rhat_ok(post.diagnostics["max_r_hat"]):
        post = replace(post, notes=post.notes + (rhat_message(post.diagnostics["max_r_hat"]),))
    return post
