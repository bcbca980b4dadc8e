"""The pure core of exact-swap position calibration (Appendix D.2; :mod:`oscar_jax.swaps`).

Per judge k the estimate maximizes ℓ_k(β) + ½ log I_k(β): ℓ_k the conditional
log-likelihood of its exact-swap groups given each group's total T_m (which removes the
group intercept), I_k = −ℓ_k'' (the Jeffreys / Firth penalty, finite under separation).
The normalizer of a group is the elementary symmetric polynomial e_T of exp(β o_t),
computed in log space by :func:`log_esp`. Everything here is pure and jit-able on padded
group arrays (:class:`SwapArrays`) and vmaps over simulated datasets of the same shape.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from ..runtime.lazy_jax import jax, jnp
from .solver import iterate

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_GRID",
    "NEG",
    "Bracket",
    "SwapArrays",
    "SwapFitCore",
    "group_loglik",
    "judge_information",
    "judge_loglik",
    "log_esp",
    "penalized_loglik",
    "swap_fit_core",
]

# log(0) kept finite: logaddexp(−∞, −∞) has a NaN derivative, a huge finite number does
# not, and exp(NEG − x) underflows to exactly 0 for any real x that can occur here.
NEG = -1e30
DEFAULT_BOUND = 20.0   # |β| ≤ 20: D = tanh(10) = 1 − 4e-9; the Jeffreys optimum of even
DEFAULT_GRID = 401     # 10^6 separated groups is near β = 7 (½ log 2M), well inside.


class SwapArrays(NamedTuple):
    """Padded exact-swap groups (a pytree; M groups, at most n records each).

    z : (M, n) 1 if the chosen response was selected (0 in padding).
    o : (M, n) +1 / −1 display order of the chosen response (0 in padding).
    mask : (M, n) bool, True for real records.
    judge : (M,) int32 judge index of each group.
    """

    z: jax.Array
    o: jax.Array
    mask: jax.Array
    judge: jax.Array


# --------------------------------------------------------------------------------------
# Pure core
# --------------------------------------------------------------------------------------

def log_esp(w, mask):
    """log e_j(exp(w)) for j = 0..n over the entries where ``mask`` is True.

    e_j(x) = Σ_{|S| = j} Π_{t ∈ S} x_t, built by e_j ← e_j + x_t e_{j−1} one record at a
    time (a ``lax.scan``), each step a ``logaddexp`` so nothing overflows. w, mask: (n,);
    returns (n + 1,). Entries j above the number of valid records are ≈ NEG (log 0).
    """
    n = w.shape[0]
    init = jnp.full(n + 1, NEG, dtype=jnp.result_type(w, jnp.float64)).at[0].set(0.0)

    def step(e, xs):
        wt, mt = xs
        shifted = jnp.concatenate([jnp.full((1,), NEG, dtype=e.dtype), e[:-1] + wt])
        return jnp.where(mt, jnp.logaddexp(e, shifted), e), None

    e, _ = jax.lax.scan(step, init, (w, mask))
    return e


def _support_range(o, mask, t):
    """(min, max) of S(y) = Σ o_t y_t over y with Σ y = t (sum of the t smallest / largest o)."""
    n = o.shape[0]
    first = jnp.arange(n) < t
    desc = -jnp.sort(-jnp.where(mask, o, -jnp.inf))
    asc = jnp.sort(jnp.where(mask, o, jnp.inf))
    s_max = jnp.sum(jnp.where(first, desc, 0.0))
    s_min = jnp.sum(jnp.where(first, asc, 0.0))
    return s_min, s_max


def _group_parts(z, o, mask):
    mask = mask.astype(bool)
    zf = jnp.where(mask, z, 0.0)
    of = jnp.where(mask, o, 0.0)
    n = jnp.sum(mask)
    t = jnp.round(jnp.sum(zf)).astype(jnp.int32)
    s_obs = jnp.sum(of * zf)
    s_min, s_max = _support_range(of, mask, t)
    informative = (t > 0) & (t < n) & (s_max > s_min)
    return mask, of, t, s_obs, s_min, s_max, informative


def group_loglik(beta, z, o, mask):
    """Conditional log-likelihood of one group: β S(z) − log Σ_{Σy = T} exp(β S(y)).

    Exactly 0 for a group without information (T = 0, T = n, or constant S).
    """
    mask, of, t, s_obs, _, _, informative = _group_parts(z, o, mask)
    log_norm = log_esp(beta * of, mask)[t]
    return jnp.where(informative, beta * s_obs - log_norm, 0.0)


def _per_group(beta, arrays: SwapArrays):
    return jax.vmap(group_loglik)(beta[arrays.judge], arrays.z, arrays.o, arrays.mask)


def judge_loglik(beta, arrays: SwapArrays, n_judge: int):
    """ℓ_k(β_k) = Σ_{m of judge k} ℓ_m(β_k), for all K judges at once: (K,) → (K,)."""
    return jax.ops.segment_sum(_per_group(beta, arrays), arrays.judge, num_segments=n_judge)


def judge_information(beta, arrays: SwapArrays, n_judge: int):
    """I_k(β_k) = −ℓ_k''(β_k) = Σ_m Var(S_m | T_m): (K,).

    ℓ separates by judge (ℓ_k depends on β_k only), so the derivative along the all-ones
    direction is every judge's own derivative; forward mode twice gives the diagonal.
    """
    ones = jnp.ones_like(beta)

    def d1(b):
        return jax.jvp(lambda x: judge_loglik(x, arrays, n_judge), (b,), (ones,))[1]

    return -jax.jvp(d1, (beta,), (ones,))[1]


def penalized_loglik(beta, arrays: SwapArrays, n_judge: int):
    """ℓ_k(β) + ½ log I_k(β) per judge (Appendix D.2); −1e30 where I_k = 0 (no information)."""
    info = judge_information(beta, arrays, n_judge)
    ok = info > 0
    half_log = 0.5 * jnp.log(jnp.where(ok, info, 1.0))
    return judge_loglik(beta, arrays, n_judge) + jnp.where(ok, half_log, NEG)


class Bracket(NamedTuple):
    """State of the bisection in :func:`swap_fit_core`: per-judge brackets of the slope's sign change."""

    lo: jax.Array      # (K,) slope > 0 here
    hi: jax.Array      # (K,) slope < 0 here
    n_iter: jax.Array  # bisection steps so far


class SwapFitCore(NamedTuple):
    """Per-judge result of :func:`swap_fit_core` (all (K,))."""

    beta: jax.Array
    penalized: jax.Array
    loglik: jax.Array
    info: jax.Array
    grad: jax.Array
    converged: jax.Array
    at_bound: jax.Array
    n_groups: jax.Array
    n_informative: jax.Array
    separated: jax.Array      # every informative group at the end of its support: the unpenalized MLE is ±∞
    n_iter: jax.Array


def swap_fit_core(arrays: SwapArrays, *, n_judge: int, bound: float = DEFAULT_BOUND, grid: int = DEFAULT_GRID,
                  max_iter: int = 64, xtol: float = 1e-12) -> SwapFitCore:
    """argmax_β ℓ_k(β) + ½ log I_k(β) for every judge (pure; jit with static n_judge, grid, max_iter).

    A grid over [−bound, bound] brackets each judge's maximum (the objective is smooth and
    tends to −∞ at ±∞, but ½ log I need not be concave, so no single Newton start is
    safe); bisection on the objective's slope then shrinks the bracket [b̂ − h, b̂ + h]
    around the best grid point b̂ (spacing h) to width ≤ ``xtol``. Bisection needs no
    second derivative of log I (a fourth derivative of ℓ), which keeps the compiled
    program small. Judges without an informative group get β = NaN.
    """
    pen = partial(penalized_loglik, arrays=arrays, n_judge=n_judge)
    betas = jnp.linspace(-bound, bound, grid)
    values = jax.lax.map(lambda b: pen(jnp.full((n_judge,), b)), betas)        # (grid, K)
    start = betas[jnp.argmax(values, axis=0)]
    spacing = betas[1] - betas[0]

    parts = jax.vmap(_group_parts)(arrays.z, arrays.o, arrays.mask)
    informative = parts[6]
    s_obs, s_min, s_max = parts[3], parts[4], parts[5]
    seg = partial(jax.ops.segment_sum, segment_ids=arrays.judge, num_segments=n_judge)
    n_groups = seg(jnp.any(arrays.mask, axis=1).astype(jnp.float64))   # padding groups are empty
    n_inf = seg(informative.astype(jnp.float64))
    at_top = seg((informative & (s_obs == s_max)).astype(jnp.float64))
    at_bottom = seg((informative & (s_obs == s_min)).astype(jnp.float64))
    separated = (n_inf > 0) & ((at_top == n_inf) | (at_bottom == n_inf))

    def slope(b):  # per-judge derivative of the penalized objective (separable: the ones direction)
        return jax.jvp(pen, (b,), (jnp.ones_like(b),))[1]

    lo = jnp.clip(start - spacing, -bound, bound)
    hi = jnp.clip(start + spacing, -bound, bound)
    g_lo, g_hi = slope(lo), slope(hi)
    # The best grid point beats both neighbours, so the slope changes sign from + to − inside
    # [lo, hi]: bisect on it. Derivative values carry no cancellation error, unlike
    # comparisons of objective values near a maximum, so β̂ is found to rounding level.
    bracketed = (g_lo > 0) & (g_hi < 0)

    def terminate(state: Bracket):
        return ~((state.n_iter < max_iter) & jnp.any(bracketed & (state.hi - state.lo > xtol)))

    def step(state: Bracket) -> Bracket:
        mid = 0.5 * (state.lo + state.hi)
        up = slope(mid) > 0
        return Bracket(jnp.where(up, mid, state.lo), jnp.where(up, state.hi, mid), state.n_iter + 1)

    lo, hi, n_iter = iterate(step, terminate, Bracket(lo, hi, 0))
    beta = jnp.where(bracketed, 0.5 * (lo + hi), start)
    has = n_inf > 0
    grad = slope(beta)
    at_bound = has & (jnp.abs(beta) >= bound - spacing)
    converged = has & bracketed & (hi - lo <= xtol) & ~at_bound
    return SwapFitCore(beta=jnp.where(has, beta, jnp.nan), penalized=jnp.where(has, pen(beta), jnp.nan),
                       loglik=judge_loglik(beta, arrays, n_judge), info=judge_information(beta, arrays, n_judge),
                       grad=grad, converged=converged, at_bound=at_bound, n_groups=n_groups, n_informative=n_inf,
                       separated=separated, n_iter=n_iter)
