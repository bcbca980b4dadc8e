"""The Appendix G simulation design as a pure, jitted, vmappable generator (Section 7).

G prompts; per prompt an ordered pair of distinct candidates drawn uniformly; display
order tied to verbosity (a less verbose first response is swapped to slot B with
probability 0.7, so the more verbose response is first in 85% of prompts); every judge
judges that displayed pair once (N = K·G); verdicts from a Gaussian copula with
within-prompt correlation ρ:

    L_g = (ν_a − ν_b + e_g)/1.5,   e_g ~ N(0, 0.8²)
    F_t = 1{fam(a) = fam(k)} − 1{fam(b) = fam(k)}
    η*_t = γ*_k (s*_a − s*_b) + c (β*_pos,k + β*_len,k L_g + β*_fam,k F_t)
    Y_t = 1{U_t < σ(η*_t)},  U_t = Φ(√ρ ε_g + √(1−ρ) ε_t)

Optionally (``candidates_per_prompt`` m > 2, ``prompt_candidate_sd`` σ_pc > 0) a prompt
shows m distinct candidates, every one of their m(m−1)/2 pairs is judged by every judge,
and the prompt favours some candidates over others, as real prompts do (a coding question
helps the coder): s*_{i,g} = s*_i + σ_pc w_{g,i}, w_{g,i} ~ N(0, 1). The defaults (m = 2,
σ_pc = 0) are Appendix G exactly, bit for bit.

:class:`SimParams` holds Table G1 by default and can be changed (more candidates or
judges, other values). :func:`simulate` returns design arrays with one cell per record
(static shapes, so replicates vmap) and the true targets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .model.design import Design, DesignArrays, build_design
from .model.likelihood import local_prob
from .model.params import Layout
from .model.links import marginal_win_prob
from .model.spec import ModelSpec, parse_model
from .runtime.lazy_jax import jax, jnp

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SimParams", "SimTruth", "SimData", "copula_verdicts", "family_map_of", "generating_prob", "record_arrays",
           "simulate", "simulate_design", "simulate_frame", "TABLE_G1"]

# The generating model of Appendix G: learned γ, position, length and family biases.
GENERATOR = parse_model("oscar")


@dataclass(frozen=True)
class SimParams:
    """Generating parameters (Table G1 defaults). Arrays are stored as tuples (hashable).

    ``verbosity_offset`` gives ν_i = offset_i + verbosity_slope · s_i; by default
    +0.8 for even and −0.8 for odd candidates. ``candidates_per_prompt`` m: distinct
    candidates shown per prompt, all their pairs judged (2: one pair, Appendix G).
    ``prompt_candidate_sd`` σ_pc: sd of the prompt × candidate score effect (0: none).
    """

    s: tuple = tuple(np.linspace(-0.85, 0.85, 8).tolist())
    log_gamma: tuple = (0.0, 0.2, -0.3, 0.35, -0.15)
    beta_pos: tuple = (0.90, -0.70, 0.50, 1.00, -0.40)
    beta_len: tuple = (0.30, 0.50, 0.40, 0.35, 0.55)
    beta_fam: tuple = (0.18, -0.12, 0.22, 0.10, -0.15)
    judge_family: tuple = (0, 1, 2, 0, 1)
    candidate_family: tuple | None = None  # default: index mod 3
    verbosity_offset: tuple | None = None  # default: +0.8 even, −0.8 odd
    verbosity_slope: float = 0.25
    swap_prob: float = 0.7
    length_noise_sd: float = 0.8
    length_divisor: float = 1.5
    c: float = 1.0
    rho: float = 0.6
    candidates_per_prompt: int = 2
    prompt_candidate_sd: float = 0.0

    def __post_init__(self):
        k = len(self.log_gamma)
        for name in ("beta_pos", "beta_len", "beta_fam", "judge_family"):
            if len(getattr(self, name)) != k:
                raise ValueError(f"SimParams.{name} has {len(getattr(self, name))} entries; expected one per judge ({k})")
        m = len(self.s)
        if m < 2:
            raise ValueError("SimParams.s needs at least two candidates")
        if self.candidate_family is not None and len(self.candidate_family) != m:
            raise ValueError(f"SimParams.candidate_family needs {m} entries")
        if self.verbosity_offset is not None and len(self.verbosity_offset) != m:
            raise ValueError(f"SimParams.verbosity_offset needs {m} entries")
        if not 0.0 <= self.rho <= 1.0:
            raise ValueError(f"SimParams.rho must lie in [0, 1], got {self.rho}")
        if not 2 <= int(self.candidates_per_prompt) <= m:
            raise ValueError(f"SimParams.candidates_per_prompt must lie in [2, {m}], got {self.candidates_per_prompt}")
        if not (np.isfinite(self.prompt_candidate_sd) and self.prompt_candidate_sd >= 0.0):
            raise ValueError(f"SimParams.prompt_candidate_sd must be a finite number ≥ 0, got {self.prompt_candidate_sd}")

    @property
    def pairs_per_prompt(self) -> int:
        m = int(self.candidates_per_prompt)
        return m * (m - 1) // 2

    @property
    def n_cand(self) -> int:
        return len(self.s)

    @property
    def n_judge(self) -> int:
        return len(self.log_gamma)

    def arrays(self) -> dict:
        m = self.n_cand
        cand_fam = self.candidate_family if self.candidate_family is not None else tuple(i % 3 for i in range(m))
        offset = self.verbosity_offset if self.verbosity_offset is not None else tuple(0.8 if i % 2 == 0 else -0.8 for i in range(m))
        s = jnp.asarray(self.s, jnp.float64)
        return {
            "s": s,
            "gamma": jnp.exp(jnp.asarray(self.log_gamma, jnp.float64)),
            "beta_pos": jnp.asarray(self.beta_pos, jnp.float64),
            "beta_len": jnp.asarray(self.beta_len, jnp.float64),
            "beta_fam": jnp.asarray(self.beta_fam, jnp.float64),
            "judge_family": jnp.asarray(self.judge_family, jnp.int32),
            "candidate_family": jnp.asarray(cand_fam, jnp.int32),
            "verbosity": jnp.asarray(offset, jnp.float64) + self.verbosity_slope * s,
        }

    def with_controls(self, c: float | None = None, rho: float | None = None) -> "SimParams":
        return replace(self, c=self.c if c is None else float(c), rho=self.rho if rho is None else float(rho))

    def layout(self, spec: ModelSpec) -> Layout:
        """The layout of ``spec`` on simulated data: judge 0 the reference (as judge0 in
        :func:`simulate_design`), no user covariates."""
        return Layout(self.n_cand, self.n_judge, ref=0, n_cov=0, structure=spec.structure())


TABLE_G1 = SimParams()


class SimTruth(NamedTuple):
    s: jax.Array        # (C,)
    gamma: jax.Array    # (K,)
    kappa: jax.Array    # (K,) γ* RMS(s*)
    q: jax.Array        # (C, C) σ(γ̄* (s*_i − s*_j)), averaged over prompts when σ_pc > 0
    beta_pos: jax.Array
    beta_len: jax.Array
    beta_fam: jax.Array


class SimData(NamedTuple):
    arrays: DesignArrays
    y: jax.Array           # (N,) outcomes
    prompt: jax.Array      # (N,) prompt index
    more_verbose_first: jax.Array  # (G,) bool
    truth: SimTruth


def truth_of(params: SimParams) -> SimTruth:
    p = params.arrays()
    s, gamma = p["s"], p["gamma"]
    gbar = jnp.mean(gamma)
    q = jax.nn.sigmoid(gbar * (s[:, None] - s[None, :]))
    if params.prompt_candidate_sd > 0:
        # the prompt-averaged q: the pair's gap varies over prompts with sd √2 σ_pc
        q = marginal_win_prob(gbar * (s[:, None] - s[None, :]), gbar, np.sqrt(2.0) * params.prompt_candidate_sd)
    # κ* = γ* RMS(s*) with s* centred: fitted scores sum to zero, so a user-supplied s* with
    # a non-zero mean is compared on the same footing (no change for Table G1).
    centred = s - jnp.mean(s)
    return SimTruth(s=s, gamma=gamma, kappa=gamma * jnp.sqrt(jnp.mean(centred ** 2)), q=q,
                    beta_pos=p["beta_pos"], beta_len=p["beta_len"], beta_fam=p["beta_fam"])


def simulate(key, n_prompts: int, params: SimParams = TABLE_G1, controls=None) -> SimData:
    """One simulated dataset of ``n_prompts`` prompts (N = K · n_prompts records).

    Pure and jit-able with ``n_prompts`` and ``params`` static; vmap over ``key`` for
    replicates. Records are ordered prompt-major (record t = g·K + k; with m > 2
    candidates per prompt, t = (g·P + pair)·K + k, P = m(m−1)/2).

    ``controls``: (c, ρ), possibly traced, in place of ``params.c`` and ``params.rho``,
    so that one compiled generator serves every (c, ρ) of a sweep (the same draws).
    """
    controls = (params.c, params.rho) if controls is None else controls
    if params.candidates_per_prompt != 2 or params.prompt_candidate_sd > 0:
        return _simulate_prompt_candidate(key, n_prompts, params, controls)
    p = params.arrays()
    m, n_j = params.n_cand, params.n_judge
    g = n_prompts
    k_a, k_b, k_swap, k_len, k_cl, k_ind = jax.random.split(key, 6)
    a = jax.random.randint(k_a, (g,), 0, m)
    b = jax.random.randint(k_b, (g,), 0, m - 1)
    b = b + (b >= a)  # uniform over the other m − 1 candidates
    nu = p["verbosity"]
    swap = (nu[a] < nu[b]) & (jax.random.uniform(k_swap, (g,)) < params.swap_prob)
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    e = params.length_noise_sd * jax.random.normal(k_len, (g,))
    length = (nu[a] - nu[b] + e) / params.length_divisor

    judge = jnp.tile(jnp.arange(n_j, dtype=jnp.int32), g)
    prompt = jnp.repeat(jnp.arange(g, dtype=jnp.int32), n_j)
    ra, rb, rl = a[prompt], b[prompt], length[prompt]
    arrays, y = _records(params, controls, judge, prompt, ra, rb, p["s"][ra], p["s"][rb], rl, k_cl, k_ind, g)
    return SimData(arrays=arrays, y=y, prompt=prompt, more_verbose_first=nu[a] > nu[b], truth=truth_of(params))


def record_arrays(a, b, k, z, stats, prompt) -> DesignArrays:
    """DesignArrays with one cell per record (static shapes, so replicates vmap): every
    record is its own cell and its own (prompt, cell) pair."""
    n = a.shape[0]
    return DesignArrays(a=a, b=b, k=k, z=z, stats=stats, pair_cell=jnp.arange(n, dtype=jnp.int32), pair_g=prompt,
                        pair_stats=stats)


def generating_prob(params: SimParams, c, judge, ra, rb, sa, sb, rl):
    """(σ(η*), F) of judgments: candidates ``ra`` (score ``sa``) in slot A and ``rb`` in slot B,
    judge ``judge``, length contrast ``rl``, biases scaled by ``c``.

    η* and σ(η*) come from the package's one predictor (:func:`oscar_jax.model.likelihood.local_prob`)
    with the generating coefficients (γ*, c β*) of each record's judge; F from the generator's families.
    """
    p = params.arrays()
    jf, cf = p["judge_family"][judge], p["candidate_family"]
    fam = (cf[ra] == jf).astype(jnp.float64) - (cf[rb] == jf).astype(jnp.float64)
    phi = jnp.stack([sa, sb, jnp.asarray(params.log_gamma, jnp.float64)[judge], c * p["beta_pos"][judge],
                     c * p["beta_len"][judge], c * p["beta_fam"][judge]])
    return local_prob(phi, jnp.stack([rl, fam]), params.layout(GENERATOR)), fam


def copula_verdicts(prob, eps_prompt, eps_record, rho):
    """Y = 1{U < p}, U = Φ(√ρ ε_g + √(1−ρ) ε_t): verdicts with within-prompt dependence ρ (Appendix G)."""
    u = jax.scipy.stats.norm.cdf(jnp.sqrt(rho) * eps_prompt + jnp.sqrt(1.0 - rho) * eps_record)
    return (u < prob).astype(jnp.float64)


def _records(params: SimParams, controls, judge, prompt, ra, rb, sa, sb, rl, k_cl, k_ind, n_prompts: int):
    """Verdicts of every record (:func:`generating_prob`, Gaussian copula per prompt) as DesignArrays."""
    c, rho = controls
    prob, fam = generating_prob(params, c, judge, ra, rb, sa, sb, rl)
    n = judge.shape[0]
    eps_cl = jax.random.normal(k_cl, (n_prompts,))
    eps_ind = jax.random.normal(k_ind, (n,))
    y = copula_verdicts(prob, eps_cl[prompt], eps_ind, rho)
    stats = jnp.stack([jnp.ones(n), y, jnp.zeros(n)], axis=1)
    arrays = record_arrays(ra.astype(jnp.int32), rb.astype(jnp.int32), judge, jnp.stack([rl, fam], axis=1), stats,
                           prompt)
    return arrays, y


def _simulate_prompt_candidate(key, n_prompts: int, params: SimParams, controls) -> SimData:
    """:func:`simulate` with m candidates per prompt and prompt × candidate effects."""
    p = params.arrays()
    m, n_j, mp = params.n_cand, params.n_judge, int(params.candidates_per_prompt)
    g = n_prompts
    k_pick, k_swap, k_len, k_cl, k_ind, k_w = jax.random.split(jax.random.fold_in(key, 19), 6)
    shown = jnp.argsort(jax.random.uniform(k_pick, (g, m)), axis=1)[:, :mp]   # m distinct candidates per prompt
    ii, jj = np.triu_indices(mp, 1)
    n_pair = len(ii)
    a, b = shown[:, ii].reshape(-1), shown[:, jj].reshape(-1)                   # (g·P,) prompt-major
    nu = p["verbosity"]
    swap = (nu[a] < nu[b]) & (jax.random.uniform(k_swap, a.shape) < params.swap_prob)
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    length = (nu[a] - nu[b] + params.length_noise_sd * jax.random.normal(k_len, a.shape)) / params.length_divisor
    w = params.prompt_candidate_sd * jax.random.normal(k_w, (g, m))               # s*_{i,g} − s*_i

    n_rows = g * n_pair
    judge = jnp.tile(jnp.arange(n_j, dtype=jnp.int32), n_rows)
    row = jnp.repeat(jnp.arange(n_rows), n_j)
    prompt = (row // n_pair).astype(jnp.int32)
    ra, rb, rl = a[row], b[row], length[row]
    # s*_{i,g} = s*_i + w_{g,i}: the prompt's own scores
    arrays, y = _records(params, controls, judge, prompt, ra, rb, p["s"][ra] + w[prompt, ra], p["s"][rb] + w[prompt, rb], rl,
                         k_cl, k_ind, g)
    first = jnp.arange(g) * n_pair
    return SimData(arrays=arrays, y=y, prompt=prompt, more_verbose_first=nu[a[first]] > nu[b[first]],
                   truth=truth_of(params))


simulate_jit = jax.jit(simulate, static_argnames=("n_prompts", "params"))


def simulate_frame(seed: int = 0, n_prompts: int = 2000, params: SimParams = TABLE_G1) -> pd.DataFrame:
    """A simulated dataset as a canonical frame (names ``cand0``…, ``judge0``…).

    Lengths are given as ``len_a``/``len_b`` chosen so that log((ℓ_A+1)/(ℓ_B+1)) equals
    the generator's L_g; the design then rescales by the sample s_L, as it would for real
    data. Use :func:`simulate` for the exact Appendix G covariate.
    """
    import pandas as pd

    from .runtime.validate import check_positive_int, check_seed

    # Checked here, not in the jitted generator: a negative count would end in a JAX shape error.
    n_prompts = check_positive_int("n_prompts", n_prompts, minimum=2)
    seed = check_seed("seed", seed)
    data = jax.tree_util.tree_map(np.asarray, simulate_jit(jax.random.PRNGKey(seed), n_prompts, params))
    arr = data.arrays
    base = 200.0
    len_b = np.full(len(data.y), base)
    len_a = (base + 1.0) * np.exp(arr.z[:, 0]) - 1.0
    return pd.DataFrame({
        "prompt": [f"p{g}" for g in data.prompt],
        "candidate_a": [f"cand{i}" for i in arr.a],
        "candidate_b": [f"cand{i}" for i in arr.b],
        "judge": [f"judge{k}" for k in arr.k],
        "outcome": data.y,
        "tie_kind": "",
        "weight": 1.0,
        "len_a": len_a,
        "len_b": len_b,
    })


def family_map_of(params: SimParams = TABLE_G1) -> dict:
    """Family map that reproduces the generator's families for the synthetic names."""
    p = params.arrays()
    fam = {f"cand{i}": f"family{int(f)}" for i, f in enumerate(np.asarray(p["candidate_family"]))}
    fam.update({f"judge{k}": f"family{int(f)}" for k, f in enumerate(np.asarray(p["judge_family"]))})
    return fam


def simulate_design(seed: int = 0, n_prompts: int = 2000, params: SimParams = TABLE_G1) -> Design:
    """A simulated :class:`Design` with names, the generator's families and judge0 as reference.

    Built through the public data path (``build_design``), so it exercises exactly
    what a user's data goes through.
    """
    frame = simulate_frame(seed, n_prompts, params)
    return build_design(frame, reference_judge="judge0", family_map=family_map_of(params))
