"""The posterior draws as an ArviZ DataTree with named coordinates."""

from __future__ import annotations

import arviz_base
import numpy as np

from ..model.design import Design
from ..model.params import Layout
from ..runtime.lazy_jax import jax
from ._model import effect_kind
from ._sampler import Draws, targets_of_draws

__all__ = ["to_datatree"]


def _pair_labels(names) -> list[str]:
    c = len(names)
    return [f"{names[i]} vs {names[j]}" for i in range(c) for j in range(i + 1, c)]


def to_datatree(draws: Draws, design: Design, layout: Layout, mask: np.ndarray, *, prompt_effect: bool | str,
                keep_prompt_effects: bool, attrs: dict | None = None, gbar_weights=None):
    """ArviZ DataTree (``posterior``, ``sample_stats``) with named coordinates.

    Dims: ``parameter`` (free θ coordinates, labelled as ``Layout.theta_labels``),
    ``candidate``, ``judge``, ``pair`` (unordered candidate pairs i < j: ``q`` is
    P(first beats second)), ``prompt``, ``covariate``.
    """
    mask = np.asarray(mask)
    free = np.flatnonzero(mask > 0)
    labels = np.asarray(layout.theta_labels(design.candidates, design.judges, design.covariates))[free]
    kind = effect_kind(prompt_effect)
    # the sd of a pair's score difference over prompts: σ_u for the slot shift, √2 σ_u for
    # the prompt × candidate effect (u_{g,i} − u_{g,j} with zero-sum u_g)
    diff_sd = draws.sigma * (np.sqrt(2.0) if kind == "candidate" else 1.0)
    t = targets_of_draws(draws.theta, diff_sd, jax.numpy.asarray(free, jax.numpy.int32), layout, gbar_weights)
    t = jax.tree_util.tree_map(np.asarray, t)
    c = design.n_cand
    iu = np.triu_indices(c, 1)
    posterior = {
        "theta": np.asarray(draws.theta),
        "s": t.s,
        "q": t.q[..., iu[0], iu[1]],
        "q_field": t.q_field,
        "log_gamma": t.log_gamma,
        "gamma": np.exp(t.log_gamma),
        "kappa": t.kappa,
        "gamma_bar": t.gamma_bar,
    }
    dims = {"theta": ["parameter"], "s": ["candidate"], "q": ["pair"], "q_field": ["candidate"],
            "log_gamma": ["judge"], "gamma": ["judge"], "kappa": ["judge"]}
    for term, block in t.beta.items():
        name = "tau" if term == "tau" else f"beta_{term}"
        posterior[name] = block
        dims[name] = ["judge", "covariate"] if term == "cov" else ["judge"]
    if "pos" in t.beta:
        posterior["D"] = t.D
        dims["D"] = ["judge"]
    coords = {"parameter": list(labels), "candidate": list(design.candidates), "judge": list(design.judges),
              "pair": _pair_labels(design.candidates)}
    if design.covariates:
        coords["covariate"] = list(design.covariates)
    constant = _split_constants(posterior, dims, coords, design)
    if kind:
        posterior["sigma_prompt"] = np.asarray(draws.sigma)
        if keep_prompt_effects:
            posterior["z_prompt"] = np.asarray(draws.z)
            if kind == "slot":
                dims["z_prompt"] = ["prompt"]
                coords["prompt"] = [str(p) for p in design.prompts]
            else:  # Helmert coordinates ζ: no natural label, one per (prompt, candidate) occurrence beyond the first
                dims["z_prompt"] = ["prompt_contrast"]
    steps = np.asarray(draws.n_steps)
    sample_stats = {
        "diverging": np.asarray(draws.diverging, bool),
        "energy": np.asarray(draws.energy),
        "lp": -np.asarray(draws.potential),
        "n_steps": steps,
        # NUTS doubles the trajectory: a tree of depth d has up to 2^d − 1 leapfrog steps.
        "tree_depth": np.ceil(np.log2(steps + 1.0)).astype(np.int64),
        "acceptance_rate": np.asarray(draws.accept),
        "step_size": np.broadcast_to(np.asarray(draws.step_size)[:, None], steps.shape).copy(),
    }
    groups = {"posterior": posterior, "sample_stats": sample_stats}
    if constant:
        groups["constant_data"] = constant
    return arviz_base.from_dict(groups, dims=dims, coords=coords, attrs={"posterior": dict(attrs or {})})


def _split_constants(posterior: dict, dims: dict, coords: dict, design: Design) -> dict:
    """Move judge entries that are constants (γ_ref ≡ 1, coefficients B.2 holds at 0) out of the posterior.

    A constant has no R-hat (0/0: NaN rows and RuntimeWarnings in ``az.summary``). Such a
    variable keeps only its varying judges in the posterior, on its own dim
    ``judge_<variable>``; the constants go to ``constant_data`` as ``<variable>_fixed``
    over ``judge_<variable>_fixed``. :meth:`BayesResult.draws` puts them back together.
    """
    constant = {}
    judges = np.asarray(design.judges, dtype=object)
    for name in [n for n, d in dims.items() if d and d[0] == "judge"]:
        x = np.asarray(posterior[name])
        flat = x.reshape(x.shape[0] * x.shape[1], x.shape[2], -1)
        fixed = np.all(flat == flat[:1], axis=(0, 2))
        if not fixed.any():
            continue
        dim = f"judge_{name}"
        dims[f"{name}_fixed"] = [f"{dim}_fixed"] + dims[name][1:]
        coords[f"{dim}_fixed"] = list(judges[fixed])
        if fixed.all():  # nothing of it is sampled: the tables show it as not estimated
            del posterior[name], dims[name]
        else:
            posterior[name] = x[:, :, ~fixed]
            dims[name] = [dim] + dims[name][1:]
            coords[dim] = list(judges[~fixed])
        constant[f"{name}_fixed"] = flat[0, fixed].reshape((int(fixed.sum()),) + x.shape[3:])
    return constant
