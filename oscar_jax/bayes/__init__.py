"""Bayesian OSCAR in NumPyro: posterior win probabilities, judge comparisons, ArviZ summaries.

The model reuses the point fit's parametrization and likelihood (``derivatives.loss_value``,
``model.local_loss``) through ``numpyro.factor``; see ``docs/bayes.md``.

>>> from oscar_jax.bayes import fit_bayes          # doctest: +SKIP
>>> post = fit_bayes("mtbench.json", "oscar", reference_judge="Qwen3-235B-A22B-Instruct-2507")
>>> post.leaderboard(); post.judges(); post.judge_comparisons(); post.diagnostics
"""

from ._datatree import to_datatree
from ._fit import INDEPENDENCE_LABEL, MAX_STORED_PROMPTS, default_prompt_effect, fit_bayes
from ._io import load_idata, plot_forest, plot_judges, save_idata
from ._coordinates import (
    CandidateEffectIndex,
    candidate_effects,
    model_coordinates,
    prompt_candidate_index,
    sampler_coordinates,
    theta_from_unconstrained,
    unconstrained_from_theta,
)
from ._model import (
    PROMPT_EFFECTS,
    ModelData,
    Priors,
    model_data,
    oscar_model,
    prior_scales,
    prompt_candidate_loss,
    prompt_loss,
)
from ._diagnostics import compute_diagnostics
from ._result import BayesResult, BayesWarning
from ._svi import SviSettings, VariationalWarning
from ._sampler import (Draws, NutsSettings, marginal_win_prob, posterior_targets, sample_posterior,
                       sample_many, sample_posterior_jit, targets_of_draws)

__all__ = [
    "INDEPENDENCE_LABEL",
    "PROMPT_EFFECTS",
    "BayesResult",
    "CandidateEffectIndex",
    "BayesWarning",
    "Draws",
    "MAX_STORED_PROMPTS",
    "ModelData",
    "NutsSettings",
    "SviSettings",
    "VariationalWarning",
    "Priors",
    "candidate_effects",
    "compute_diagnostics",
    "default_prompt_effect",
    "fit_bayes",
    "load_idata",
    "marginal_win_prob",
    "model_coordinates",
    "model_data",
    "oscar_model",
    "plot_forest",
    "plot_judges",
    "posterior_targets",
    "prior_scales",
    "prompt_candidate_index",
    "prompt_candidate_loss",
    "prompt_loss",
    "sample_posterior",
    "sample_many",
    "sample_posterior_jit",
    "sampler_coordinates",
    "save_idata",
    "targets_of_draws",
    "theta_from_unconstrained",
    "to_datatree",
    "unconstrained_from_theta",
]
