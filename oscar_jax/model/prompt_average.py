"""Win probabilities averaged over prompts: q_ij = E_z σ(h_ij + γ̄ σ z), z ~ N(0, 1).

Under a prompt random effect the score gap of a pair varies over prompts with sd σ; the
target that the point fit and the simulation truth estimate is its average over prompts.
Shared by the Bayesian posterior targets and the simulator's truth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


__all__ = ["marginal_win_prob", "QUAD_NODES", "QUAD_RANGE"]

# Prompt-averaged q: trapezoid rule on a uniform grid over z ∈ [−10, 10]. For an
# integrand analytic in a strip, the error decays like exp(−2π d / step), d = π/(γ̄σ_u)
# the distance of the sigmoid's poles: below 1e-11 up to γ̄σ_u = 16, where Gauss–Hermite
# with 40–100 nodes is off by 1e-4 once γ̄σ_u ≳ 8. The tails beyond ±10 weigh < 1e-22.
QUAD_NODES = 401
QUAD_RANGE = 10.0


def marginal_win_prob(h, gamma_bar, sigma):
    """Prompt-averaged q_ij = E_z σ(h_ij + γ̄ σ_u z), z ~ N(0, 1), by the trapezoid rule.

    Under the prompt effect, σ(h_ij) is the win probability on a *typical* prompt
    (z_g = 0); the point fit and the simulation truth are averages over prompts, which
    is this integral. With σ_u = 0 it is σ(h_ij).
    """
    x = np.linspace(-QUAD_RANGE, QUAD_RANGE, QUAD_NODES)
    w = np.exp(-0.5 * x ** 2)
    w = jnp.asarray(w / w.sum())  # normalized, so σ_u = 0 gives σ(h) to rounding
    shifts = gamma_bar * sigma * jnp.asarray(x)
    return jnp.tensordot(w, jax.nn.sigmoid(h[None] + shifts.reshape((-1,) + (1,) * jnp.ndim(h))), axes=1)
