"""Box-constrained Levenberg–Marquardt Newton solver with the exact Hessian.

The OSCAR objective is smooth and low-dimensional (dim θ ≤ a few hundred) but not
convex: γ_k (s_a − s_b) is bilinear in (v, u), so the Hessian can be indefinite away
from the optimum and an undamped Newton step can diverge. Damping H + μI, with μ
adapted by the gain ratio (actual / predicted decrease), gives gradient-descent safety
far away and quadratic convergence near the minimum, where the penalized Hessian is
positive definite (checked by B.3). Bounds |v_k| ≤ 15 are handled by projection with an
active set: coordinates at a bound whose gradient pushes outward are frozen for the
step. The loop is a ``lax.while_loop`` with per-problem state, so it vmaps over
bootstrap replicates, folds and simulated datasets; the solver never raises inside
jit — ``converged`` and ``status`` report what happened.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from . import _x64  # noqa: F401

__all__ = ["SolveResult", "STATUS", "lm_minimize"]

STATUS = {
    0: "converged: projected gradient below tolerance",
    1: "stopped: iteration limit reached",
    2: "stopped: no acceptable step (damping exhausted)",
}


class SolveResult(NamedTuple):
    theta: jax.Array
    objective: jax.Array
    grad: jax.Array  # penalized gradient at theta (masked)
    hess: jax.Array  # penalized Hessian at theta (masked, identity on fixed coordinates)
    n_iter: jax.Array
    converged: jax.Array
    status: jax.Array


def _active(theta, g, lo, hi):
    """Coordinates held at a bound because the gradient pushes them outward."""
    return ((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0))


def lm_minimize(vgh, value, theta0, lo, hi, *, gtol_abs, max_iter: int = 100, max_reject: int = 30,
                mu0: float = 0.0):
    """Minimize f with exact derivatives.

    Parameters
    ----------
    vgh : θ ↦ (f, ∇f, ∇²f)   with fixed coordinates already masked (zero gradient,
        identity Hessian rows), so they never move.
    value : θ ↦ f  (cheaper; for trial steps)
    theta0, lo, hi : (P,) start and bounds.
    gtol_abs : stop when ‖projected ∇f‖∞ ≤ gtol_abs.
    mu0 : initial damping relative to the mean |diagonal| of the Hessian (0: try Newton).
    """
    theta0 = jnp.clip(theta0, lo, hi)
    f0, g0, h0 = vgh(theta0)
    n = theta0.shape[0]
    eye = jnp.eye(n, dtype=theta0.dtype)

    def proj_norm(theta, g):
        return jnp.max(jnp.abs(jnp.where(_active(theta, g, lo, hi), 0.0, g)), initial=0.0)

    scale0 = jnp.maximum(jnp.mean(jnp.abs(jnp.diag(h0))), 1e-12)
    # state: theta, f, g, H, mu, nu, it, n_reject, done, status
    init = (theta0, f0, g0, h0, mu0 * scale0, jnp.asarray(2.0, theta0.dtype), jnp.int32(0), jnp.int32(0),
            proj_norm(theta0, g0) <= gtol_abs, jnp.int32(0))

    def cond(state):
        return ~state[8]

    def body(state):
        theta, f, g, h, mu, nu, it, n_rej, _, _ = state
        act = _active(theta, g, lo, hi)
        free = (~act).astype(theta.dtype)
        g_s = g * free
        h_s = h * jnp.outer(free, free) + jnp.diag(1.0 - free)
        chol = jnp.linalg.cholesky(h_s + mu * eye)
        delta = jax.scipy.linalg.cho_solve((chol, True), -g_s)
        ok = jnp.all(jnp.isfinite(delta))
        delta = jnp.where(ok, delta, 0.0)
        theta_new = jnp.clip(theta + delta, lo, hi)
        step = theta_new - theta
        pred = -(g @ step + 0.5 * step @ (h @ step))
        f_new = value(theta_new)
        actual = f - f_new
        rho = actual / jnp.where(pred > 0, pred, jnp.inf)
        tiny = 1e-13 * jnp.maximum(jnp.abs(f), 1.0)
        # Near the optimum both decreases are at rounding level and rho is noise: accept
        # any step that does not increase f beyond rounding, and let the gradient decide.
        accept = ok & jnp.isfinite(f_new) & ((rho > 1e-4) | ((pred <= tiny) & (actual >= -tiny)))
        f2, g2, h2 = jax.lax.cond(accept, lambda t: vgh(t), lambda t: (f, g, h), theta_new)
        theta2 = jnp.where(accept, theta_new, theta)
        # Nielsen's damping update: shrink smoothly with the gain ratio on success; on
        # failure grow geometrically faster (ν doubles), so an indefinite Hessian is
        # escaped in a few rejections rather than dozens.
        scale = jnp.maximum(jnp.mean(jnp.abs(jnp.diag(h))), 1e-12)
        shrink = jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * jnp.clip(rho, 0.0, 1.0) - 1.0) ** 3)
        mu_ok = mu * shrink
        mu_ok = jnp.where(mu_ok < 1e-15 * scale, 0.0, mu_ok)
        mu_bad = jnp.maximum(mu * nu, 1e-6 * scale)
        mu2 = jnp.where(accept, mu_ok, mu_bad)
        nu2 = jnp.where(accept, 2.0, 2.0 * nu)
        n_rej2 = jnp.where(accept, 0, n_rej + 1)
        it2 = it + 1
        converged = proj_norm(theta2, g2) <= gtol_abs
        status = jnp.where(converged, 0, jnp.where(n_rej2 >= max_reject, 2, jnp.where(it2 >= max_iter, 1, 0)))
        done = converged | (n_rej2 >= max_reject) | (it2 >= max_iter)
        return (theta2, f2, g2, h2, mu2, nu2, it2, n_rej2, done, status.astype(jnp.int32))

    theta, f, g, h, _, _, it, _, _, status = jax.lax.while_loop(cond, body, init)
    converged = proj_norm(theta, g) <= gtol_abs
    return SolveResult(theta, f, g, h, it, converged, jnp.where(converged, 0, jnp.maximum(status, 1)))
