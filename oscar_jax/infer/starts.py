"""Starting points of the damped Newton solver (Appendix B.3).

Every fit starts at zero and, with more than one start, at draws from N(0, 0.08² I);
the smallest objective is kept. The draws depend only on (dim θ, count, seed).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from ..model.params import Layout
from ..runtime.program_cache import persistent_jit

__all__ = ["START_SD", "draw_seeded_starts", "seeded_starts", "start_points"]

START_SD = 0.08  # B.3: second start drawn from N(0, 0.08² I)


def _draw_starts(key, n_starts: int, n_theta: int):
    zero = jnp.zeros((1, n_theta))
    if n_starts == 1:
        return zero
    draws = START_SD * jax.random.normal(key, (n_starts - 1, n_theta))
    return jnp.concatenate([zero, draws])


# One stored program per (count, dim θ) rather than five eager ones (seed, normal,
# multiply, zeros, concatenate), each its own XLA compilation in every new process.
_draw_starts_jit = persistent_jit(_draw_starts, static_argnames=("n_starts", "n_theta"))


def draw_seeded_starts(seed, n_starts: int, n_theta: int):
    """(n_starts, P) starts from an int seed, traceable (the fit draws them inside its program)."""
    return _draw_starts(jax.random.PRNGKey(seed), n_starts, n_theta)


_seeded_starts_jit = persistent_jit(draw_seeded_starts, static_argnames=("n_starts", "n_theta"))


def start_points(layout: Layout, n_starts: int, key) -> jnp.ndarray:
    """(n_starts, P): the zero start, then draws from N(0, 0.08² I)."""
    return _draw_starts_jit(key, int(n_starts), layout.n_theta)


@lru_cache(maxsize=64)
def seeded_starts(layout: Layout, n_starts: int, seed: int):
    """(n_starts, P) = ``start_points(layout, n_starts, PRNGKey(seed))``, cached.

    Drawing the starts costs more host time than a small compiled fit, so repeated fits
    of one design (and a batch of refits from the single fit's starts) reuse them.
    """
    return _seeded_starts_jit(np.int64(seed), n_starts=int(n_starts), n_theta=layout.n_theta)
