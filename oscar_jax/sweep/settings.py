"""What a sweep runs: settings (N, c, ρ), the paper's grid and controls, methods, replicate keys.

A replicate's key depends on the seed, its setting's N and its number only, so a replicate
draws the same data whichever other settings or replicate ranges a run includes."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..model.spec import ModelSpec, parse_model
from ..runtime.jit import persistent_jit
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError
from ..simulate import TABLE_G1, SimParams

__all__ = ["DEFAULT_METHODS", "DEFAULT_NS", "Setting", "TABLE_G2_CONTROLS", "TABLE_G2_N", "main_and_controls",
           "method_spec", "replicate_keys", "settings_grid"]

DEFAULT_NS = (1000, 2500, 5000, 10000)
DEFAULT_METHODS = ("j", "j+p", "j+l", "j+f", "oscar")
# Table G2: (c, ρ) of the controls "no bias", "no dependence", "neither", run at N = 2500.
TABLE_G2_CONTROLS = ((0.0, 0.6), (1.0, 0.0), (0.0, 0.0))
TABLE_G2_N = 2500


class Setting(NamedTuple):
    """One simulation setting: N judgments, bias multiplier c, dependence ρ."""

    n: int
    c: float
    rho: float


def settings_grid(ns: Sequence[int], c: Sequence[float], rho: Sequence[float]) -> list[Setting]:
    """All (N, c, ρ) combinations, N outermost (the order the sweep runs them)."""
    return [Setting(int(n), float(cc), float(r)) for n in ns for cc in c for r in rho]


def main_and_controls(ns: Sequence[int] = DEFAULT_NS, params: SimParams = TABLE_G1,
                      control_n: int = TABLE_G2_N) -> list[Setting]:
    """The paper's main setting at every N plus the three Table G2 controls at ``control_n``."""
    main = [Setting(int(n), params.c, params.rho) for n in ns]
    return main + [Setting(int(control_n), c, r) for c, r in TABLE_G2_CONTROLS]


def method_spec(method) -> ModelSpec:
    """The :class:`ModelSpec` of a sweep method; only judge-sensitivity models (learned γ,
    fractional ties, no user covariates) have a γ* to recover."""
    spec = method if isinstance(method, ModelSpec) else parse_model(str(method))
    if spec.ties != "fractional" or not spec.learn_gamma:
        raise OscarInputError(
            f"method {spec.name!r}: the simulation study compares judge-sensitivity models "
            "(j, j+p, j+l, j+f, oscar and other j+... combinations); BT/Davidson have no γ to recover"
        )
    if "cov" in spec.terms:
        raise OscarInputError(f"method {spec.name!r}: the simulated design has no user covariates (drop 'c')")
    return spec


def _keys(seed, n, start, count: int):
    base = jax.random.fold_in(jax.random.PRNGKey(seed), n)
    return jax.vmap(lambda r: jax.random.fold_in(base, r))(start + jnp.arange(count, dtype=jnp.uint32))


# One stored program for every chunk of a sweep (chunks are equal), instead of six eager
# operations per chunk, each a dispatch and a cache lookup (with ω and the scalar settings,
# now host numpy: 0.06 s of a warm small sweep).
_keys_jit = persistent_jit(_keys, static_argnames=("count",))


def replicate_keys(seed: int, n: int, start: int, stop: int) -> jax.Array:
    """(stop − start, 2) keys of replicates start..stop−1 of the setting with N = ``n``."""
    return _keys_jit(np.int64(seed), np.uint32(n), np.uint32(start), count=stop - start)
