"""The jit-able, vmap-able fit core: column selection, multi-start solve, B.3 checks.

``fit_core`` is one pure function of (design arrays, cluster weights, starts). A single
full-data fit calls it once; a bootstrap calls ``jax.vmap`` of it over a (B, G) weight
matrix; a simulation sweep vmaps it over a batch of simulated designs too. Nothing in
here touches names, pandas or Python-side state.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..runtime.lazy_jax import jax, jnp
from .derivatives import (expected_information, grouped_cells, information_from_moments, value_grad_hess,
                          value_grad_hess_information, value_grad_hess_moments)
from ..model.cells import GROUP_MIN_CELLS
from ..model.design import DesignArrays, cell_stats_from_cluster_weights
from ..model.params import Layout
from ..runtime.jit import RUN_ONCE, persistent_jit, register_pytree_names
from .selection import column_mask, components_connected, host_connected
from .solver import at_active_bound, lm_minimize
from .starts import draw_seeded_starts

__all__ = ["FitCore", "complete_checks", "fit_core", "fit_core_program", "fit_core_seeded", "penalized_vgh",
           "STATIONARITY_TOL"]

STATIONARITY_TOL = 1e-7  # B.3(1): ‖∇L‖∞ / N
# ‖∇‖∞ / N below which the solver leaves the float32 derivatives: far above their rounding
# (≤ 6e-10·N measured at 10⁵ and 10⁶ records, float32 sums included), and small enough
# that the float64 Newton steps that follow converge quadratically.
LOW_PRECISION_TOL = 1e-5
INFORMATION_IN_LOOP_MAX_CELLS = 4096  # see fit_core


class FitCore(NamedTuple):
    """Per-fit arrays (a leading batch axis when vmapped). Checks follow Appendix B.3."""

    theta: jax.Array          # (P,) estimate (zeros at fixed coordinates)
    mask: jax.Array           # (P,) 1 = free coordinate, 0 = fixed at zero (B.2)
    objective: jax.Array      # penalized objective at theta
    start_objectives: jax.Array  # (S,) objective reached from each start
    n_iter: jax.Array
    converged: jax.Array
    status: jax.Array
    weight: jax.Array         # N = total record weight
    grad_inf: jax.Array       # ‖projected ∇L_N‖∞ (penalized)
    stationary: jax.Array     # grad_inf / N ≤ 1e-7
    n_free: jax.Array         # dim θ after column selection
    n_identified: jax.Array   # eigenvalues of R̂ᵀŴR̂ above max(1e-12, 1e-10·largest)
    identified: jax.Array
    min_eig: jax.Array        # smallest / largest eigenvalue of the penalized Hessian (free block); NaN if not computed
    max_eig: jax.Array
    curvature_ok: jax.Array
    at_bound: jax.Array       # some v_k at ±v_bound
    n_clusters: jax.Array     # clusters with positive weight (G)
    clusters_ok: jax.Array    # G > dim θ
    connected: jax.Array
    point_ok: jax.Array       # all checks except G > dim θ (valid point estimate; bootstrap/sweep replicates)
    ok: jax.Array             # all checks passed
    hess: jax.Array           # (P, P) penalized observed Hessian, identity on fixed coordinates
    info: jax.Array           # (P, P) expected information R̂ᵀŴR̂ (unpenalized), zero on fixed


def penalized_vgh(arrays: DesignArrays, stats, layout: Layout, ridge, low: bool = False, information: bool = False):
    """θ ↦ (f, ∇f, ∇²f, aux) of the penalized objective L(θ) + (λ/2)‖θ‖² (Eq. 4), unmasked.

    ``low``: the low-precision derivatives of a grouped design (``value_grad_hess``). aux:
    a grouped design's summed moments (the expected information reads the solution's); with
    ``information``, a design without groups gives its expected information
    (``value_grad_hess_information``); else ()."""
    eye = jnp.eye(layout.n_theta)
    stats = grouped_cells(arrays, stats)

    def vgh(theta):
        if arrays.group_cell is None and information:
            f, g, h, aux = value_grad_hess_information(theta, arrays, stats, layout)
        elif arrays.group_cell is None:
            f, g, h = value_grad_hess(theta, arrays, stats, layout)
            aux = ()
        else:
            f, g, h, aux = value_grad_hess_moments(theta, arrays, stats, layout, low=low)
        return f + 0.5 * ridge * jnp.sum(theta ** 2), g + ridge * theta, h + ridge * eye, aux

    return vgh


def _extreme_eigs(m):
    """(smallest, largest) eigenvalue of a symmetric matrix.

    A positive definite matrix (Cholesky succeeds: every fit that passes B.3) has its
    eigenvalues equal to its singular values, and on CPU the SVD costs half of
    ``eigvalsh``; an indefinite one takes ``eigvalsh`` (under ``vmap`` both run).
    """
    pd = jnp.all(jnp.isfinite(jnp.linalg.cholesky(m)))

    def from_svd(x):
        sv = jnp.linalg.svd(x, compute_uv=False)
        return sv[-1], sv[0]

    def from_eigh(x):
        ev = jnp.linalg.eigvalsh(x)
        return ev[0], ev[-1]

    return jax.lax.cond(pd, from_svd, from_eigh, m)


def _filled_free_block(matrix, mask, xp=jnp):
    """(matrix with its fixed coordinates set to the free block's mean diagonal, the free block's trace).

    The mean diagonal lies inside the free block's spectrum, so the filled matrix has the
    free block's extreme eigenvalues.
    """
    n_free = xp.maximum(xp.sum(mask), 1.0)
    trace = xp.sum(xp.diag(matrix) * mask)
    return matrix * xp.outer(mask, mask) + xp.diag((1.0 - mask) * trace / n_free), trace


# B.3's eigenvalue thresholds: λ counts when λ > max(1e-12, rel · λ_max).
IDENTIFIED_REL = 1e-10   # B.3(2), eigenvalues of R̂ᵀŴR̂
CURVATURE_REL = 1e-13    # B.3(3), smallest eigenvalue of the penalized Hessian


def _above(x, largest, rel, xp=jnp):
    """x > max(1e-12, rel · largest): the one form of both B.3 thresholds."""
    return x > xp.maximum(1e-12, rel * largest)


def _certified_above(filled, trace, rel):
    """Whether every eigenvalue of ``filled`` exceeds max(1e-12, rel · largest), shown without the spectrum.

    Cholesky L gives λ_min ≥ 1/‖L⁻¹‖²_F and a positive definite matrix has trace ≥ λ_max,
    so a bound above the threshold at the trace proves the check. False means "not
    shown" (Cholesky failed, or the bound is too loose): then compute the spectrum. A
    Cholesky and a triangular solve cost a fraction of a P × P SVD.
    """
    chol = jnp.linalg.cholesky(filled)
    inv = jax.scipy.linalg.solve_triangular(chol, jnp.eye(filled.shape[0], dtype=filled.dtype), lower=True)
    lower = 1.0 / jnp.sum(inv ** 2)
    return jnp.all(jnp.isfinite(inv)) & (trace > 0) & _above(lower, trace, rel)


def _curvature(hess, mask, eigenvalues: bool):
    """(ok, smallest, largest eigenvalue) of the penalized Hessian's free block (B.3(3)).

    ok: the smallest eigenvalue exceeds max(1e-12, 1e-13 · largest). ``eigenvalues=False``
    (replicates, whose spectra nobody reads) settles the check by :func:`_certified_above`
    when it can and returns NaN eigenvalues then; an uncertified block gets its spectrum
    either way.
    """
    filled, trace = _filled_free_block(hess, mask)

    def from_spectrum(m):
        lo, hi = _extreme_eigs(m)
        return _above(lo, hi, CURVATURE_REL), lo, hi

    if eigenvalues:
        return from_spectrum(filled)
    nan = jnp.full((), jnp.nan, hess.dtype)
    return jax.lax.cond(_certified_above(filled, trace, CURVATURE_REL), lambda m: (jnp.bool_(True), nan, nan),
                        from_spectrum, filled)


def _n_identified(info, mask, certify: bool = True):
    """Eigenvalues of R̂ᵀŴR̂ above max(1e-12, 1e-10·largest) (B.3(2)).

    The SVD counts them: R̂ᵀŴR̂ is positive semi-definite, so its eigenvalues are its
    singular values (half the cost of eigvalsh on CPU). ``certify`` (replicates) first
    tries :func:`_certified_above`: every free eigenvalue above the threshold, the count
    the SVD would give, shown without it (one P × P SVD saved per replicate). A single fit
    skips the certificate: the same count, a smaller program to compile.
    """
    def counted(m):
        eigs = jnp.linalg.svd(m, compute_uv=False)
        return jnp.sum(_above(eigs, jnp.max(eigs), IDENTIFIED_REL))

    if not certify:
        return counted(info)
    filled, trace = _filled_free_block(info, mask)
    return jax.lax.cond(_certified_above(filled, trace, IDENTIFIED_REL), lambda m: jnp.round(jnp.sum(mask)).astype(jnp.int64),
                        counted, info)


def _settled(sol, bounded, v_bound):
    """A start's solution passes B.3's point checks: converged, no v_k at a bound, positive
    definite penalized Hessian (the Cholesky factor of the free block is finite)."""
    at_bound = jnp.any(bounded & (jnp.abs(sol.theta) >= v_bound - 1e-9))
    return sol.converged & ~at_bound & jnp.all(jnp.isfinite(jnp.linalg.cholesky(sol.hess)))


def _adaptive_starts(solve, theta_starts, bounded, v_bound):
    """Solve from each start in turn while none has settled (:func:`_settled`); the rest
    are not run (NaN objective, not converged). One copy of the solver in the program."""
    def step(settled, theta0):
        def skip(x):
            out = jax.eval_shape(solve, x)
            zeros = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), out)
            return zeros._replace(theta=x, objective=jnp.full((), jnp.nan, x.dtype), status=jnp.int32(1))

        sol = jax.lax.cond(settled, skip, solve, theta0)
        return settled | _settled(sol, bounded, v_bound), sol

    return jax.lax.scan(step, jnp.bool_(False), theta_starts)[1]


def fit_core(arrays: DesignArrays, omega, theta_starts, *, layout: Layout, n_clusters: int,
             ridge=0.05, v_bound=15.0, max_iter: int = 100, gtol=1e-12, mask=None, stats=None,
             eigenvalues: bool = True, adaptive: bool = False, host_checks: bool = False) -> FitCore:
    """Penalized fit from several starts; keeps the smallest objective (B.3).

    Parameters
    ----------
    arrays : design arrays.
    omega : (G,) prompt-cluster weights (ones: the data as observed; multinomial counts:
        a bootstrap replicate; 0/1: a fold).
    theta_starts : (S, P) starting points (zero and N(0, 0.08²) in the paper).
    mask : optional (P,) fixed-coordinate mask; default: B.2 column selection on the
        weighted data (so it is redone on every replicate).
    stats : optional (C_, 3) cell statistics of ``omega`` when already known (the
        full-data fit passes ``arrays.stats``), saving one segment sum over the pairs.
    gtol : solver tolerance on ‖∇‖∞ relative to N. Far stricter than B.3's 1e-7 so that
        fits by different paths (warm/cold starts, sharded batches) agree to ~1e-10;
        quadratic convergence makes it cost at most one extra Newton step.
    eigenvalues : static; False skips the Hessian's extreme eigenvalues where a Cholesky
        bound already settles the curvature check (``min_eig``, ``max_eig`` NaN there), and
        the identification count's SVD where the same bound settles it: replicates of a
        bootstrap or a sweep, which report the checks, not the spectra. True (a single
        fit) computes both spectra and skips the bounds: the same checks, a smaller program.
    adaptive : static; True runs the starts after the first only when the first did not
        settle — did not converge, ended with some v_k at a bound, or where the penalized
        Hessian is not positive definite (B.3's point checks that a start can fail). A
        start that did not run reports a NaN objective.
    host_checks : static; True leaves the spectral checks (identification count, curvature
        and its eigenvalues) and connectivity to :func:`complete_checks` in host numpy, on
        the matrices returned (their fields hold placeholders until then): a single fit on a
        small design (:func:`fit_core_program`), whose program is then smaller to compile.
    """
    if stats is None:
        stats = cell_stats_from_cluster_weights(arrays, omega, arrays.a.shape[0])
    if mask is None:
        mask = column_mask(arrays, stats, layout)
    cells = grouped_cells(arrays, stats)  # once: both precisions and the information read it
    # A single fit of a small design without groups (host_checks) has its solver's
    # evaluations carry the expected information too: one copy of the derivative code in
    # its program, which a first run compiles ~0.1 s sooner, for one more evaluation's
    # arithmetic per iteration (+5 ms a fit at 2·10³ cells). Larger designs and replicates
    # keep the one separate evaluation at θ̂.
    in_loop = host_checks and arrays.group_cell is None and arrays.a.shape[0] <= INFORMATION_IN_LOOP_MAX_CELLS
    vgh = penalized_vgh(arrays, cells, layout, ridge, information=in_loop)
    # A grouped design (many records per (a, b, k)) takes its early Newton steps with the
    # per-record and per-group arithmetic in float32 and its last ones in float64, to the
    # same convergence test: the estimate is the float64 one.
    vgh_low = penalized_vgh(arrays, cells, layout, ridge, low=True) if arrays.group_cell is not None else None
    is_v = jnp.asarray(layout.v_mask)
    lo = jnp.where(is_v, -v_bound, -jnp.inf)
    hi = jnp.where(is_v, v_bound, jnp.inf)
    weight = jnp.sum(stats, axis=0)[0]  # the weights' column alone would be copied out first (8 bytes a cell)
    gtol_abs = gtol * jnp.maximum(weight, 1.0)

    # Continuation in three phases when γ is learned: (1) freeze the log-sensitivities:
    # for fixed v, η is linear in (u, b), the penalized loss is strictly convex and plain
    # Newton converges in a few steps; this avoids the strongly indefinite Hessian at
    # θ = 0, where ∂η/∂v = 0. (2) Freeze the scores: the problem separates by judge.
    # (3) Free everything and converge to the strict tolerance. Phases 1–2 stop early
    # (‖∇‖∞ ≤ 1e-3 N); only phase 3 decides convergence, from any start.
    if layout.structure.learn_gamma:
        is_u = jnp.zeros(layout.n_theta, bool).at[layout.theta_blocks["u"]].set(True)
        masks = jnp.stack([mask * ~is_v, mask * ~is_u, mask])
        loose = 1e-3 * jnp.maximum(weight, 1.0)
        tols = jnp.stack([loose, loose, gtol_abs])
    else:
        masks, tols = mask[None, :], gtol_abs[None]

    def solve(theta0):
        return lm_minimize(vgh, theta0 * mask, lo, hi, masks, tols, max_iter=max_iter, vgh_low=vgh_low,
                           switch_tol=LOW_PRECISION_TOL * jnp.maximum(weight, 1.0),
                           aux=(jnp.zeros((layout.n_theta,) * 2, theta0.dtype) if in_loop
                                else () if arrays.group_cell is None else None))

    # The starts run one after another (lax.map), not vmapped: with a batch axis the
    # segment sums of the derivative assembly lose their fast path, and two vmapped starts
    # cost ~3× one start against 2× in sequence. Replicates are still vmapped outside.
    if adaptive and theta_starts.shape[0] > 1:
        runs = _adaptive_starts(solve, theta_starts, is_v & (mask > 0), v_bound)
    else:
        runs = jax.lax.map(solve, theta_starts)
    # Prefer converged runs; among them the smallest objective (a start not run: NaN).
    objective = jnp.where(jnp.isnan(runs.objective), jnp.inf, runs.objective)
    score = jnp.where(runs.converged, objective, jnp.inf)
    best = jnp.where(jnp.any(runs.converged), jnp.argmin(score), jnp.argmin(objective))
    pick = lambda x: x[best]  # noqa: E731
    sol = jax.tree_util.tree_map(pick, runs)

    theta = sol.theta
    grad_proj = jnp.where(at_active_bound(theta, sol.grad, lo, hi), 0.0, sol.grad)
    grad_inf = jnp.max(jnp.abs(grad_proj))
    n_free = jnp.sum(mask)

    if in_loop:
        info = sol.aux
    elif arrays.group_cell is not None and not layout.structure.davidson:
        # The solution's last evaluation (full precision, at θ̂) already summed the moments.
        info = information_from_moments(theta, arrays, cells, sol.aux, layout)
    else:
        info = expected_information(theta, arrays, stats, layout)
    info = info * jnp.outer(mask, mask)
    if host_checks:
        n_identified, curvature, connected = jnp.round(n_free).astype(jnp.int64), jnp.bool_(True), jnp.bool_(True)
        min_eig = max_eig = jnp.full((), jnp.nan, sol.hess.dtype)
    else:
        n_identified = _n_identified(info, mask, certify=not eigenvalues)
        curvature, min_eig, max_eig = _curvature(sol.hess, mask, eigenvalues)
        connected = components_connected(arrays, stats, layout.n_cand)
    at_bound = jnp.any(is_v & (mask > 0) & (jnp.abs(theta) >= v_bound - 1e-9))

    g_eff = jnp.sum(omega > 0)
    stationary = grad_inf / jnp.maximum(weight, 1e-300) <= STATIONARITY_TOL
    identified = n_identified == n_free
    clusters_ok = g_eff > n_free
    point_ok, ok = _verdicts(stationary, identified, curvature, at_bound, connected, clusters_ok)
    return FitCore(
        theta=theta, mask=mask, objective=sol.objective, start_objectives=runs.objective,
        n_iter=sol.n_iter, converged=sol.converged, status=sol.status, weight=weight,
        grad_inf=grad_inf, stationary=stationary, n_free=n_free, n_identified=n_identified,
        identified=identified, min_eig=min_eig, max_eig=max_eig, curvature_ok=curvature,
        at_bound=at_bound, n_clusters=g_eff, clusters_ok=clusters_ok, connected=connected,
        point_ok=point_ok, ok=ok, hess=sol.hess, info=info,
    )


def _verdicts(stationary, identified, curvature, at_bound, connected, clusters_ok):
    """(point_ok, ok): B.3's checks combined (compiled or host booleans)."""
    point_ok = stationary & identified & curvature & ~at_bound & connected
    return point_ok, point_ok & clusters_ok


def complete_checks(core: FitCore, a, b, n_cand: int) -> FitCore:
    """A fit made with ``host_checks`` (numpy fields), or on the host (plain BT), with its B.3
    spectral and connectivity checks, in host numpy: the same thresholds as compiled. The
    information's singular values count the identified directions (:func:`_n_identified`);
    the filled free block's eigenvalues give the curvature check and its extremes
    (:func:`_curvature`); the comparisons (a, b) with positive weight, its connectivity."""
    mask = np.asarray(core.mask, np.float64)
    sv = np.linalg.svd(np.asarray(core.info, np.float64), compute_uv=False)
    n_identified = np.int64(np.sum(_above(sv, np.max(sv), IDENTIFIED_REL, np)))
    ev = np.linalg.eigvalsh(_filled_free_block(np.asarray(core.hess, np.float64), mask, np)[0])
    curvature = np.bool_(_above(ev[0], ev[-1], CURVATURE_REL, np))
    connected = np.bool_(host_connected(a, b, n_cand))
    identified = np.bool_(n_identified == core.n_free)
    point_ok, ok = _verdicts(core.stationary, identified, curvature, core.at_bound, connected, core.clusters_ok)
    return core._replace(n_identified=n_identified, identified=identified, min_eig=np.float64(ev[0]),
                         max_eig=np.float64(ev[-1]), curvature_ok=curvature, connected=connected,
                         point_ok=point_ok, ok=ok)


def fit_core_seeded(arrays: DesignArrays, omega, seed, *, n_starts: int, layout: Layout, n_clusters: int,
                    ridge=0.05, v_bound=15.0, max_iter: int = 100, stats=None, adaptive: bool = False,
                    free: tuple[int, ...] | None = None, host_checks: bool = False) -> FitCore:
    """:func:`fit_core` from ``seeded_starts(layout, n_starts, seed)``, drawn inside the same
    program: a single fit is one compiled program, not two (each costs a warm process
    ~0.05–0.1 s to load). The draws are bit-identical to :func:`~oscar_jax.infer.starts.seeded_starts`.
    ``free`` (static): the B.2 mask as 0/1, chosen on the host (``column_mask(..., xp=np)``);
    a constant, it folds into the program (a small design's fit compiles ~0.15 CPU-s
    faster than with the mask as an input, and 0.3 faster than with the selection inside).
    (Explicit keywords: :func:`~oscar_jax.runtime.jit.persistent_jit` keys on them.)"""
    return fit_core(arrays, omega, draw_seeded_starts(seed, n_starts, layout.n_theta), layout=layout,
                    n_clusters=n_clusters, ridge=ridge, v_bound=v_bound, max_iter=max_iter, stats=stats,
                    adaptive=adaptive, mask=None if free is None else jnp.asarray(free, jnp.float64),
                    host_checks=host_checks)


register_pytree_names(FitCore, DesignArrays)
fit_core_jit = persistent_jit(fit_core, static_argnames=("layout", "n_clusters", "max_iter", "eigenvalues", "adaptive"))
fit_core_seeded_jit = persistent_jit(fit_core_seeded, static_argnames=("n_starts", "layout", "n_clusters", "max_iter",
                                                                       "adaptive", "free", "host_checks"))
_fit_core_seeded_run_once = persistent_jit(fit_core_seeded, static_argnames=("n_starts", "layout", "n_clusters",
                                                                             "max_iter", "adaptive", "free", "host_checks"),
                                           compiler_options=RUN_ONCE)


def fit_core_program(n_cells: int):
    """(program, host_checks) of a single fit: :data:`fit_core_seeded_jit`, or below
    GROUP_MIN_CELLS (2¹⁵) cells the same program compiled without XLA's backend
    optimisations and without the column selection, spectral and connectivity checks,
    which the caller runs in host numpy (``column_mask(..., xp=np)`` as ``free``,
    :func:`complete_checks`): a first run on MT-Bench-sized data then traces, lowers and
    compiles the fit in ~1.3 CPU-s (1.6 with the selection and checks inside, 2.6 optimised),
    and each fit runs in ~5 ms instead of ~2 (Chatbot Arena 10k: 6.9 against 2.3 ms). A
    grouped design (Arena scale) keeps the optimised, complete program, which a fit of 10⁵
    records and more repays."""
    small = n_cells < GROUP_MIN_CELLS
    return (_fit_core_seeded_run_once if small else fit_core_seeded_jit), small
