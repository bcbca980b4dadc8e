"""The pure model core: η, per-record loss and predictions (Section 3.2, Appendix E.1).

Everything here works on one record's *local* parameter vector — the few slots of the
expanded vector φ that the record touches, in the order of ``Layout.local_slots``:

    (s_a, s_b, [v_k], [β_pos,k], [β_len,k], [β_fam,k], [β_cov,k,1..U], [τ_k])

and its covariates z = (L, F, X_1..X_U). A record carries *sufficient statistics*
(w, wy, wt) = (total weight, weighted slot-A score, weighted tie count): records that
share (a, b, k, z) share η, so a dataset collapses into weighted cells without changing
the loss, and bootstrap or fold weights act on the same statistics. The functions are
unjitted and free of Python branching on values, so grad, hessian, vmap and NumPyro
compose them; the point fit, the sandwich and the Bayesian model all call these same
functions (one definition of the predictor for every estimator).
"""

from __future__ import annotations

from typing import NamedTuple

from ..runtime.lazy_jax import jax, jnp
from .links import sigmoid, softplus
from .params import Layout

__all__ = [
    "HessianCells",
    "PsiTerms",
    "column_derivatives",
    "hessian_cells",
    "expected_stats",
    "psi_terms",
    "local_eta",
    "local_expected_stats",
    "local_index",
    "local_loss",
    "local_prob",
    "shifted_loss",
    "upper_pairs",
]


def _read(phi_loc, layout: Layout):
    """Split a local parameter vector into (s_a − s_b, log γ, bias coefficients, τ)."""
    slots = layout.local_slots
    diff = phi_loc[0] - phi_loc[1]
    pos = 2
    logg = jnp.zeros_like(diff)
    if layout.structure.learn_gamma:
        logg = phi_loc[2]
        pos = 3
    n_bias = len(slots) - pos - (1 if layout.structure.davidson else 0)
    betas = phi_loc[pos:pos + n_bias]
    tau = phi_loc[-1] if layout.structure.davidson else None
    return diff, logg, betas, tau


def _bias_covariates(z, layout: Layout):
    """The covariate multiplying each bias coefficient, in slot order (``Layout.bias_columns``).

    z = (L, F, X_1..X_U) along axis 0 (an array or a sequence of rows); position multiplies 1.
    """
    return [jnp.ones_like(z[0]) if col is None else z[col] for _, _, col in layout.bias_columns]


def local_eta(phi_loc, z, layout: Layout):
    """η = γ_k (s_a − s_b) + β_pos,k + β_len,k L + β_fam,k F + Σ_j β_cov,k,j X_j (Eq. 2).

    ``phi_loc`` and ``z`` index their slots along axis 0: arrays, or sequences of rows.
    """
    diff, logg, betas, _ = _read(phi_loc, layout)
    # An unrolled sum over the few bias slots (not jnp.dot or a reduction), so that the
    # same code serves one record and a column batch (slots × N), and XLA fuses it with
    # the rest of the elementwise work: a reduction over the short slot axis compiled to
    # a separate kernel that cost as much as all the rest of η on CPU.
    covs = _bias_covariates(z, layout)
    eta = jnp.exp(logg) * diff
    for j in range(len(betas)):
        eta = eta + betas[j] * covs[j]
    return eta


def _davidson_logp(eta, tau):
    """log (P(A), P(B), P(tie)) = log softmax(η/2, −η/2, τ) (Davidson 1970, Appendix E.1)."""
    logits = jnp.stack([0.5 * eta, -0.5 * eta, tau])
    return logits - jax.nn.logsumexp(logits, axis=0)


def _tie_loss(eta, tau, stats, davidson: bool):
    """ψ(η, τ; w, wy, wt): the per-record loss as a function of η (and τ).

    Fractional ties: −[wy log σ(η) + (w − wy) log σ(−η)] = w·softplus(η) − wy·η, since
    log σ(−η) = −softplus(η); the stable softplus never overflows. Davidson:
    counts n_A = wy − wt/2, n_B = w − wy − wt/2, n_tie = wt.
    """
    w, wy, wt = stats[0], stats[1], stats[2]
    if davidson:
        logp = _davidson_logp(eta, tau)
        counts = jnp.stack([wy - 0.5 * wt, w - wy - 0.5 * wt, wt])
        return -jnp.sum(counts * logp, axis=0)
    return w * softplus(eta) - wy * eta


class PsiTerms(NamedTuple):
    """ψ and its derivatives per record (None where not asked or not in the tie model)."""

    value: jax.Array
    g_e: jax.Array         # ∂ψ/∂η
    g_t: jax.Array | None  # ∂ψ/∂τ (Davidson)
    h_ee: jax.Array | None
    h_et: jax.Array | None
    h_tt: jax.Array | None


def psi_terms(eta, tau, stats, davidson: bool, with_hess: bool = True) -> PsiTerms:
    """ψ(η, τ; stats) and its first (and second) derivatives by forward mode on :func:`_tie_loss`.

    The only non-linear step of a record's loss: everything else is the chain rule through
    the bilinear η. Works in the dtype of ``eta`` and ``stats``.
    """
    one, zero = jnp.ones_like(eta), jnp.zeros_like(eta)
    g_t = h_et = h_tt = h_ee = None
    if davidson:
        psi = lambda e, t: _tie_loss(e, t, stats, True)  # noqa: E731
        value = psi(eta, tau)
        d_e = lambda e, t: jax.jvp(psi, (e, t), (one, zero))[1]  # noqa: E731
        d_t = lambda e, t: jax.jvp(psi, (e, t), (zero, one))[1]  # noqa: E731
        g_e, g_t = d_e(eta, tau), d_t(eta, tau)
        if with_hess:
            h_ee = jax.jvp(lambda e: d_e(e, tau), (eta,), (one,))[1]
            h_et = jax.jvp(lambda t: d_e(eta, t), (tau,), (one,))[1]
            h_tt = jax.jvp(lambda t: d_t(eta, t), (tau,), (one,))[1]
    else:
        psi = lambda e: _tie_loss(e, None, stats, False)  # noqa: E731
        value = psi(eta)
        d1 = lambda e: jax.jvp(psi, (e,), (one,))[1]  # noqa: E731
        g_e = d1(eta)
        if with_hess:
            h_ee = jax.jvp(d1, (eta,), (one,))[1]
    return PsiTerms(value, g_e, g_t, h_ee, h_et, h_tt)


def local_loss(phi_loc, z, stats, layout: Layout):
    """Negative log (quasi-)likelihood of one weighted record or cell: ψ(η(φ), τ)."""
    eta = local_eta(phi_loc, z, layout)
    tau = phi_loc[-1] if layout.structure.davidson else None
    return _tie_loss(eta, tau, stats, layout.structure.davidson)


def shifted_loss(phi_loc, z, cell, shift, stats, layout: Layout):
    """Σ_p ψ(η_p), η_p = η(cell_p) + γ_k(cell_p) · shift_p: each unit p is a cell whose
    s_a − s_b is moved by ``shift_p`` (a prompt random effect).

    η is linear in s_a − s_b with slope γ_k (Eq. 2), so :func:`local_eta` runs once per
    cell and a unit adds its shift times its cell's γ_k: the same η as ``local_loss`` of
    the shifted local vector, to rounding, without the whole predictor (and its gradient's
    scatter over every local slot) per unit.

    phi_loc, z : the cells' local vectors and covariates, slots along axis 0 (n_local × C_).
    cell : (P,) cell of each unit.  shift : (P,) shift of s_a − s_b.  stats : (3, P).
    """
    _, logg, _, tau = _read(phi_loc, layout)
    eta = local_eta(phi_loc, z, layout)[cell] + jnp.exp(logg)[cell] * shift
    return jnp.sum(_tie_loss(eta, None if tau is None else tau[cell], stats, layout.structure.davidson))


class HessianCells(NamedTuple):
    """Per-record Hessian of ℓ in the *reduced* local slots (d = s_a − s_b, then judge slots).

    η depends on the scores only through d, so ∂/∂s_a = ∂/∂d = −∂/∂s_b and the
    (n_local)² Hessian of a record has only 1 + n_j + n_j(n_j+1)/2 distinct entries
    (n_j judge slots: log γ, bias coefficients, τ). Only those are formed, each a row
    over the records.

    dd : (N,) ∂²ℓ/∂d²
    dj : n_j rows (N,) ∂²ℓ/∂d∂φ_j
    jj : rows (N,) ∂²ℓ/∂φ_i∂φ_j for the judge-slot pairs ``upper_pairs(n_j)``
    """

    dd: jax.Array
    dj: tuple
    jj: tuple


def upper_pairs(n_j: int) -> tuple[tuple[int, int], ...]:
    """Judge-slot index pairs (i ≤ j) in the order of ``HessianCells.jj``."""
    return tuple((i, j) for i in range(n_j) for j in range(i, n_j))


def column_derivatives(P, Z, S, layout: Layout, with_hess: bool = True):
    """(ℓ, ∇ℓ, ∇²ℓ) of :func:`local_loss` for a *column batch* of records, exactly.

    P : n_local rows (N,) of local parameters, Z : 2+U rows of covariates, S : 3 rows of
    statistics (arrays with the slot on axis 0, or sequences of rows). Returns ℓ (N,),
    ∇ℓ as a tuple of n_local rows and the Hessian as :class:`HessianCells` (None unless
    ``with_hess``).

    ℓ = ψ(η(φ), τ) by the chain rule, in the reduced slots ρ = (d, judge slots) with
    d = s_a − s_b (η reads the scores only through d): r = ∂η/∂ρ by one reverse pass
    over the batch; η is linear in d and the bias coefficients for fixed log γ, so ∂²η
    is non-zero only in the log-γ row and column, c = ∂r/∂v; ψ's derivatives in η (and
    τ) by forward mode on the same ψ. Then ∇²ℓ = ψ_ηη r rᵀ + ψ_η ∂²η (+ τ terms for
    Davidson), of which only the distinct entries are formed: the Newton solver spends
    most of its time here, and the full (n_local)² array with its in-place updates cost
    ~2× more. Every derivative comes from autodiff of the one definition of η and ψ.
    The slots are kept as separate rows, never stacked into an (n_local, N) array:
    autodiff through slices of a stacked array produced zero-padded (n_local, N)
    cotangents and their sums, a third of the time of a derivative evaluation with
    one cell per record. Verified against ``jax.hessian`` of the summed loss in the tests.
    """
    davidson = layout.structure.davidson
    learn_gamma = layout.structure.learn_gamma
    Z = [Z[i] for i in range(len(Z))]
    S = [S[i] for i in range(len(S))]
    # Reduced slots: ρ = (d, φ_2, …); the local vector (d, 0, φ_2, …) has s_a − s_b = d.
    R = [P[0] - P[1]] + [P[i] for i in range(2, len(P))]
    m = len(R)
    eta_fn = lambda rho: local_eta([rho[0], jnp.zeros_like(rho[0])] + list(rho[1:]), Z, layout)  # noqa: E731
    # Records are independent, so the gradient of Σ_t η_t with respect to R is the
    # column of per-record gradients: one reverse pass instead of one forward pass per
    # slot (XLA does not fold the zero tangents of one-hot directions away).
    grad_eta = jax.grad(lambda rho: jnp.sum(eta_fn(rho)))
    eta, r = jax.lax.optimization_barrier((eta_fn(R), grad_eta(R)))
    tau = R[-1] if davidson else None
    t = psi_terms(eta, tau, S, davidson, with_hess)
    value, g_e = t.value, t.g_e
    grad_r = [g_e * r[i] for i in range(m)]
    if davidson:
        grad_r[m - 1] = grad_r[m - 1] + t.g_t
    grad = (grad_r[0], -grad_r[0], *grad_r[1:])
    if not with_hess:
        return value, grad, None
    h_ee, h_et, h_tt = t.h_ee, t.h_et, t.h_tt
    one = jnp.ones_like(eta)
    # ∂r/∂v: one forward-over-reverse pass in the direction of v alone (reduced slot 1)
    if learn_gamma:
        c = jax.jvp(lambda v: grad_eta(R[:1] + [v] + R[2:]), (R[1],), (one,))[1]
        g_c = [g_e * ci for ci in c]
    else:
        g_c = None
    # Materialize the per-record factors once: otherwise XLA fuses their computation
    # (exponentials, divisions) into every Hessian entry that uses them and recomputes it
    # per entry, which made the 10 entries of OSCAR cost more than 3× the 6 of J+P.
    h_ee, r, g_c = jax.lax.optimization_barrier((h_ee, r, g_c))
    if davidson:
        h_et, h_tt = jax.lax.optimization_barrier((h_et, h_tt))
    x_r = [h_et * r[i] for i in range(m)] if davidson else None
    return value, grad, hessian_cells(lambda i, j: h_ee * r[i] * r[j], g_c, x_r, h_tt, m, layout)


def hessian_cells(quad, g_c, x_r, h_tt, m: int, layout: Layout) -> HessianCells:
    """The distinct entries of ψ_ηη r rᵀ + ψ_η ∂²η (+ the τ terms) in the reduced slots.

    quad(i, j) = ψ_ηη r_i r_j; g_c = ψ_η ∂r/∂v (∂²η is non-zero only in the log-γ row
    and column); x_r = ψ_ητ r and h_tt = ψ_ττ (Davidson) — per record or summed per group.
    """
    v_slot = 1 if layout.structure.learn_gamma else -1
    t_slot = m - 1 if layout.structure.davidson else -1

    def entry(i, j):
        h = quad(i, j)
        if i == v_slot:
            h = h + g_c[j]
        if j == v_slot and i != v_slot:
            h = h + g_c[i]
        if j == t_slot:
            h = h + x_r[i]
        if i == t_slot:
            h = h + x_r[j]
        if i == t_slot and j == t_slot:
            h = h + h_tt
        return h

    n_j = m - 1
    dj = tuple(entry(0, 1 + j) for j in range(n_j))
    jj = tuple(entry(1 + i, 1 + j) for i, j in upper_pairs(n_j))
    return HessianCells(dd=entry(0, 0), dj=dj, jj=jj)


def local_prob(phi_loc, z, layout: Layout):
    """Tie-adjusted slot-A probability p = P(A) + ½ P(tie) (Section 3.1)."""
    eta = local_eta(phi_loc, z, layout)
    if layout.structure.davidson:
        _, _, _, tau = _read(phi_loc, layout)
        pa, _, pt = jnp.exp(_davidson_logp(eta, tau))
        return pa + 0.5 * pt
    return jax.nn.sigmoid(eta)


def expected_stats(eta, tau, stats, davidson: bool):
    """(w, E[wy], E[wt]) at η (and τ) under the model, as rows."""
    w = stats[0]
    if davidson:
        pa, _, pt = jnp.exp(_davidson_logp(eta, tau))
        return [w, w * (pa + 0.5 * pt), w * pt]
    return [w, w * sigmoid(eta), stats[2]]


def local_expected_stats(phi_loc, z, stats, layout: Layout):
    """(w, E[wy], E[wt]) under the model: the Hessian at these is the expected information.

    Used for the model-based covariance and the identification check (B.3), for both
    tie models: for fractional ties this gives Σ p(1−p) r rᵀ exactly.
    """
    eta = local_eta(phi_loc, z, layout)
    tau = _read(phi_loc, layout)[3]
    return jnp.stack(expected_stats(eta, tau, stats, layout.structure.davidson))


def local_index(layout: Layout, a, b, k):
    """φ indices (N × n_local) of each record's slots: (a, b, judge k's slots ``Layout.judge_slots``)."""
    judge = jnp.asarray(layout.judge_slots)[k]
    return jnp.concatenate([jnp.asarray(a, jnp.int32)[..., None], jnp.asarray(b, jnp.int32)[..., None], judge],
                           axis=-1)
