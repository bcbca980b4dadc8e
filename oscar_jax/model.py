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

import jax
import jax.numpy as jnp

from . import _x64  # noqa: F401  (float64 before any array exists)
from .params import Layout

__all__ = ["column_derivatives", "local_derivatives", "local_eta", "local_loss", "local_prob", "local_expected_stats", "local_index"]


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
    """The covariate multiplying each bias coefficient, in slot order.

    z = (L, F, X_1..X_U); position multiplies 1.
    """
    cols = []
    for t in layout.bias_terms:
        if t == "pos":
            cols.append(jnp.ones_like(z[0]))
        elif t == "len":
            cols.append(z[0])
        elif t == "fam":
            cols.append(z[1])
        elif t == "cov":
            cols.extend(z[2 + j] for j in range(layout.n_cov))
    return jnp.stack(cols) if cols else jnp.zeros((0,) + z.shape[1:], z.dtype)


def local_eta(phi_loc, z, layout: Layout):
    """η = γ_k (s_a − s_b) + β_pos,k + β_len,k L + β_fam,k F + Σ_j β_cov,k,j X_j (Eq. 2)."""
    diff, logg, betas, _ = _read(phi_loc, layout)
    # Sum over the slot axis (not jnp.dot) so that the same code serves one record and a
    # column batch (slots × N).
    return jnp.exp(logg) * diff + jnp.sum(betas * _bias_covariates(z, layout), axis=0)


def _davidson_logp(eta, tau):
    """log (P(A), P(B), P(tie)) = log softmax(η/2, −η/2, τ) (Davidson 1970, Appendix E.1)."""
    logits = jnp.stack([0.5 * eta, -0.5 * eta, tau])
    return logits - jax.nn.logsumexp(logits, axis=0)


def _sigmoid(x):
    # From e = exp(−|x|) in (0, 1]: never overflows, and shares the exponential with
    # softplus below.
    e = jnp.exp(-jnp.abs(x))
    return jnp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@jax.custom_jvp
def softplus(x):
    """log(1 + eˣ) = max(x, 0) + log1p(e^{−|x|}): no overflow for any x.

    Its derivative is σ(x), computed from the same exponential (no logarithm): on CPU a
    float64 log1p costs ~4 exponentials, so derivatives that avoid it matter for the
    Newton solver, which needs ψ', ψ'' for every record at every step.
    """
    return jnp.maximum(x, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(x)))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return softplus(x), _sigmoid(x) * dx


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


def local_loss(phi_loc, z, stats, layout: Layout):
    """Negative log (quasi-)likelihood of one weighted record or cell: ψ(η(φ), τ)."""
    eta = local_eta(phi_loc, z, layout)
    tau = phi_loc[-1] if layout.structure.davidson else None
    return _tie_loss(eta, tau, stats, layout.structure.davidson)


def local_derivatives(phi_loc, z, stats, layout: Layout):
    """(ℓ, ∇ℓ, ∇²ℓ) of :func:`local_loss` in the local slots, exactly, by the chain rule.

    ℓ = ψ(η(φ), τ). η is linear in the scores and bias coefficients for fixed log γ, so
    ∇²η is non-zero only in the log-γ row and column: ∇²η = e_v cᵀ + c e_vᵀ − c_v e_v e_vᵀ
    with c = ∂(∇η)/∂v (one forward-mode pass). Then
    ∇²ℓ = ψ_ηη r rᵀ + ψ_η ∇²η (+ τ terms for Davidson), r = ∇η. Every derivative comes
    from autodiff of the one definition of η and ψ; the structure only tells which
    second derivatives vanish, which makes this several times cheaper than
    ``jax.hessian(local_loss)`` (verified equal in the tests).
    """
    n = phi_loc.shape[0]
    davidson = layout.structure.davidson
    eta_fn = lambda p: local_eta(p, z, layout)  # noqa: E731
    eta, r = jax.jvp(eta_fn, (phi_loc,), (jnp.zeros_like(phi_loc),))[0], jax.jacfwd(eta_fn)(phi_loc)
    if layout.structure.learn_gamma:
        e_v = jnp.zeros(n, phi_loc.dtype).at[2].set(1.0)
        c = jax.jvp(jax.jacfwd(eta_fn), (phi_loc,), (e_v,))[1]
        d2 = jnp.outer(e_v, c) + jnp.outer(c, e_v) - c[2] * jnp.outer(e_v, e_v)
    else:
        d2 = jnp.zeros((n, n), phi_loc.dtype)
    if davidson:
        psi = lambda x: _tie_loss(x[0], x[1], stats, True)  # noqa: E731
        x = jnp.stack([eta, phi_loc[-1]])
        value, gx = jax.value_and_grad(psi)(x)
        hx = jax.hessian(psi)(x)
        e_t = jnp.zeros(n, phi_loc.dtype).at[n - 1].set(1.0)
        grad = gx[0] * r + gx[1] * e_t
        hess = (hx[0, 0] * jnp.outer(r, r) + gx[0] * d2 + hx[0, 1] * (jnp.outer(r, e_t) + jnp.outer(e_t, r))
                + hx[1, 1] * jnp.outer(e_t, e_t))
        return value, grad, hess
    psi = lambda e: _tie_loss(e, None, stats, False)  # noqa: E731
    value, g1 = jax.value_and_grad(psi)(eta)
    g2 = jax.grad(jax.grad(psi))(eta)
    return value, g1 * r, g2 * jnp.outer(r, r) + g1 * d2


def column_derivatives(P, Z, S, layout: Layout, with_hess: bool = True):
    """(ℓ, ∇ℓ, ∇²ℓ) of :func:`local_loss` for a *column batch* of records, exactly.

    P : (n_local, N) local parameters, Z : (2+U, N) covariates, S : (3, N) statistics —
    records along the trailing (minor) axis. Returns ℓ (N,), ∇ℓ (n_local, N) and
    ∇²ℓ (n_local, n_local, N) (None unless ``with_hess``).

    ℓ = ψ(η(φ), τ) by the chain rule: r = ∇η by one reverse pass over the batch;
    η is linear in the scores and bias coefficients for fixed log γ, so ∇²η is non-zero
    only in the log-γ row and column, c = ∂r/∂v; ψ's derivatives in η (and τ) by
    forward mode on the same ψ. Then ∇²ℓ = ψ_ηη r rᵀ + ψ_η ∇²η (+ τ terms for Davidson).
    Every derivative comes from autodiff of the one definition of η and ψ; keeping the
    records on the minor axis lets XLA vectorise over them (a ``vmap`` over records puts
    the few slots on the minor axis and runs ~5× slower on CPU). Verified against
    ``jax.hessian`` of the summed loss in the tests.
    """
    n = P.shape[0]
    davidson = layout.structure.davidson
    eta_fn = lambda p: local_eta(p, Z, layout)  # noqa: E731

    def unit(j):
        return jnp.zeros_like(P).at[j].set(1.0)

    # Records are independent, so the gradient of Σ_t η_t with respect to P is the
    # column of per-record gradients: one reverse pass instead of one forward pass per
    # slot (XLA does not fold the zero tangents of one-hot directions away).
    grad_eta = jax.grad(lambda p: jnp.sum(eta_fn(p)))
    eta = eta_fn(P)
    r = grad_eta(P)
    zero = jnp.zeros_like(eta)
    if davidson:
        tau = P[-1]
        psi = lambda e, t: _tie_loss(e, t, S, True)  # noqa: E731
        value = psi(eta, tau)
        one = jnp.ones_like(eta)
        d_e = lambda e, t: jax.jvp(psi, (e, t), (one, zero))[1]  # noqa: E731
        d_t = lambda e, t: jax.jvp(psi, (e, t), (zero, one))[1]  # noqa: E731
        g_e, g_t = d_e(eta, tau), d_t(eta, tau)
        grad = g_e * r + (jnp.arange(n) == n - 1)[:, None] * g_t
    else:
        psi = lambda e: _tie_loss(e, None, S, False)  # noqa: E731
        value = psi(eta)
        one = jnp.ones_like(eta)
        d1 = lambda e: jax.jvp(psi, (e,), (one,))[1]  # noqa: E731
        g_e = d1(eta)
        grad = g_e * r
    if not with_hess:
        return value, grad, None
    hess = r[:, None] * r[None, :]
    if davidson:
        h_ee = jax.jvp(lambda e: d_e(e, tau), (eta,), (one,))[1]
        h_et = jax.jvp(lambda t: d_e(eta, t), (tau,), (one,))[1]
        h_tt = jax.jvp(lambda t: d_t(eta, t), (tau,), (one,))[1]
        e_t = (jnp.arange(n) == n - 1).astype(P.dtype)[:, None]
        hess = (h_ee * hess + h_et * (r[:, None] * e_t[None, :] + e_t[:, None] * r[None, :])
                + h_tt * (e_t[:, None] * e_t[None, :]))
    else:
        hess = jax.jvp(d1, (eta,), (one,))[1] * hess
    if layout.structure.learn_gamma:
        c = jax.jvp(grad_eta, (P,), (unit(2),))[1]  # ∂r/∂v: one forward-over-reverse pass
        # ∇²η is non-zero only in the log-γ row and column (index 2): add ψ_η c there
        # instead of forming a dense (n, n, N) ∇²η.
        gc = g_e * c
        hess = hess.at[2, :].add(gc).at[:, 2].add(gc).at[2, 2].add(-gc[2])
    return value, grad, hess


def local_prob(phi_loc, z, layout: Layout):
    """Tie-adjusted slot-A probability p = P(A) + ½ P(tie) (Section 3.1)."""
    eta = local_eta(phi_loc, z, layout)
    if layout.structure.davidson:
        _, _, _, tau = _read(phi_loc, layout)
        pa, _, pt = jnp.exp(_davidson_logp(eta, tau))
        return pa + 0.5 * pt
    return jax.nn.sigmoid(eta)


def local_expected_stats(phi_loc, z, stats, layout: Layout):
    """(w, E[wy], E[wt]) under the model: the Hessian at these is the expected information.

    Used for the model-based covariance and the identification check (B.3), for both
    tie models: for fractional ties this gives Σ p(1−p) r rᵀ exactly.
    """
    eta = local_eta(phi_loc, z, layout)
    w = stats[0]
    if layout.structure.davidson:
        _, _, _, tau = _read(phi_loc, layout)
        pa, _, pt = jnp.exp(_davidson_logp(eta, tau))
        return jnp.stack([w, w * (pa + 0.5 * pt), w * pt])
    return jnp.stack([w, w * _sigmoid(eta), stats[2]])


def local_index(layout: Layout, a, b, k):
    """φ indices (N × n_local) of each record's slots; jnp twin of ``Layout.local_index``."""
    pb = layout.phi_blocks
    cols = [a, b]
    if layout.structure.learn_gamma:
        cols.append(pb["v"].start + k)
    for t in layout.bias_terms:
        if t == "cov":
            cols += [pb["cov"].start + k * layout.n_cov + j for j in range(layout.n_cov)]
        else:
            cols.append(pb[t].start + k)
    return jnp.stack([jnp.asarray(c, jnp.int32) for c in cols], axis=1)
