"""Box-constrained Levenberg–Marquardt Newton solver with the exact Hessian.

The OSCAR objective is smooth and low-dimensional (dim θ ≤ a few hundred) but not
convex: γ_k (s_a − s_b) is bilinear in (v, u), so the Hessian can be indefinite away
from the optimum and an undamped Newton step can diverge. Damping H + μI, with μ
adapted by the gain ratio (actual / predicted decrease), gives gradient-descent safety
far away and quadratic convergence near the minimum, where the penalized Hessian is
positive definite (checked by B.3). Bounds |v_k| ≤ 15 are handled by projection with an
active set: coordinates at a bound whose gradient pushes outward are frozen for the
step; no step moves a bounded coordinate (log γ_k) by more than ``MAX_LOG_GAMMA_STEP``.

The solver runs a sequence of *phases* in one ``lax.while_loop``: phase i optimizes only
the coordinates of ``masks[i]`` until ‖projected ∇‖∞ ≤ ``tols[i]``, then hands over to
the next. One compiled loop body serves every phase (the masks are data), which keeps
compile time down. The loop vmaps over bootstrap replicates, folds and simulated
datasets; it never raises inside jit — ``converged`` and ``status`` report what happened.

Every iterative solver of the package is written the same way (after Optimistix and
BlackJAX): a documented ``NamedTuple`` state, ``init`` / ``step`` / ``terminate``
functions of it, and :func:`iterate`, the one loop that runs them.
"""

from __future__ import annotations

from typing import NamedTuple

from ..runtime.lazy_jax import jax, jnp


__all__ = ["MAX_LOG_GAMMA_STEP", "LMState", "SolveResult", "STATUS", "at_active_bound", "iterate", "lm_init",
           "lm_minimize", "lm_result", "lm_step", "lm_terminate"]

MAX_LOG_GAMMA_STEP = 1.0  # largest change of any bounded coordinate (log γ_k) in one step

STATUS = {
    0: "converged: projected gradient below tolerance",
    1: "stopped: iteration limit reached",
    2: "stopped: no acceptable step (damping exhausted)",
}


def iterate(step, terminate, state):
    """Apply ``step`` to ``state`` until ``terminate(state)``: the one loop of every solver.

    ``step`` and ``terminate`` are pure functions of a NamedTuple state (a pytree of
    fixed shapes), so the loop jits, vmaps and never raises.
    """
    return jax.lax.while_loop(lambda state: ~terminate(state), step, state)


class SolveResult(NamedTuple):
    theta: jax.Array
    objective: jax.Array
    grad: jax.Array  # penalized gradient at theta, masked by the last phase's mask
    hess: jax.Array  # penalized Hessian, masked (identity on fixed coordinates)
    n_iter: jax.Array
    converged: jax.Array
    status: jax.Array
    aux: object = ()  # vgh's auxiliary output at theta


class LMState(NamedTuple):
    """State of :func:`lm_step`: the accepted point and the trial to evaluate next.

    Each step evaluates (f, ∇f, ∇²f) at ``trial`` once, accepts or rejects it, updates
    the damping and proposes the next trial.
    """

    theta: jax.Array     # (P,) accepted point
    f: jax.Array         # objective at theta (+∞ before the first evaluation)
    grad: jax.Array      # (P,) unmasked gradient at theta
    hess: jax.Array      # (P, P) unmasked Hessian at theta
    trial: jax.Array     # (P,) point evaluated by the next step
    pred: jax.Array      # decrease of f predicted for trial by the quadratic model (< 0: no step)
    mu: jax.Array        # damping added to the Hessian's diagonal
    nu: jax.Array        # growth factor of mu after a rejection (Nielsen)
    phase: jax.Array     # int32 index of the current phase
    n_iter: jax.Array    # int32 evaluations so far
    n_reject: jax.Array  # int32 consecutive rejected trials
    done: jax.Array      # bool: converged or stopped
    status: jax.Array    # int32 key of STATUS while running (0 until stopped)
    low: jax.Array       # bool: the next evaluation uses the low-precision derivatives
    aux: object          # vgh's auxiliary output at theta (a pytree; () if none)


def at_active_bound(theta, g, lo, hi):
    """Coordinates held at a bound because the gradient pushes them outward."""
    return ((theta <= lo) & (g > 0)) | ((theta >= hi) & (g < 0))


def _masked(g, h, mask):
    return g * mask, h * jnp.outer(mask, mask) + jnp.diag(1.0 - mask)


def _proj_norm(theta, g, mask, lo, hi):
    """‖projected masked gradient‖∞."""
    return jnp.max(jnp.abs(jnp.where(at_active_bound(theta, g, lo, hi), 0.0, g * mask)), initial=0.0)


def lm_init(theta0, lo, hi, low: bool = False, aux=()) -> LMState:
    """State before the first evaluation: the first step evaluates (and accepts) θ₀.

    ``low``: start with the low-precision derivatives (see :func:`lm_minimize`); ``aux``: a
    placeholder of the shape of vgh's auxiliary output."""
    theta0 = jnp.clip(theta0, lo, hi)
    n = theta0.shape[0]
    one = jnp.ones((), theta0.dtype)
    return LMState(theta=theta0, f=jnp.inf * one, grad=jnp.zeros(n, theta0.dtype), hess=jnp.eye(n, dtype=theta0.dtype),
                   trial=theta0, pred=one, mu=0.0 * one, nu=2.0 * one, phase=jnp.int32(0), n_iter=jnp.int32(0),
                   n_reject=jnp.int32(0), done=jnp.bool_(False), status=jnp.int32(0), low=jnp.bool_(low), aux=aux)


def lm_terminate(state: LMState):
    return state.done


def lm_step(state: LMState, vgh, lo, hi, masks, tols, *, max_iter: int = 100, max_reject: int = 30,
            vgh_low=None, switch_tol=None) -> LMState:
    """Evaluate the trial, accept or reject it, adapt μ, advance the phase, propose the next trial.

    Parameters as in :func:`lm_minimize`.
    """
    n_phase = masks.shape[0]
    eye = jnp.eye(state.theta.shape[0], dtype=state.theta.dtype)

    def advance(theta, g, phase):
        # Move past every phase whose tolerance is already met (never past the last).
        for _ in range(n_phase - 1):
            phase = jnp.where((phase < n_phase - 1) & (_proj_norm(theta, g, masks[phase], lo, hi) <= tols[phase]),
                              phase + 1, phase)
        return phase

    theta, f, g, h, pred, mu, nu = state.theta, state.f, state.grad, state.hess, state.pred, state.mu, state.nu
    phase, it, n_rej = state.phase, state.n_iter, state.n_reject
    if vgh_low is None:
        f_t, g_t, h_t, aux_t = vgh(state.trial)
    else:
        f_t, g_t, h_t, aux_t = jax.lax.cond(state.low, vgh_low, vgh, state.trial)
    actual = f - f_t
    rho = actual / jnp.where(pred > 0, pred, jnp.inf)
    tiny = 1e-13 * jnp.maximum(jnp.where(jnp.isfinite(f), jnp.abs(f), 1.0), 1.0)
    first = ~jnp.isfinite(f)
    # Near the optimum both decreases are at rounding level and rho is noise: accept
    # any step that does not increase f beyond rounding, and let the gradient decide.
    # pred < 0 marks a trial that stayed put because the damped Hessian was not
    # positive definite: always a rejection, so that μ grows.
    accept = jnp.isfinite(f_t) & (first | ((pred >= 0) & ((rho > 1e-4) | ((pred <= tiny) & (actual >= -tiny)))))
    theta = jnp.where(accept, state.trial, theta)
    f = jnp.where(accept, f_t, f)
    g = jnp.where(accept, g_t, g)
    h = jnp.where(accept, h_t, h)
    aux = jax.tree_util.tree_map(lambda new, old: jnp.where(accept, new, old), aux_t, state.aux)
    # Nielsen's damping update: shrink smoothly with the gain ratio on success, by 10×
    # when the quadratic model was good (ρ > 0.75: the iteration is entering the
    # Newton region, and a slowly decaying μ would make convergence linear); on
    # failure start at 1e-3 of the Hessian scale and grow geometrically faster (ν
    # doubles), so an indefinite Hessian is escaped in a few rejections, not dozens.
    gm, hm = _masked(g, h, masks[phase])
    scale = jnp.maximum(jnp.mean(jnp.abs(jnp.diag(hm))), 1e-12)
    shrink = jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * jnp.clip(rho, 0.0, 1.0) - 1.0) ** 3)
    mu_ok = jnp.where(first, 0.0, mu * jnp.where(rho > 0.75, 0.1, shrink))
    mu_ok = jnp.where(mu_ok < 1e-15 * scale, 0.0, mu_ok)
    mu = jnp.where(accept, mu_ok, jnp.maximum(mu * nu, 1e-3 * scale))
    nu = jnp.where(accept, 2.0, 2.0 * nu)
    n_rej = jnp.where(accept, 0, n_rej + 1)
    it = it + 1
    new_phase = advance(theta, g, phase)
    mu = jnp.where(new_phase != phase, 0.0, mu)  # a new phase starts undamped
    phase = new_phase
    proj = _proj_norm(theta, g, masks[phase], lo, hi)
    # Only a full-precision evaluation can decide convergence.
    converged = (phase == n_phase - 1) & (proj <= tols[phase]) & ~state.low
    low = state.low
    if vgh_low is not None:
        # Leave the low precision for good once its gradient is small in the last phase,
        # or when its noise stalls the gain test (two rejections in a row). The next,
        # full-precision evaluation restarts the gain test (f = +∞: it is accepted), so
        # no low-precision value is ever compared with a full-precision one.
        switch = low & (((phase == n_phase - 1) & (proj <= switch_tol)) | (n_rej >= 2))
        low = low & ~switch
        f = jnp.where(switch, jnp.inf, f)
        n_rej = jnp.where(switch, 0, n_rej)
    exhausted = n_rej >= max_reject
    status = jnp.where(converged, 0, jnp.where(exhausted, 2, jnp.where(it >= max_iter, 1, 0)))
    done = converged | exhausted | (it >= max_iter)
    # Next trial: damped Newton step on the free coordinates of this phase.
    gm, hm = _masked(g, h, masks[phase])
    free = (~at_active_bound(theta, gm, lo, hi)).astype(theta.dtype)
    g_s, h_s = _masked(gm, hm, free)
    chol = jnp.linalg.cholesky(h_s + mu * eye)
    delta = jax.scipy.linalg.cho_solve((chol, True), -g_s)
    # A trust region on the bounded coordinates (log γ): no step changes a judge's
    # sensitivity by more than a factor e. Far from the optimum the Newton step for a
    # weakly informative judge can be many units of log γ and was rejected again
    # and again; the capped step keeps the Newton direction (still a descent
    # direction) and costs nothing near the optimum, where steps are small.
    big = jnp.max(jnp.where(jnp.isfinite(lo), jnp.abs(delta), 0.0), initial=0.0)
    delta = delta * jnp.minimum(1.0, MAX_LOG_GAMMA_STEP / jnp.maximum(big, 1e-300))
    ok = jnp.all(jnp.isfinite(delta))
    # An indefinite damped Hessian gives NaNs: stay put, so the next evaluation is a
    # rejection and μ grows.
    new_trial = jnp.where(ok, jnp.clip(theta + jnp.where(ok, delta, 0.0), lo, hi), theta)
    step = new_trial - theta
    new_pred = jnp.where(ok, -(gm @ step + 0.5 * step @ (hm @ step)), -1.0)
    return LMState(theta=theta, f=f, grad=g, hess=h, trial=new_trial, pred=new_pred, mu=mu, nu=nu, phase=phase,
                   n_iter=it, n_reject=n_rej, done=done, status=status.astype(jnp.int32), low=low, aux=aux)


def lm_result(state: LMState, lo, hi, masks, tols) -> SolveResult:
    """The solution of a finished run; convergence is judged on the last phase."""
    last = masks[-1]
    converged = ((state.phase == masks.shape[0] - 1) & (_proj_norm(state.theta, state.grad, last, lo, hi) <= tols[-1])
                 & ~state.low)
    gm, hm = _masked(state.grad, state.hess, last)
    return SolveResult(state.theta, state.f, gm, hm, state.n_iter, converged,
                       jnp.where(converged, 0, jnp.maximum(state.status, 1)), state.aux)


def lm_minimize(vgh, theta0, lo, hi, masks, tols, *, max_iter: int = 100, max_reject: int = 30,
                vgh_low=None, switch_tol=None, aux=None) -> SolveResult:
    """Minimize f with exact derivatives, phase by phase.

    Every trial point is evaluated with ``vgh`` (no separate value function), so that
    the loop body holds a single copy of the derivative code, which halves compile time;
    a rejected trial wastes one Hessian, which is rare.

    Parameters
    ----------
    vgh : θ ↦ (f, ∇f, ∇²f, aux), unmasked; aux (any pytree, () for none) is kept for the
        accepted point and returned as ``SolveResult.aux``.
    theta0, lo, hi : (P,) start (fixed coordinates already zero) and bounds.
    masks : (S, P) 1 = coordinate optimized in phase s; the last phase decides convergence.
    tols : (S,) phase s ends when ‖projected masked ∇f‖∞ ≤ tols[s].
    max_iter : limit on derivative evaluations over all phases.
    vgh_low, switch_tol : optional cheaper, low-precision θ ↦ (f, ∇f, ∇²f, aux). The solver starts
        with it and leaves it for ``vgh`` for good once the last phase's projected gradient is
        ≤ ``switch_tol`` (or its noise stalls the gain test); convergence is only ever judged
        on ``vgh``, so the solution is that of ``vgh``.
    aux : zeros shaped as vgh's auxiliary output, when the caller knows them (``()``: none);
        None works them out by tracing ``vgh`` once more (a third of a small fit's tracing).
    """
    def step(state):
        return lm_step(state, vgh, lo, hi, masks, tols, max_iter=max_iter, max_reject=max_reject, vgh_low=vgh_low,
                       switch_tol=switch_tol)

    if aux is None:
        aux = jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(vgh, theta0)[3])
    return lm_result(iterate(step, lm_terminate, lm_init(theta0, lo, hi, low=vgh_low is not None, aux=aux)), lo, hi,
                     masks, tols)
