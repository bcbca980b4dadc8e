"""Greedy batch design: the judgments that most reduce a target's expected uncertainty per unit cost.

Host numpy on the free block of θ (dim θ is at most a few hundred; the candidates'
information factors come from one compiled program, :mod:`oscar_jax.infer.judgment_info`).

The expected covariance after a batch. The fit's cluster sandwich is Σ = B V B with
B = H⁻¹ (H the penalized Hessian, the bread) and V the prompt-cluster meat. A judgment
placed on a new prompt is a new cluster: under the model it adds its expected
information u uᵀ to the bread and the expected outer product of its score, also u uᵀ,
to the meat. Planning uses the meat raised, direction by direction, to at least the
bread (:func:`planning_covariance`): within-prompt dependence can widen the sandwich
beyond the model-based B, but where the estimated meat falls below the bread that is
mostly the noise of a G-term estimate — and there the formula below would make a new
judgment *increase* the variance (for a scalar, V < H/2 suffices), so that a greedy on the
raw sandwich avoids the most informative judgments. With a = B u, e = Σ u, s = uᵀa,
q = uᵀΣu and c = 1/(1 + s):

    B' = B − c a aᵀ,        Σ' = B'(V + u uᵀ)B' = Σ − c (a eᵀ + e aᵀ) + c² (q + 1) a aᵀ.

n copies of one judgment are the same rank-one update with √n u. The greedy keeps, for
every candidate and target row j (gradient g_j), α = gᵀBu and β = gᵀΣu and updates them
by the same formulas after each pick, so a step costs O(candidates × (dim θ + rows)).

Criteria (``Criterion.kind``):

* ``"sign"`` — Σ_j ω_j [P(the sign of h_j is wrong after the batch) + δ V_j/V⁰_j], preposterior:
  with the current estimate m_j and variance V⁰_j, and V_j after, P(right) =
  1 − 2 T(|m|/√V⁰, √(V/(V⁰ − V))) (Owen's T; :func:`sign_probability`). Summed over the
  leader's gaps to its rivals it is the union bound of a wrong top-1; over all pairs, the
  expected number of discordant pairs (so 1 − 2·it/#pairs is the expected Kendall τ).
  The small relative-variance term (δ = :data:`RELATIVE_VARIANCE_WEIGHT`) matters only
  where every sign already looks settled at the current estimate — whose standard errors
  are themselves uncertain in small designs — and keeps the rest of the budget on those
  gaps instead of leaving it unspent.
* ``"variance"`` — Σ_j ω_j V_j (interval widths of chosen pairs, judge parameters).

Each step picks the candidate whose first-order reduction of the criterion per unit cost
is largest (the sign criterion's slope is a secant over the best candidate's step, as
its derivative is unbounded at V = V⁰ when m = 0).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dger
from scipy.special import ndtr, owens_t

__all__ = ["Allocation", "Criterion", "RELATIVE_VARIANCE_WEIGHT", "criterion_value", "greedy_allocation",
           "planning_covariance", "sign_probability", "top1_probability"]

SECANT_EVERY = 16  # greedy steps between recomputations of the sign criterion's secant steps

# δ of the sign criterion: shrinking a gap's variance to nothing is worth 1 % of a wrong sign, far
# below the sign term's own slope (~0.3 per unit of V/V⁰ at a tied gap) until that vanishes.
RELATIVE_VARIANCE_WEIGHT = 0.01


class Criterion(NamedTuple):
    """Target rows j: θ-gradients (J, P), the kind of criterion, estimates m_j and weights ω_j."""

    grads: np.ndarray
    kind: str
    estimates: np.ndarray
    weights: np.ndarray


class Allocation(NamedTuple):
    counts: np.ndarray     # (N_c,) judgments chosen per candidate
    cov_before: np.ndarray  # (P, P) the planning covariance now (:func:`planning_covariance`)
    cov_after: np.ndarray  # (P, P) its expected value after the batch (zeros at fixed coordinates)
    spent: float
    steps: int
    exhausted: bool        # stopped before the budget: no candidate reduces the criterion
    sequence: np.ndarray   # candidate of each chosen judgment, in plan order (the most valuable first)


def sign_probability(m, v0, v):
    """P(the sign of the estimate of h after the batch equals the sign of h), preposterior.

    h ~ N(m, V⁰) now; after data worth variance V the estimate m' ~ N(m, V⁰ − V) and
    h | m' ~ N(m', V). The two orthants of (h, m') sum to 1 − 2 T(|m|/√V⁰, √(V/(V⁰ − V))),
    T Owen's: Φ(|m|/√V⁰) at V = V⁰ (no new data), 1 at V = 0.
    """
    m, v0, v = (np.asarray(x, dtype=float) for x in (m, v0, v))
    v0 = np.maximum(v0, 1e-300)
    v = np.clip(v, 0.0, v0)
    gained = v0 - v
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(gained > 0, np.sqrt(v / np.where(gained > 0, gained, 1.0)), np.inf)
    return np.where(gained > 0, 1.0 - 2.0 * owens_t(np.abs(m) / np.sqrt(v0), np.where(np.isfinite(slope), slope, 0.0)),
                    ndtr(np.abs(m) / np.sqrt(v0)))


def criterion_value(crit: Criterion, v0: np.ndarray, v: np.ndarray) -> float:
    """Σ_j ω_j f_j: wrong-sign probabilities (``"sign"``) or variances (``"variance"``)."""
    if crit.kind == "sign":
        wrong = 1.0 - sign_probability(crit.estimates, v0, v)
        return float(np.sum(crit.weights * (wrong + RELATIVE_VARIANCE_WEIGHT * v / np.maximum(v0, 1e-300))))
    return float(np.sum(crit.weights * v))


def _slopes(crit: Criterion, v0, v, best_step):
    """∂(criterion)/∂V_j ≥ 0 per row (a secant over ``best_step`` for the sign criterion)."""
    if crit.kind != "sign":
        return crit.weights
    step = np.clip(best_step, 1e-9 * v0, np.maximum(v * (1.0 - 1e-12), 1e-9 * v0))
    lower = sign_probability(crit.estimates, v0, np.maximum(v - step, 0.0))
    secant = np.maximum(lower - sign_probability(crit.estimates, v0, v), 0.0) / step
    return crit.weights * (secant + RELATIVE_VARIANCE_WEIGHT / np.maximum(v0, 1e-300))


def _inverse(h):
    return cho_solve(cho_factor(h, lower=True), np.eye(h.shape[0]))


def planning_covariance(hess, cov) -> np.ndarray:
    """B V⁺ B with V⁺ the meat V = H Σ H raised to at least the bread H in every direction.

    In the whitened basis L⁻¹ V L⁻ᵀ (H = L Lᵀ) the eigenvalues below 1 become 1, so the
    result is at least the model-based B = H⁻¹ and equals Σ where the sandwich exceeds it.
    ``hess``, ``cov``: free block (P, P).
    """
    h = np.asarray(hess, float)
    chol = np.linalg.cholesky(h)
    whiten = np.linalg.solve(chol, np.linalg.solve(chol, (h @ np.asarray(cov, float) @ h).T).T)
    w, q = np.linalg.eigh(0.5 * (whiten + whiten.T))
    raised = (q * np.maximum(w, 1.0)) @ q.T                       # L⁻¹ V⁺ L⁻ᵀ
    root = np.linalg.solve(chol.T, np.eye(h.shape[0]))             # L⁻ᵀ: B = L⁻ᵀ L⁻¹
    out = root @ raised @ root.T
    return 0.5 * (out + out.T)


class _State:
    """The running quantities of the greedy (free block): B, Σ, and per candidate s = uᵀBu,
    q = uᵀΣu, α = GBu, β = GΣu; per target row its variance V.

    α and β (candidates × rows) dominate the cost: they are kept transposed (Fortran order
    of the candidates × rows view) so that each rank-one update is one in-place BLAS ``dger``
    pass, and the gains read them in two fused passes without forming the change of every
    row's variance (a greedy step over 5,440 candidates and 136 rows: 43 ms → 8 ms).
    """

    def __init__(self, u, grads, binv, sigma):
        self.u, self.grads, self.binv, self.sigma = u, grads, binv, sigma
        self.v = np.einsum("jp,pq,jq->j", grads, sigma, grads)
        self.refresh()

    def refresh(self):
        """Recompute from B and Σ (bounds the drift of the running updates)."""
        self.binv, self.sigma = 0.5 * (self.binv + self.binv.T), 0.5 * (self.sigma + self.sigma.T)
        ub, us = self.u @ self.binv, self.u @ self.sigma
        self.s, self.q = np.sum(self.u * ub, 1), np.sum(self.u * us, 1)
        self.alpha_t = np.asfortranarray((ub @ self.grads.T).T)   # (rows, candidates)
        self.beta_t = np.asfortranarray((us @ self.grads.T).T)

    def change(self, n):
        """(N_c, J) change of each row's variance if n_c copies of candidate c were added."""
        c = 1.0 / (1.0 + n * self.s)
        a, b = self.alpha_t.T, self.beta_t.T
        return -2.0 * (c * n)[:, None] * a * b + (c * c * (n * self.q + 1.0) * n)[:, None] * a ** 2

    def reduction(self, n, slope):
        """−Σ_j slope_j ΔV_cj for n_c copies of every candidate c (no (N_c, J) temporary)."""
        c = 1.0 / (1.0 + n * self.s)
        cross = np.einsum("jc,jc,j->c", self.alpha_t, self.beta_t, slope)
        square = np.einsum("jc,jc,j->c", self.alpha_t, self.alpha_t, slope)
        return 2.0 * c * n * cross - c * c * (n * self.q + 1.0) * n * square

    def add(self, pick: int, k: float):
        """Add k copies of candidate ``pick``: one rank-one update with √k u (see the module docstring)."""
        root = np.sqrt(k) * self.u[pick]
        a, e = self.binv @ root, self.sigma @ root
        cs = 1.0 / (1.0 + k * self.s[pick])
        f = cs * cs * (k * self.q[pick] + 1.0)
        ua, ue, ga, ge = self.u @ a, self.u @ e, self.grads @ a, self.grads @ e
        self.sigma += -cs * (np.outer(a, e) + np.outer(e, a)) + f * np.outer(a, a)
        self.binv -= cs * np.outer(a, a)
        self.s = self.s - cs * ua ** 2
        self.q = self.q - 2.0 * cs * ua * ue + f * ua ** 2
        # βᵀ −= cs (ga ueᵀ + ge uaᵀ) − f ga uaᵀ ; αᵀ −= cs ga uaᵀ — in place
        self.beta_t = dger(-cs, ga, ue, a=self.beta_t, overwrite_a=True)
        self.beta_t = dger(1.0, f * ga - cs * ge, ua, a=self.beta_t, overwrite_a=True)
        self.alpha_t = dger(-cs, ga, ua, a=self.alpha_t, overwrite_a=True)
        self.v = self.v - 2.0 * cs * ga * ge + f * ga ** 2


def _explore(cost, avail, budget: float, rng) -> np.ndarray:
    """Judgments drawn at random, each candidate with probability ∝ 1/cost (so the spending is
    uniform over candidates: pairs, orders and judges), until ``budget`` is spent."""
    picks, avail = [], avail.copy()
    while True:
        ok = np.flatnonzero((avail >= 1) & (cost <= budget + 1e-9))
        if ok.size == 0:
            return np.asarray(picks, dtype=np.int64)
        weight = 1.0 / cost[ok]
        pick = int(ok[rng.choice(ok.size, p=weight / weight.sum())])
        picks.append(pick)
        avail[pick] -= 1
        budget -= cost[pick]


def greedy_allocation(factors, cost, available, hess, cov, mask, crit: Criterion, budget: float, *,
                      rng: np.random.Generator, explore: float = 0.0, max_steps: int = 2000,
                      refresh: int = 256) -> Allocation:
    """Choose judgments greedily until ``budget`` is spent.

    Parameters
    ----------
    factors : (N_c, P) information factors u of the candidates (:func:`~oscar_jax.infer.judgment_info.information_factors`).
    cost : (N_c,) cost of one judgment; ``available`` : (N_c,) how many may be chosen (inf: any).
    hess, cov : (P, P) penalized Hessian and cluster sandwich of the current fit; ``mask`` (P,) free coordinates.
        The greedy works on :func:`planning_covariance` of them.
    crit : the target. ``budget`` : total cost allowed.
    rng : draws the exploration share and breaks exact ties (identical candidates, e.g. every
        judge under a judge-blind model) at random.
    explore : share of the budget spent at random, uniformly over the candidates (pairs,
        orders, judges), before the greedy, which then counts it: every parameter keeps being
        learnt at a rate that does not depend on the current estimates (see
        :data:`~oscar_jax.plan.EXPLORE`).
    max_steps : at most this many greedy steps; a step adds n = ⌈picks / max_steps⌉ copies
        of its candidate (an exact rank-one update), so a large budget costs no more steps.
    """
    free = np.flatnonzero(np.asarray(mask) > 0)
    u = np.asarray(factors, float)[:, free]
    grads = np.asarray(crit.grads, float)[:, free]
    cost = np.asarray(cost, float)
    avail = np.asarray(available, float).copy()
    hess = np.asarray(hess, float)[np.ix_(free, free)]
    start = planning_covariance(hess, np.asarray(cov, float)[np.ix_(free, free)])
    state = _State(u, grads, _inverse(hess), start.copy())
    v0 = state.v.copy()
    counts = np.zeros(u.shape[0])
    random_picks = _explore(cost, avail, explore * float(budget), rng)
    for pick, k in zip(*np.unique(random_picks, return_counts=True)):
        state.add(int(pick), float(k))
        counts[pick] += k
        avail[pick] -= k
    state.refresh()
    remaining = float(budget) - float(cost[random_picks].sum())
    n_step = max(1, int(np.ceil(remaining / max(float(cost.min()), 1e-300) / max_steps)))
    steps, exhausted, greedy = 0, False, []
    best_step = None
    while True:
        n = np.minimum(np.minimum(avail, np.floor(remaining / cost + 1e-9)), n_step)
        ok = n >= 1
        if not ok.any():
            break
        n = np.where(ok, n, 1.0)
        if crit.kind == "sign" and (best_step is None or steps % SECANT_EVERY == 0):
            # the secant's step: each row's largest one-step reduction (refreshed every few steps)
            best_step = np.max(np.where(ok[:, None], -state.change(n), 0.0), axis=0)
        slope = _slopes(crit, v0, state.v, best_step)
        gain = np.where(ok, state.reduction(n, slope) / (n * cost), -np.inf)
        best = float(np.max(gain))
        if not best > 0.0:
            exhausted = True
            break
        ties = np.flatnonzero(gain >= best * (1.0 - 1e-12))
        pick = int(ties[0] if ties.size == 1 else rng.choice(ties))
        k = float(n[pick])
        state.add(pick, k)
        counts[pick] += k
        greedy += [pick] * int(k)
        avail[pick] -= k
        remaining -= k * cost[pick]
        steps += 1
        if steps % refresh == 0:
            state.refresh()
    before, out = np.zeros((len(mask), len(mask))), np.zeros((len(mask), len(mask)))
    before[np.ix_(free, free)] = start
    out[np.ix_(free, free)] = 0.5 * (state.sigma + state.sigma.T)
    # Plan order: the greedy's (most valuable first), the exploration judgments spread evenly through it.
    n_total, m = len(greedy) + len(random_picks), len(random_picks)
    is_random = np.zeros(n_total, bool)
    is_random[np.floor((np.arange(m) + 0.5) * n_total / max(m, 1)).astype(int)] = True  # spacing ≥ 1: distinct
    sequence = np.empty(n_total, np.int64)
    sequence[is_random], sequence[~is_random] = random_picks, greedy
    return Allocation(counts=counts, cov_before=before, cov_after=out, spent=float(budget) - remaining,
                      steps=steps, exhausted=exhausted, sequence=sequence)


def top1_probability(x, cov_x, cov_x_after, rng: np.random.Generator, draws: int = 20_000) -> tuple[float, float]:
    """(P(the current leader is the best) now, expected P(the leader after the batch is the best)).

    Normal approximation of the scores x (C,) with covariance ``cov_x`` now and
    ``cov_x_after`` after the batch, preposterior as in :func:`sign_probability`: the
    estimate after is x' ~ N(x, Σ − Σ') and the truth x' + N(0, Σ'); Σ − Σ' is clipped to
    be positive semi-definite and the truth keeps total covariance Σ.
    """
    def root(m):
        w, vec = np.linalg.eigh(0.5 * (m + m.T))
        return vec * np.sqrt(np.clip(w, 0.0, None))

    x = np.asarray(x, float)
    gained = root(np.asarray(cov_x) - np.asarray(cov_x_after))
    rest = root(np.asarray(cov_x) - gained @ gained.T)
    z1 = rng.standard_normal((draws, x.size))
    z2 = rng.standard_normal((draws, x.size))
    full = root(np.asarray(cov_x))
    before = float(np.mean(np.argmax(x + z1 @ full.T, axis=1) == np.argmax(x)))
    estimate = x + z1 @ gained.T
    truth = estimate + z2 @ rest.T
    after = float(np.mean(np.argmax(truth, axis=1) == np.argmax(estimate, axis=1)))
    return before, after
