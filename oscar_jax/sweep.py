"""Simulation sweeps: the Section 7 study (Appendix G) as one compiled batch per method.

A *setting* is (N, c, ρ): N judgments (N = K · G prompts), bias multiplier c and
within-prompt dependence ρ of the Appendix G.1 generator. For each setting the sweep
draws every replicate's dataset with :func:`oscar_jax.simulate.simulate` (vmapped over
keys), and for each method fits all replicates with :func:`oscar_jax.core.fit_core`
(vmapped over the batch of designs, zero start, λ = 0.05, reference judge 0), computes
both covariances with :func:`oscar_jax.sandwich.covariances`, the targets and their
delta-method standard errors, and the per-replicate metrics of Section 7 — all inside
one jitted function, so a (setting, method) is one compiled program run on a batch.

Per replicate (Section 7, G.3):

* ``q_rmse``: RMSE of q̂_ij = σ(ĥ_ij) over the C(C−1)/2 pairs (28 in Table G1);
* ``kappa_rmse``: RMSE of κ̂_k = γ̂_k RMS(ŝ) across judges;
* ``kendall_tau``: Kendall τ_b between ŝ and s* (:func:`kendall_tau_b`);
* ``top1``: 1 if argmax ŝ is the true best candidate;
* ``coverage_cluster`` / ``coverage_model``: share of the pairs whose interval
  σ(ĥ ± 1.96 se) contains q*, with se from the delta method on h_ij = γ̄(s_i − s_j)
  and the prompt-cluster or the model-based covariance;
* ``q_bias`` / ``kappa_bias``: signed mean errors (attenuation shows as q̂ pulled
  towards ½, i.e. ``q_bias`` > 0, since every q*_ij with i < j is below ½ in Table G1).

Replicates whose fit fails a B.3 check are flagged (``ok`` = False, one column per
check) and left out of every aggregate; :meth:`SweepResult.table` reports how many.
Aggregates are means with Monte Carlo SE = sd/√R and t_{R−1} intervals; method
differences are paired by replicate (G.3).

Randomness: replicate r of a setting with N judgments uses the key
``fold_in(fold_in(PRNGKey(seed), N), r)``. It does not depend on how many replicates,
which methods or which other settings are run, so adding replicates never changes
earlier ones, and the controls at one N share their candidate pairs, length noise and
copula draws with the main setting (common random numbers: control contrasts are
paired too).

Example
-------
>>> from oscar_jax.sweep import sweep
>>> res = sweep(ns=(250,), reps=4, methods=("j", "oscar"), seed=0)  # doctest: +SKIP
>>> res.table()[["n", "method", "q_rmse", "coverage_cluster"]]  # doctest: +SKIP
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from statistics import NormalDist
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from . import _x64, program_cache  # noqa: F401
from .batching import default_vmap_width, map_replicates
from .core import fit_core
from .params import Layout
from .progress import progress
from .sandwich import covariances, delta_se, targets
from .simulate import TABLE_G1, SimParams, simulate, truth_of
from .sharding import to_host
from .spec import ModelSpec, parse_model
from .validate import OscarInputError, check_positive_int

__all__ = [
    "DEFAULT_METHODS",
    "DEFAULT_NS",
    "METRICS",
    "ReplicateMetrics",
    "Setting",
    "SweepResult",
    "TABLE_G2_CONTROLS",
    "evaluate_replicate",
    "kendall_tau_b",
    "compare_with_paper",
    "main_and_controls",
    "replicate_keys",
    "settings_grid",
    "sweep",
]

DEFAULT_NS = (1000, 2500, 5000, 10000)
DEFAULT_METHODS = ("j", "j+p", "j+l", "j+f", "oscar")
# Table G2: (c, ρ) of the controls "no bias", "no dependence", "neither", run at N = 2500.
TABLE_G2_CONTROLS = ((0.0, 0.6), (1.0, 0.0), (0.0, 0.0))
TABLE_G2_N = 2500
METRICS = ("q_rmse", "kappa_rmse", "kendall_tau", "top1", "coverage_cluster", "coverage_model",
           "q_bias", "kappa_bias")
CHECKS = ("stationary", "identified", "curvature_ok", "at_bound", "clusters_ok", "connected")
Z_95 = 1.96  # Equation (10) uses 1.96, not Φ⁻¹(0.975) = 1.95996…; kept for comparability
# Records per vmapped chunk. A replicate of N records needs roughly 30 kB × N/1000 per
# OSCAR fit in flight (per-record local Hessians, scatter buffers); 250k records keep a
# chunk below ~1 GB on a machine shared by several jobs.
DEFAULT_RECORD_BUDGET = 250_000


class Setting(NamedTuple):
    """One simulation setting: N judgments, bias multiplier c, dependence ρ."""

    n: int
    c: float
    rho: float


def settings_grid(ns: Sequence[int], c: Sequence[float], rho: Sequence[float]) -> list[Setting]:
    """All (N, c, ρ) combinations, N outermost (the order the sweep runs them)."""
    return [Setting(int(n), float(cc), float(r)) for n in ns for cc in c for r in rho]


def main_and_controls(ns: Sequence[int] = DEFAULT_NS, params: SimParams = TABLE_G1,
                      control_n: int = TABLE_G2_N) -> list[Setting]:
    """The paper's main setting at every N plus the three Table G2 controls at ``control_n``."""
    main = [Setting(int(n), params.c, params.rho) for n in ns]
    return main + [Setting(int(control_n), c, r) for c, r in TABLE_G2_CONTROLS]


# ---------------------------------------------------------------------------------------
# Pure, vmappable pieces
# ---------------------------------------------------------------------------------------

def kendall_tau_b(x, y) -> jax.Array:
    """Kendall's τ_b between two score vectors (ties allowed), pure and vmappable.

    τ_b = (n_c − n_d) / √((n_0 − n_x)(n_0 − n_y)) over the n_0 = C(C−1)/2 pairs, with n_x
    (n_y) the pairs tied in x (y): the same definition as ``scipy.stats.kendalltau``
    (variant "b"). O(C²) with C the vector length, which is small here (candidates).

    Parameters
    ----------
    x, y : (C,) arrays.

    Returns
    -------
    () float: NaN when either vector is constant (as scipy).
    """
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    n = x.shape[0]
    iu = np.triu_indices(n, 1)
    dx = jnp.sign(x[:, None] - x[None, :])[iu]
    dy = jnp.sign(y[:, None] - y[None, :])[iu]
    n0 = dx.shape[0]
    num = jnp.sum(dx * dy)
    untied_x = n0 - jnp.sum(dx == 0)
    untied_y = n0 - jnp.sum(dy == 0)
    den = jnp.sqrt(untied_x.astype(x.dtype) * untied_y.astype(x.dtype))
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.nan)


class ReplicateMetrics(NamedTuple):
    """Per-replicate metrics and B.3 check flags (leading axis B when batched)."""

    q_rmse: jax.Array
    kappa_rmse: jax.Array
    kendall_tau: jax.Array
    top1: jax.Array
    coverage_cluster: jax.Array
    coverage_model: jax.Array
    q_bias: jax.Array         # mean over pairs i < j of q̂_ij − q*_ij (signed)
    kappa_bias: jax.Array     # mean over judges of κ̂_k − κ*_k (signed)
    ok: jax.Array
    stationary: jax.Array
    identified: jax.Array
    curvature_ok: jax.Array
    at_bound: jax.Array
    clusters_ok: jax.Array
    connected: jax.Array
    converged: jax.Array
    n_iter: jax.Array
    objective: jax.Array
    grad_inf: jax.Array


program_cache.register_pytree_names(ReplicateMetrics)


def evaluate_replicate(arrays, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol, *, layout: Layout,
                       n_clusters: int, max_iter: int = 100) -> ReplicateMetrics:
    """Fit one simulated dataset and score it against the truth (pure; vmap over ``arrays``).

    Parameters
    ----------
    arrays : DesignArrays of one replicate (N cells, one per record).
    omega : (G,) prompt weights: 1 for real prompts, 0 for padding.
    true_s : (C,) generating scores, centred.
    true_kappa : (K,) generating κ*_k = γ*_k RMS(s*).
    true_q : (C, C) generating q*_ij = σ(γ̄*(s*_i − s*_j)).
    ridge, v_bound, gtol : fit settings (traced: changing them does not recompile).
    layout : static layout of the method (reference judge 0).
    n_clusters : G, the number of prompts (including padded ones).
    """
    start = jnp.zeros((1, layout.n_theta), jnp.float64)  # B.3: simulations use the zero start
    fit = fit_core(arrays, omega, start, layout=layout, n_clusters=n_clusters, ridge=ridge,
                   v_bound=v_bound, max_iter=max_iter, gtol=gtol)
    cov = covariances(fit.theta, fit.mask, fit.hess, fit.info, arrays, omega, layout=layout,
                      n_clusters=n_clusters, ridge=ridge)
    iu = np.triu_indices(layout.n_cand, 1)

    def h_pairs(theta):
        return targets(theta, layout).h[iu]

    tg = targets(fit.theta, layout)
    h_hat = tg.h[iu]
    q_true = true_q[iu]

    def coverage(cov_matrix):
        se = delta_se(h_pairs, fit.theta, cov_matrix)
        lo = jax.nn.sigmoid(h_hat - Z_95 * se)
        hi = jax.nn.sigmoid(h_hat + Z_95 * se)
        return jnp.mean(((lo <= q_true) & (q_true <= hi)).astype(jnp.float64))

    q_err = jax.nn.sigmoid(h_hat) - q_true
    kappa_err = jnp.exp(tg.log_kappa) - true_kappa
    return ReplicateMetrics(
        q_rmse=jnp.sqrt(jnp.mean(q_err ** 2)), kappa_rmse=jnp.sqrt(jnp.mean(kappa_err ** 2)),
        kendall_tau=kendall_tau_b(tg.s, true_s),
        top1=(jnp.argmax(tg.s) == jnp.argmax(true_s)).astype(jnp.float64),
        coverage_cluster=coverage(cov.cluster), coverage_model=coverage(cov.model),
        q_bias=jnp.mean(q_err), kappa_bias=jnp.mean(kappa_err),
        ok=fit.ok, stationary=fit.stationary, identified=fit.identified, curvature_ok=fit.curvature_ok,
        at_bound=fit.at_bound, clusters_ok=fit.clusters_ok, connected=fit.connected,
        converged=fit.converged, n_iter=fit.n_iter, objective=fit.objective, grad_inf=fit.grad_inf,
    )


def replicate_keys(seed: int, n: int, start: int, stop: int) -> jax.Array:
    """(stop − start, 2) keys of replicates start..stop−1 of the setting with N = ``n``."""
    base = jax.random.fold_in(jax.random.PRNGKey(seed), n)
    return jax.vmap(lambda r: jax.random.fold_in(base, r))(jnp.arange(start, stop, dtype=jnp.uint32))


# ---------------------------------------------------------------------------------------
# Compiled programs (one per shape; cached for the life of the process)
# ---------------------------------------------------------------------------------------

def _pad_design(arrays, n_prompts_pad: int, n_judge: int):
    """Append zero-weight records in empty prompts so that every replicate has
    ``n_judge · n_prompts_pad`` records (static shapes shared by several N).

    Padded records carry (w, wy, wt) = 0 and sit in their own prompts, which get cluster
    weight 0: they add exact zeros to the loss, its derivatives, the column selection
    (B.2, weighted), the connectivity check (positive-weight cells only) and the cluster
    scores, and G counts only the real prompts.
    """
    n = arrays.a.shape[0]
    n_pad = n_judge * n_prompts_pad
    extra = n_pad - n
    if extra == 0:
        return arrays
    g_real = n // n_judge
    zeros_i = jnp.zeros(extra, jnp.int32)
    return arrays._replace(
        a=jnp.concatenate([arrays.a, zeros_i]),
        b=jnp.concatenate([arrays.b, zeros_i + 1]),
        k=jnp.concatenate([arrays.k, jnp.arange(extra, dtype=jnp.int32) % n_judge]),
        z=jnp.concatenate([arrays.z, jnp.zeros((extra, arrays.z.shape[1]), arrays.z.dtype)]),
        stats=jnp.concatenate([arrays.stats, jnp.zeros((extra, 3), arrays.stats.dtype)]),
        pair_cell=jnp.concatenate([arrays.pair_cell, jnp.arange(n, n_pad, dtype=jnp.int32)]),
        pair_g=jnp.concatenate([arrays.pair_g, g_real + jnp.arange(extra, dtype=jnp.int32) // n_judge]),
        pair_stats=jnp.concatenate([arrays.pair_stats, jnp.zeros((extra, 3), arrays.pair_stats.dtype)]),
    )


def _simulate_batch(keys, n_prompts, n_prompts_pad, params):
    def one(key):
        return _pad_design(simulate(key, n_prompts, params).arrays, n_prompts_pad, params.n_judge)

    return jax.vmap(one)(keys)


def _evaluate_batch(arrays, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol, *, layout, n_clusters,
                    max_iter, vmap_width=None):
    one = partial(evaluate_replicate, layout=layout, n_clusters=n_clusters, max_iter=max_iter)
    return map_replicates(lambda a: one(a, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol), arrays,
                          vmap_width)


class _Program(NamedTuple):
    """A compiled executable to build: the simulator or a method's evaluator."""

    kind: str            # "sim" | "fit"
    chunk: int
    n_prompts: int       # real prompts (sim only; 0 for fit)
    n_prompts_pad: int
    params: SimParams | None   # sim: full params (c, ρ are compile-time constants there)
    sizes: tuple         # (C, K)
    layout: Layout | None
    max_iter: int
    vmap_width: int | None = None  # fit programs: replicates side by side (oscar_jax.batching)


_COMPILED: dict = {}


def release_compiled() -> None:
    """Free every compiled program the process holds: the sweep's executables and JAX's
    jit caches (later calls recompile).

    Each XLA:CPU executable keeps a few memory mappings for its code while it lives; a
    process that compiles thousands of distinct programs (a test suite, a long notebook
    of sweeps over many shapes) approaches Linux's ``vm.max_map_count`` (65,530 by
    default), where the next compilation fails inside XLA and the process aborts.
    """
    _COMPILED.clear()
    jax.clear_caches()
    gc.collect()


def _lower(prog: _Program, fn, args, static: dict):
    """Lower one program; with the compile cache on, from its stored export, so that a new
    process running the same sweep neither traces nor lowers it again (issue 16)."""
    exp = program_cache.exported(f"sweep_{prog.kind}", repr((fn.__qualname__, prog)), partial(fn, **static), args)
    if exp is not None:
        return jax.jit(exp.call).lower(*args)
    return jax.jit(fn, static_argnames=tuple(static)).lower(*args, **static)


def _build(prog: _Program):
    """Lower and compile one program (cached); returns (executable, seconds spent)."""
    if prog in _COMPILED:
        return _COMPILED[prog], 0.0
    t0 = time.perf_counter()
    keys = jax.ShapeDtypeStruct((prog.chunk, 2), jnp.uint32)
    mesh = None
    if jax.device_count() > 1:
        # Several devices (GPUs, TPU cores, forced CPU devices): split the replicate axis
        # over a 1-D mesh; each device runs the same per-replicate program (docs/scaling.md).
        from .sharding import replicate_mesh, replicate_sharded

        mesh = replicate_mesh()
    if prog.kind == "sim":
        static = dict(n_prompts=prog.n_prompts, n_prompts_pad=prog.n_prompts_pad, params=prog.params)
        if mesh is None:
            exe = _lower(prog, _simulate_batch, (keys,), static).compile()
        else:
            exe = replicate_sharded(_simulate_batch, (0,), mesh=mesh, **static).lower(keys).compile()
    else:
        c, k = prog.sizes
        # Shapes of a padded batch; the values of c, ρ do not change them.
        arrays = jax.eval_shape(partial(_simulate_batch, n_prompts=prog.n_prompts_pad,
                                        n_prompts_pad=prog.n_prompts_pad, params=prog.params), keys)
        f64 = jnp.float64
        scalar = jax.ShapeDtypeStruct((), f64)
        args = (arrays, jax.ShapeDtypeStruct((prog.n_prompts_pad,), f64), jax.ShapeDtypeStruct((c,), f64),
                jax.ShapeDtypeStruct((k,), f64), jax.ShapeDtypeStruct((c, c), f64), scalar, scalar, scalar)
        static = dict(layout=prog.layout, n_clusters=prog.n_prompts_pad, max_iter=prog.max_iter,
                      vmap_width=prog.vmap_width)
        if mesh is None:
            exe = _lower(prog, _evaluate_batch, args, static).compile()
        else:
            exe = replicate_sharded(_evaluate_batch, (0,) + (None,) * 7, mesh=mesh, **static).lower(*args).compile()
    _COMPILED[prog] = exe
    return exe, time.perf_counter() - t0


class _Builder:
    """Compiles programs in the order they will be needed, optionally one step ahead in a
    background thread, so that XLA compilation of the next (setting, method) overlaps the
    execution of the current one (compilation is single-threaded C++ that releases the
    GIL; the two together keep both cores of a small machine busy)."""

    def __init__(self, programs, ahead: bool):
        self._futures = {}
        self._used = set()
        self._pool = None
        if ahead:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oscar-compile")
            for prog in dict.fromkeys(programs):
                self._futures[prog] = self._pool.submit(_build, prog)

    def get(self, prog):
        """(executable, compile seconds); the seconds are reported on first use only."""
        exe, seconds = self._futures[prog].result() if prog in self._futures else _build(prog)
        if prog in self._used:
            return exe, 0.0
        self._used.add(prog)
        return exe, seconds

    def close(self):
        if self._pool is not None:
            for fut in self._futures.values():
                fut.cancel()
            self._pool.shutdown(wait=True)


def _chunking(reps: int, n_pad: int, chunk: int | None, record_budget: int) -> tuple[int, int]:
    """(chunk size, number of chunks): equal chunks, so one executable serves them all."""
    cap = chunk if chunk is not None else max(1, record_budget // max(n_pad, 1))
    n_chunks = math.ceil(reps / max(1, min(cap, reps)))
    size = math.ceil(reps / n_chunks)
    # With several devices each gets the same number of replicates; the extra ones are
    # valid replicates (keys beyond ``reps``) whose results are dropped.
    n_dev = jax.device_count()
    return -(-size // n_dev) * n_dev, n_chunks


def _padded_prompts(prompt_counts, pad_ratio: float) -> dict:
    """Map each prompt count G to the padded count it is fitted at.

    Going down from the largest G, a G within a factor ``pad_ratio`` of the current
    bucket top is padded up to it; otherwise it opens a new bucket. Fewer distinct shapes
    mean fewer XLA compilations (several seconds each) at the price of fitting zero-weight
    records; ``pad_ratio = 1`` fits every G at its own size.
    """
    out, top = {}, None
    for g in sorted(set(prompt_counts), reverse=True):
        if top is None or g * pad_ratio < top:
            top = g
        out[g] = top
    return out


# ---------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------

def _method_spec(method) -> ModelSpec:
    spec = method if isinstance(method, ModelSpec) else parse_model(str(method))
    if spec.ties != "fractional" or not spec.learn_gamma:
        raise OscarInputError(
            f"method {spec.name!r}: the simulation study compares judge-sensitivity models "
            "(j, j+p, j+l, j+f, oscar and other j+... combinations); BT/Davidson have no γ to recover"
        )
    if "cov" in spec.terms:
        raise OscarInputError(f"method {spec.name!r}: the simulated design has no user covariates (drop 'c')")
    return spec


def _validate(settings, reps, params, pad_ratio):
    if reps < 2:
        raise OscarInputError(f"reps must be at least 2 (a Monte Carlo SE needs a spread), got {reps}")
    if not pad_ratio >= 1.0:
        raise OscarInputError(f"pad_ratio must be ≥ 1 (1 = no padding), got {pad_ratio}")
    for s in settings:
        if s.n <= 0 or s.n % params.n_judge:
            raise OscarInputError(
                f"N = {s.n} is not a positive multiple of the {params.n_judge} judges "
                f"(every judge judges each prompt once, so N = {params.n_judge} × prompts)")
        if not 0.0 <= s.rho <= 1.0:
            raise OscarInputError(f"rho must lie in [0, 1], got {s.rho}")


def _as_list(x, default):
    if x is None:
        return [float(default)]
    if np.ndim(x) == 0:
        return [float(x)]
    return [float(v) for v in x]


def sweep(ns: Sequence[int] = DEFAULT_NS, reps: int = 100, methods: Sequence = DEFAULT_METHODS,
          seed: int = 0, c=None, rho=None, params: SimParams = TABLE_G1, *,
          settings: Sequence[Setting] | None = None, method_settings: dict | None = None,
          chunk: int | None = None, record_budget: int = DEFAULT_RECORD_BUDGET, pad_ratio: float = 2.5,
          compile_ahead: bool = True, max_iter: int = 100, gtol: float = 1e-12,
          show_progress: bool | None = None, vmap_width: int | None = None) -> "SweepResult":
    """Run the Section 7 simulation study.

    Parameters
    ----------
    ns : judgment counts N (multiples of the number of judges K; N = K × prompts).
    reps : replicates per setting (100 in the paper).
    methods : model variants, e.g. ``("j", "j+p", "j+l", "j+f", "oscar")``; names as in
        :func:`oscar_jax.parse_model` or :class:`ModelSpec` objects with learned γ.
    seed : base seed; see the module docstring for how replicate keys derive from it.
    c, rho : bias multiplier and within-prompt dependence; a number or a sequence (the
        sweep runs the grid N × c × ρ). Default: the values in ``params`` (Table G1:
        c = 1, ρ = 0.6).
    params : generating parameters (:class:`SimParams`, Table G1 by default).
    settings : explicit list of :class:`Setting` instead of the grid (e.g.
        :func:`main_and_controls`).
    method_settings : optional {method: [Setting, ...]} restricting a method to those
        settings (e.g. only J and OSCAR in the Table G2 controls).
    chunk : replicates per compiled batch (default: as many as fit in ``record_budget``
        records). Chunks are equal in size, so one executable serves a setting.
    pad_ratio : fit a smaller N at the size of a larger one in the sweep when they differ
        by at most this factor (zero-weight records in empty prompts; the same estimates up
        to rounding), trading some fit time for fewer XLA compilations. The default 2.5
        fits the paper's N = 1000 with 2500 and 5000 with 10,000 (two compilations per
        method instead of four); 1 = every N at its own size.
    compile_ahead : compile the next programs in a background thread while the current
        one runs.
    max_iter, gtol : solver limits passed to the fit core.
    vmap_width : replicates fitted side by side within a chunk (default: 1 on CPU, the
        whole chunk on an accelerator; see :mod:`oscar_jax.batching`).
    show_progress : progress bar on stderr (default: on a TTY; see ``OSCAR_PROGRESS``).

    Returns
    -------
    SweepResult
    """
    if settings is None:
        settings = settings_grid(ns, _as_list(c, params.c), _as_list(rho, params.rho))
    settings = [Setting(int(s.n), float(s.c), float(s.rho)) for s in settings]
    if not settings:
        raise OscarInputError("no simulation settings to run")
    if len(set(settings)) != len(settings):
        raise OscarInputError("the same (N, c, rho) setting is listed twice")
    reps = int(reps)
    _validate(settings, reps, params, float(pad_ratio))
    specs = [_method_spec(m) for m in methods]
    if not specs:
        raise OscarInputError("no methods to run")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise OscarInputError(f"methods {list(names)} name the same model twice")
    allowed = {name: None for name in names}
    for key, value in (method_settings or {}).items():
        name = _method_spec(key).name
        if name not in allowed:
            raise OscarInputError(f"method_settings names {key!r}, which is not among the methods {names}")
        allowed[name] = {Setting(int(s.n), float(s.c), float(s.rho)) for s in value}

    truth = truth_of(params)
    # κ* uses the RMS of the centred scores: fitted scores are centred (Helmert) and s* is
    # identified only up to a shift (no change for Table G1, whose s* has mean 0).
    true_s = truth.s - jnp.mean(truth.s)
    true_kappa = truth.gamma * jnp.sqrt(jnp.mean(true_s ** 2))
    true_q = truth.q
    layouts = {spec.name: Layout(params.n_cand, params.n_judge, ref=0, n_cov=0, structure=spec.structure())
               for spec in specs}
    k = params.n_judge
    g_pad_of = _padded_prompts([s.n // k for s in settings], float(pad_ratio))
    sizes = (params.n_cand, k)
    # Padded shapes do not depend on c, ρ: build fit programs from the base parameters.
    shape_params = params.with_controls(1.0, 0.0)

    width = default_vmap_width() if vmap_width is None else check_positive_int("vmap_width", vmap_width)
    plan, programs = [], []
    for s in settings:
        todo = [spec for spec in specs if allowed[spec.name] is None or s in allowed[spec.name]]
        if not todo:
            continue
        g = s.n // k
        g_pad = g_pad_of[g]
        size, n_chunks = _chunking(reps, k * g_pad, chunk, record_budget)
        sim = _Program("sim", size, g, g_pad, params.with_controls(s.c, s.rho), sizes, None, 0)
        fits = {spec.name: _Program("fit", size, 0, g_pad, shape_params, sizes, layouts[spec.name], int(max_iter),
                                    width)
                for spec in todo}
        plan.append((s, g, g_pad, size, n_chunks, sim, todo, fits))
        programs += [sim] + list(fits.values())
    total = sum(reps * len(item[6]) for item in plan)

    if jax.process_count() > 1:
        # jax.distributed: every process simulates the same keys; inputs become global
        # arrays over the mesh of all processes' devices and results are gathered back.
        from .sharding import place_for_mesh, replicate_mesh

        mesh = replicate_mesh()

        def place(tree, batched):
            return place_for_mesh(tree, mesh, batched)
    else:
        def place(tree, batched):
            return tree

    frames, timings = [], []
    builder = _Builder(programs, ahead=compile_ahead)
    try:
        with progress(total, desc="simulate", enabled=show_progress) as bar:
            for s, g, g_pad, size, n_chunks, sim_prog, todo, fits in plan:
                omega = (jnp.arange(g_pad) < g).astype(jnp.float64)
                t0 = time.perf_counter()
                sim, sim_compile = builder.get(sim_prog)
                sim_wait = time.perf_counter() - t0
                chunks = {spec.name: [] for spec in todo}
                clock = {spec.name: {"wait_s": 0.0, "compile_s": 0.0, "run_s": 0.0} for spec in todo}
                for ci in range(n_chunks):
                    data = sim(place(replicate_keys(seed, s.n, ci * size, (ci + 1) * size), True))
                    for spec in todo:
                        t1 = time.perf_counter()
                        ev, compile_s = builder.get(fits[spec.name])
                        t2 = time.perf_counter()
                        shared = (omega, true_s, true_kappa, true_q, jnp.float64(spec.ridge),
                                  jnp.float64(spec.v_bound), jnp.float64(gtol))
                        out = to_host(ev(data, *place(shared, False)))
                        t3 = time.perf_counter()
                        clock[spec.name]["wait_s"] += t2 - t1
                        clock[spec.name]["compile_s"] += compile_s
                        clock[spec.name]["run_s"] += t3 - t2
                        chunks[spec.name].append(out)
                        bar.update(min(size, reps - ci * size))
                for spec in todo:
                    out = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[:reps], *chunks[spec.name])
                    frame = pd.DataFrame({f: np.asarray(getattr(out, f)) for f in ReplicateMetrics._fields})
                    frame.insert(0, "rep", np.arange(reps))
                    for pos, (col, val) in enumerate((("n", s.n), ("c", s.c), ("rho", s.rho),
                                                      ("method", spec.name))):
                        frame.insert(pos, col, val)
                    frames.append(frame)
                    timings.append({"n": s.n, "c": s.c, "rho": s.rho, "method": spec.name, "fits": reps,
                                    "fitted_as_n": k * g_pad, "chunk": size, "chunks": n_chunks,
                                    **clock[spec.name], "simulate_compile_s": sim_compile,
                                    "simulate_wait_s": sim_wait})
    finally:
        builder.close()
    replicates = pd.concat(frames, ignore_index=True)
    for col in ("ok",) + CHECKS + ("converged",):
        replicates[col] = replicates[col].astype(bool)
    replicates["n_iter"] = replicates["n_iter"].astype(int)
    return SweepResult(replicates=replicates, seed=int(seed), reps=reps, params=params,
                       methods=tuple(names), timings=pd.DataFrame(timings))


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------

def _t_crit(level: float, dof: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2.0, dof)) if dof > 0 else float("nan")


def _mc_summary(values: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """(mean, Monte Carlo SE = sd/√R, lower, upper) with a t_{R−1} interval (G.3)."""
    values = np.asarray(values, dtype=float)
    r = values.size
    if r == 0:
        return (math.nan,) * 4
    mean = float(np.mean(values))
    if r < 2:
        return mean, math.nan, math.nan, math.nan
    se = float(np.std(values, ddof=1) / math.sqrt(r))
    half = _t_crit(level, r - 1) * se
    return mean, se, mean - half, mean + half


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion: inside [0, 1] for any count (a t interval on
    0/1 outcomes is not, e.g. 1.044 for 97 of 100)."""
    if n <= 0 or not 0 <= successes <= n:  # not a count of successes out of n
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class SweepResult:
    """Outcome of :func:`sweep`.

    ``replicates`` has one row per (setting, method, replicate): n, c, rho, method, rep,
    the metrics of :data:`METRICS`, ``ok`` and one flag per B.3 check, solver statistics.
    ``timings`` has one row per (setting, method): compile and run seconds.
    """

    replicates: pd.DataFrame
    seed: int
    reps: int
    params: SimParams
    methods: tuple[str, ...]
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)

    def per_replicate(self) -> pd.DataFrame:
        """Per-replicate rows (a copy)."""
        return self.replicates.copy()

    def _name(self, method) -> str:
        name = _method_spec(method).name if not isinstance(method, str) or method not in self.methods else method
        if name not in self.methods:
            raise OscarInputError(f"method {method!r} was not run; available: {list(self.methods)}")
        return name

    def failures(self) -> pd.DataFrame:
        """Counts of replicates failing each B.3 check, per setting and method."""
        rep = self.replicates
        rows = []
        for (n, c, rho, m), grp in rep.groupby(["n", "c", "rho", "method"], sort=False):
            row = {"n": n, "c": c, "rho": rho, "method": m, "n_failed": int((~grp.ok).sum())}
            for chk in CHECKS:
                bad = grp[chk] if chk == "at_bound" else ~grp[chk]
                row[f"failed_{chk}"] = int(bad.sum())
            rows.append(row)
        return pd.DataFrame(rows)

    def table(self, level: float = 0.95) -> pd.DataFrame:
        """Aggregates per (setting, method) over the replicates that passed every B.3 check.

        Columns: n, c, rho, method, reps (requested), n_ok, n_failed, and per metric its
        mean, ``_mcse`` (sd/√n_ok) and ``_lo``/``_hi`` (t_{n_ok−1} interval at ``level``).
        ``top1`` is the share of replicates recovering the best candidate (``top1_count``
        the count).
        """
        rows = []
        for (n, c, rho, m), grp in self.replicates.groupby(["n", "c", "rho", "method"], sort=False):
            good = grp[grp.ok]
            row = {"n": int(n), "c": float(c), "rho": float(rho), "method": m, "reps": int(len(grp)),
                   "n_ok": int(len(good)), "n_failed": int((~grp.ok).sum())}
            for metric in METRICS:
                mean, se, lo, hi = _mc_summary(good[metric].to_numpy(), level)
                row[metric] = mean
                row[f"{metric}_mcse"] = se
                row[f"{metric}_lo"] = lo
                row[f"{metric}_hi"] = hi
            row["top1_count"] = int(good["top1"].sum())
            # top-1 is a proportion of replicates: a Wilson interval stays inside [0, 1].
            row["top1_lo"], row["top1_hi"] = wilson_interval(row["top1_count"], row["n_ok"], level)
            rows.append(row)
        return pd.DataFrame(rows)

    def differences(self, a, b, level: float = 0.95) -> pd.DataFrame:
        """Paired differences a − b per setting and metric (G.3).

        Only replicates where both fits passed every B.3 check enter (``n_pairs``).
        """
        a, b = self._name(a), self._name(b)
        keys = ["n", "c", "rho", "rep"]
        rep = self.replicates
        joint = rep[rep.method == a].merge(rep[rep.method == b], on=keys, how="inner", suffixes=("_a", "_b"))
        rows = []
        for (n, c, rho), grp in joint.groupby(["n", "c", "rho"], sort=False):
            both = grp[grp.ok_a & grp.ok_b]
            for metric in METRICS:
                d = both[f"{metric}_a"].to_numpy() - both[f"{metric}_b"].to_numpy()
                mean, se, lo, hi = _mc_summary(d, level)
                rows.append({"n": int(n), "c": float(c), "rho": float(rho), "a": a, "b": b, "metric": metric,
                             "n_pairs": int(len(both)), "diff": mean, "mcse": se, "lo": lo, "hi": hi})
        return pd.DataFrame(rows)

    def to_markdown(self, level: float = 0.95) -> str:
        """The summary as a Markdown table: mean (Monte Carlo SE) per metric; top-1 as a count."""
        tab = self.table(level)
        head = ["N", "c", "ρ", "method", "ok/reps", "q RMSE", "κ RMSE", "Kendall τ_b", "top-1",
                "coverage cluster", "coverage model"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in tab.itertuples():
            def cell(metric, digits, scale=1.0, r=r):
                mean, se = getattr(r, metric), getattr(r, f"{metric}_mcse")
                if not np.isfinite(mean):
                    return "–"
                return f"{scale * mean:.{digits}f} ({scale * se:.{digits}f})"
            lines.append("| " + " | ".join([
                f"{r.n:,}", f"{r.c:g}", f"{r.rho:g}", r.method, f"{r.n_ok}/{r.reps}", cell("q_rmse", 4),
                cell("kappa_rmse", 4), cell("kendall_tau", 3), f"{r.top1_count}/{r.n_ok}",
                cell("coverage_cluster", 1, 100.0), cell("coverage_model", 1, 100.0)]) + " |")
        return "\n".join(lines)

    def to_dict(self, level: float = 0.95) -> dict:
        return {"seed": self.seed, "reps": self.reps, "methods": list(self.methods),
                "summary": self.table(level).to_dict(orient="records"),
                "failures": self.failures().to_dict(orient="records"),
                "timings": self.timings.to_dict(orient="records")}

    def plot(self, out_dir, level: float = 0.95) -> list[Path]:
        """PNG figures against N for every (c, ρ) with at least two N (Figures 3 and 4).

        ``simulation_fig3_c{c}_rho{ρ}.png``: (a) q RMSE, (b) coverage (cluster solid,
        model-based dashed, nominal 95% dotted); ``simulation_fig4_…``: (a) κ RMSE,
        (b) Kendall τ_b. Error bars are the t intervals of :meth:`table`.
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tab = self.table(level)
        from .palette import SERIES

        colour = {m: SERIES[i % len(SERIES)] for i, m in enumerate(self.methods)}
        written = []
        for (c, rho), grp in tab.groupby(["c", "rho"], sort=False):
            if grp.n.nunique() < 2:
                continue
            tag = f"c{c:g}_rho{rho:g}"
            panels = {
                "fig3": [("q_rmse", "RMSE of q", "(a) win-probability RMSE"),
                         ("coverage", "coverage of 95% CIs for q", "(b) interval coverage")],
                "fig4": [("kappa_rmse", "RMSE of κ", "(a) sensitivity RMSE"),
                         ("kendall_tau", "Kendall τ_b with true order", "(b) ranking recovery")],
            }
            for fig_name, spec in panels.items():
                fig, axes = plt.subplots(1, 2, figsize=(10, 4.8), layout="constrained")
                for ax, (metric, ylabel, title) in zip(axes, spec):
                    for m in self.methods:
                        rows = grp[grp.method == m].sort_values("n")
                        if rows.empty:
                            continue
                        kinds = [("coverage_cluster", "-", ""), ("coverage_model", "--", " (model)")] \
                            if metric == "coverage" else [(metric, "-", "")]
                        for col, style, suffix in kinds:
                            yerr = np.vstack([rows[col] - rows[f"{col}_lo"], rows[f"{col}_hi"] - rows[col]])
                            ax.errorbar(rows.n, rows[col], yerr=yerr, color=colour[m], linestyle=style,
                                        marker="o", markersize=3, capsize=2, label=m + suffix)
                    if metric == "coverage":
                        ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
                    ax.set_xscale("log")
                    ax.set_xticks(sorted(grp.n.unique()))
                    ax.set_xticklabels([f"{n:,}" for n in sorted(grp.n.unique())])
                    ax.minorticks_off()
                    ax.set_xlabel("N (judgments)")
                    ax.set_ylabel(ylabel)
                    ax.set_title(title)
                # One legend below both panels: inside a panel it covered the J line.
                handles = {}
                for ax in axes:
                    for h, lab in zip(*ax.get_legend_handles_labels()):
                        handles.setdefault(lab, h)
                fig.legend(list(handles.values()), list(handles), loc="outside lower center", fontsize=8,
                           ncol=min(len(handles), 5), frameon=False)
                fig.suptitle(f"Simulation, c = {c:g}, ρ = {rho:g}, {self.reps} replicates")
                path = out / f"simulation_{fig_name}_{tag}.png"
                fig.savefig(path, dpi=120)
                plt.close(fig)
                written.append(path)
        return written


# ---------------------------------------------------------------------------------------
# Published Section 7 / Table G2 figures
# ---------------------------------------------------------------------------------------

def compare_with_paper(result: SweepResult, published) -> pd.DataFrame:
    """Our estimates next to the published Section 7 / Table G2 figures.

    ``published``: the rows of ``paper_repro/published.json``'s ``section7`` (quantity,
    method, n, c, rho, metric, value), the one copy of the paper's numbers. A list value
    is a [lo, hi] range over the main-setting N; a method "A-B" is a paired difference;
    coverage in %, top-1 as a count.

    ``z`` = (ours − paper) / SE of the difference of two independent Monte Carlo studies.
    The paper's figure is a 100-replicate mean whose SE is unpublished; with our SD it is
    about ours × √(n/100) for our n replicates, so the SE of the difference is
    ours × √(1 + n/100) (√2 when we also run 100). Top-1 counts become rates per 100 with
    binomial SEs of both studies (the paper's from its own rate), which stay finite when
    every one of our replicates recovers (or misses) the best candidate.
    ``consistent`` = |z| ≤ 1.96. For a range the nearest end is used at each N, and the
    row reports the worst N. Rows whose setting or method was not run are omitted.
    """
    tab = result.table().set_index(["n", "c", "rho", "method"])
    rows = []

    def scale(metric):
        return 100.0 if metric.startswith("coverage") else 1.0

    for p in published:
        label, n, c, rho, method, metric, paper = (p["quantity"], p["n"], p["c"], p["rho"], p["method"],
                                                   p["metric"], p["value"])
        kind = "range" if isinstance(paper, (list, tuple)) else ("diff" if "-" in method else "value")
        if kind == "diff":
            a, b = method.split("-", 1)
            if a not in result.methods or b not in result.methods:
                continue
            d = result.differences(a, b)
            d = d[(d.n == n) & (d.c == c) & (d.rho == rho) & (d.metric == metric)]
            if d.empty:
                continue
            ours, se = float(d["diff"].iloc[0]), float(d.mcse.iloc[0])
            se_diff = se * _two_study_factor(int(d.n_pairs.iloc[0]))
            rows.append(_paper_row(label, method, ours, se, se_diff, paper,
                                   f"[{d.lo.iloc[0]:+.4f}, {d.hi.iloc[0]:+.4f}]"))
            continue
        if kind == "range":
            sub = [(key, r) for key, r in tab.iterrows() if key[1:] == (c, rho, method)]
            if not sub:
                continue
            lo, hi = paper
            worst = None
            for key, r in sub:
                ours, se = scale(metric) * r[metric], scale(metric) * r[f"{metric}_mcse"]
                target = min(max(ours, lo), hi)
                z = (ours - target) / (se * _two_study_factor(int(r.n_ok))) if se > 0 else 0.0
                if worst is None or abs(z) > abs(worst[0]):
                    worst = (z, key[0], ours, se)
            ours_text = ", ".join(f"{scale(metric) * r[metric]:.1f}" for _, r in sub)
            z, n_worst, ours, se = worst
            rows.append({"quantity": label, "method": method, "ours": ours_text, "mcse": f"{se:.2f} (N={n_worst:,})",
                         "paper": f"{lo:g}–{hi:g}", "z": z, "consistent": abs(z) <= 1.96})
            continue
        key = (n, c, rho, method)
        if key not in tab.index:
            continue
        r = tab.loc[key]
        if metric == "top1":
            n_ok = max(int(r.n_ok), 1)
            share, p_paper = float(r.top1_count) / n_ok, paper / 100.0
            ours, se = 100.0 * share, 100.0 * math.sqrt(share * (1.0 - share) / n_ok)
            se_diff = 100.0 * math.sqrt(share * (1.0 - share) / n_ok + p_paper * (1.0 - p_paper) / 100.0)
        else:
            ours, se = scale(metric) * float(r[metric]), scale(metric) * float(r[f"{metric}_mcse"])
            se_diff = se * _two_study_factor(int(r.n_ok))
        rows.append(_paper_row(label, method, ours, se, se_diff, paper, None))
    return pd.DataFrame(rows)


PAPER_REPLICATES = 100  # Section 7: 100 replicates per setting


def _two_study_factor(n: int) -> float:
    """SE of (ours − paper) over our MC SE when the paper ran 100 replicates and we ran n."""
    return math.sqrt(1.0 + n / PAPER_REPLICATES)


def _paper_row(label, method, ours, se, se_diff, paper, interval):
    z = (ours - paper) / se_diff if se_diff > 0 else (0.0 if ours == paper else math.inf)
    digits = 1 if abs(paper) >= 10 else 4
    text = f"{ours:.{digits}f}" + (f" {interval}" if interval else "")
    return {"quantity": label, "method": method, "ours": text, "mcse": f"{se:.{digits}f}", "paper": f"{paper:g}",
            "z": z, "consistent": abs(z) <= 1.96}
