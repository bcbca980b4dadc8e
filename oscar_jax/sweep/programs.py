"""The sweep's compiled programs: the vmapped simulator and each method's evaluator, one
executable per shape, cached for the life of the process and optionally compiled one step
ahead in a background thread; padding of replicates to shared shapes and chunking."""

from __future__ import annotations

import gc
import math
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

from ..runtime.jit import stored_program
from ..runtime.batching import map_replicates
from ..model.params import Layout
from ..runtime.lazy_jax import jax, jnp
from ..runtime.sharding import replicate_mesh, replicate_sharded
from ..simulate import SimParams, record_arrays, simulate
from .metrics import evaluate_replicate

__all__ = ["Builder", "Program", "chunking", "evaluate_batch", "pad_design", "padded_prompts", "release_compiled",
           "simulate_batch"]


def pad_design(arrays, n_prompts_pad: int, n_judge: int):
    """Append zero-weight records in empty prompts so that every replicate has
    ``n_judge · n_prompts_pad`` records (static shapes shared by several N).

    Padded records carry (w, wy, wt) = 0 and sit in their own prompts, which get cluster
    weight 0: they add exact zeros to the loss, its derivatives, the column selection
    (B.2, weighted), the connectivity check (positive-weight cells only) and the cluster
    scores, and G counts only the real prompts.
    """
    n = arrays.a.shape[0]
    extra = n_judge * n_prompts_pad - n
    if extra == 0:
        return arrays
    g_real = n // n_judge
    zeros_i = jnp.zeros(extra, jnp.int32)
    return record_arrays(
        a=jnp.concatenate([arrays.a, zeros_i]),
        b=jnp.concatenate([arrays.b, zeros_i + 1]),
        k=jnp.concatenate([arrays.k, jnp.arange(extra, dtype=jnp.int32) % n_judge]),
        z=jnp.concatenate([arrays.z, jnp.zeros((extra, arrays.z.shape[1]), arrays.z.dtype)]),
        stats=jnp.concatenate([arrays.stats, jnp.zeros((extra, 3), arrays.stats.dtype)]),
        prompt=jnp.concatenate([arrays.pair_g, g_real + jnp.arange(extra, dtype=jnp.int32) // n_judge]),
    )


def simulate_batch(keys, controls, n_prompts, n_prompts_pad, params):
    """Replicates of ``n_prompts`` prompts, one per key, padded to ``n_prompts_pad``.

    ``controls`` = (c, ρ) are traced, so one executable serves every (c, ρ) of a sweep
    (``params``' own c and ρ are not read).
    """
    def one(key):
        return pad_design(simulate(key, n_prompts, params, controls).arrays, n_prompts_pad, params.n_judge)

    return jax.vmap(one)(keys)


def evaluate_batch(arrays, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol, *, layout, n_clusters,
                   max_iter, vmap_width=None):
    """:func:`~oscar_jax.sweep.metrics.evaluate_replicate` over a batch of designs."""
    one = partial(evaluate_replicate, layout=layout, n_clusters=n_clusters, max_iter=max_iter)
    return map_replicates(lambda a: one(a, omega, true_s, true_kappa, true_q, ridge, v_bound, gtol), arrays,
                          vmap_width)


class Program(NamedTuple):
    """A compiled executable to build: the simulator or a method's evaluator."""

    kind: str            # "sim" | "fit"
    chunk: int
    n_prompts: int       # real prompts (sim only; 0 for fit)
    n_prompts_pad: int
    params: SimParams | None   # with c = 1, ρ = 0: the sweep's (c, ρ) are arguments of the programs
    sizes: tuple         # (C, K)
    layout: Layout | None
    max_iter: int
    vmap_width: int | None = None  # fit programs: replicates side by side (oscar_jax.runtime.batching)


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


def _compile(prog: Program, fn, args_of, static: dict):
    """Compile one program; with the compile cache on, a new process running the same sweep
    loads its executable, neither tracing, lowering nor compiling it again (issue 16).
    ``prog`` fixes the shapes, so ``args_of()`` is called only to compile."""
    exe = stored_program(f"sweep_{prog.kind}", repr((fn.__qualname__, prog)), partial(fn, **static), args_of)
    if exe is not None:
        return exe
    return jax.jit(fn, static_argnames=tuple(static)).lower(*args_of(), **static).compile()


def build(prog: Program):
    """Lower and compile one program (cached); returns (executable, seconds spent)."""
    if prog in _COMPILED:
        return _COMPILED[prog], 0.0
    t0 = time.perf_counter()
    keys = jax.ShapeDtypeStruct((prog.chunk, 2), jnp.uint32)
    scalar = jax.ShapeDtypeStruct((), jnp.float64)
    controls = (scalar, scalar)  # (c, ρ)
    mesh = None
    if jax.device_count() > 1:
        # Several devices (GPUs, TPU cores, forced CPU devices): split the replicate axis
        # over a 1-D mesh; each device runs the same per-replicate program (docs/scaling.md).
        mesh = replicate_mesh()
    if prog.kind == "sim":
        static = dict(n_prompts=prog.n_prompts, n_prompts_pad=prog.n_prompts_pad, params=prog.params)
        if mesh is None:
            exe = _compile(prog, simulate_batch, lambda: (keys, controls), static)
        else:
            exe = replicate_sharded(simulate_batch, (0, None), mesh=mesh, **static).lower(keys, controls).compile()
    else:
        static = dict(layout=prog.layout, n_clusters=prog.n_prompts_pad, max_iter=prog.max_iter,
                      vmap_width=prog.vmap_width)
        if mesh is None:
            exe = _compile(prog, evaluate_batch, partial(_fit_args, prog, keys, controls), static)
        else:
            args = _fit_args(prog, keys, controls)
            exe = replicate_sharded(evaluate_batch, (0,) + (None,) * 7, mesh=mesh, **static).lower(*args).compile()
    _COMPILED[prog] = exe
    return exe, time.perf_counter() - t0


def _fit_args(prog: Program, keys, controls) -> tuple:
    """The argument shapes of a method's evaluator: a padded batch (the values of c, ρ do
    not change its shapes), ω, the true s, κ and q, and three scalars."""
    c, k = prog.sizes
    arrays = jax.eval_shape(partial(simulate_batch, n_prompts=prog.n_prompts_pad,
                                    n_prompts_pad=prog.n_prompts_pad, params=prog.params), keys, controls)
    f64, scalar = jnp.float64, controls[0]
    return (arrays, jax.ShapeDtypeStruct((prog.n_prompts_pad,), f64), jax.ShapeDtypeStruct((c,), f64),
            jax.ShapeDtypeStruct((k,), f64), jax.ShapeDtypeStruct((c, c), f64), scalar, scalar, scalar)


class Builder:
    """Compiles programs in the order they will be needed, optionally one step ahead in a
    background thread, so that XLA compilation of the next (setting, method) overlaps the
    execution of the current one (compilation is single-threaded C++ that releases the
    GIL; the two together keep both cores of a small machine busy)."""

    def __init__(self, programs, ahead: bool):
        self._futures = {}
        self._used = set()
        self._pool = None
        if ahead:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oscar-compile")
            for prog in dict.fromkeys(programs):
                self._futures[prog] = self._pool.submit(build, prog)

    def get(self, prog):
        """(executable, compile seconds); the seconds are reported on first use only."""
        exe, seconds = self._futures[prog].result() if prog in self._futures else build(prog)
        if prog in self._used:
            return exe, 0.0
        self._used.add(prog)
        return exe, seconds

    def close(self):
        if self._pool is not None:
            for fut in self._futures.values():
                fut.cancel()
            self._pool.shutdown(wait=True)


def chunking(reps: int, n_pad: int, chunk: int | None, record_budget: int) -> tuple[int, int]:
    """(chunk size, number of chunks): equal chunks, so one executable serves them all."""
    cap = chunk if chunk is not None else max(1, record_budget // max(n_pad, 1))
    n_chunks = math.ceil(reps / max(1, min(cap, reps)))
    size = math.ceil(reps / n_chunks)
    # With several devices each gets the same number of replicates; the extra ones are
    # valid replicates (keys beyond ``reps``) whose results are dropped.
    n_dev = jax.device_count()
    return -(-size // n_dev) * n_dev, n_chunks


def padded_prompts(prompt_counts, pad_ratio: float) -> dict:
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
