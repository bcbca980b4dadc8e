"""The link functions, defined once: σ, softplus, log σ, the first-slot preference D and
the prompt-averaged win probability.

Each of the first four works on host numpy values (tables, intervals: no XLA program is
compiled) and on JAX arrays and tracers (the model core, under jit/grad/vmap), choosing
by the input's type, so reporting code and the compiled core share one formula.

Under a prompt random effect the score gap of a pair varies over prompts with sd σ; the
target that the point fit and the simulation truth estimate is its average over prompts,
q_ij = E_z σ(h_ij + γ̄ σ z), z ~ N(0, 1) (:func:`marginal_win_prob`, shared by the
Bayesian posterior targets and the simulator's truth).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..runtime.lazy_jax import is_jax_array, jax, jnp

__all__ = ["QUAD_NODES", "QUAD_RANGE", "log_sigmoid", "marginal_win_prob", "net_preference", "sigmoid", "softplus"]


def sigmoid(x):
    """σ(x) = 1 / (1 + e^{−x}), without overflow for any x."""
    if is_jax_array(x):
        # From e = exp(−|x|) in (0, 1]: shares the exponential with softplus's derivative.
        e = jnp.exp(-jnp.abs(x))
        return jnp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    # tanh form: no overflow for the |x| in the hundreds of a flagged interval's end; tanh is
    # analytic, so a complex x (the complex-step Jacobian of sandwich.host_target_se) stays complex.
    x = np.asarray(x)
    return 0.5 * (1.0 + np.tanh(0.5 * (x if np.iscomplexobj(x) else x.astype(float))))


@lru_cache(maxsize=1)
def _softplus():
    """The traced softplus with its derivative rule (made on first use: JAX loads then)."""
    @jax.custom_jvp
    def softplus_(x):
        return jnp.maximum(x, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(x)))

    @softplus_.defjvp
    def softplus_jvp(primals, tangents):
        # σ(x) from the same exponential (no logarithm): on CPU a float64 log1p costs ~4
        # exponentials, and the Newton solver needs ψ', ψ'' for every record at every step.
        (x,), (dx,) = primals, tangents
        return softplus_(x), sigmoid(x) * dx

    return softplus_


def softplus(x):
    """log(1 + eˣ) = max(x, 0) + log1p(e^{−|x|}): no overflow for any x; derivative σ(x)."""
    if is_jax_array(x):
        return _softplus()(x)
    x = np.asarray(x, dtype=float)
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def log_sigmoid(x):
    """log σ(x) = −softplus(−x)."""
    return -softplus(-x)


def net_preference(beta_pos):
    """D = tanh(β_pos / 2) = 2σ(β_pos) − 1: a judge's net first-slot preference (Section 3.2).

    Omitting position attenuates the fitted sensitivity by about 1 − D² (Eq. 5).
    """
    if is_jax_array(beta_pos):
        return jnp.tanh(beta_pos / 2.0)
    return np.tanh(np.asarray(beta_pos, dtype=float) / 2.0)


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
