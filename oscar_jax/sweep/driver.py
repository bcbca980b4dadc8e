"""The sweep driver: plan the programs of every (setting, method), run them chunk by chunk,
collect one row per replicate into a :class:`~oscar_jax.sweep.SweepResult`."""

from __future__ import annotations

import time
from functools import partial
from typing import Sequence

import numpy as np

from ..runtime.batching import default_vmap_width, host_workers, run_in_order
from ..runtime.cache import remembered_arrays
from ..runtime.jit import environment_key
from ..infer.batch_fit import PROGRESS_CHUNK
from ..runtime.lazy_jax import jax
from ..runtime.progress import progress
from ..runtime.sharding import place_for_mesh, replicate_mesh, to_host
from ..simulate import TABLE_G1, SimParams, SimTruth, truth_of
from ..runtime.validate import OscarInputError, check_positive_int
from .metrics import CHECKS, ReplicateMetrics
from .programs import Builder, Program, chunking, padded_prompts
from .settings import DEFAULT_METHODS, DEFAULT_NS, Setting, method_spec, replicate_keys, settings_grid
from .tables import SweepResult

__all__ = ["DEFAULT_RECORD_BUDGET", "sweep"]

# Records per vmapped chunk. A replicate of N records needs roughly 30 kB × N/1000 per
# OSCAR fit in flight (per-record local Hessians, scatter buffers); 250k records keep a
# chunk below ~1 GB on a machine shared by several jobs.
DEFAULT_RECORD_BUDGET = 250_000


def _run_chunk(key, n_kept, ev, data, shared):
    """One method on one chunk of simulated datasets: (key, replicates kept, per-replicate rows, seconds)."""
    t0 = time.perf_counter()
    out = to_host(ev(data, *shared))
    return key, n_kept, out, time.perf_counter() - t0


def _truth(params: SimParams) -> SimTruth:
    """:func:`~oscar_jax.simulate.truth_of`, kept in the cache folder per parameters, package
    source, JAX and machine: a warm sweep reads the bits it computed (eagerly: 0.07 CPU-s of
    dispatching a few dozen small programs, about 7 % of the whole warm command)."""
    arrays = remembered_arrays("sweep_truth", repr((repr(params), environment_key())),
                               lambda: truth_of(params)._asdict())
    return SimTruth(**arrays)


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
        if not np.isfinite(s.c):
            raise OscarInputError(f"c (the bias multiplier) must be a finite number, got {s.c}; e.g. 1")
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
          show_progress: bool | None = None, vmap_width: int | None = None) -> SweepResult:
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
        whole chunk on an accelerator; see :mod:`oscar_jax.runtime.batching`).
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
    specs = [method_spec(m) for m in methods]
    if not specs:
        raise OscarInputError("no methods to run")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise OscarInputError(f"methods {list(names)} name the same model twice")
    allowed = {name: None for name in names}
    for key, value in (method_settings or {}).items():
        name = method_spec(key).name
        if name not in allowed:
            raise OscarInputError(f"method_settings names {key!r}, which is not among the methods {names}")
        allowed[name] = {Setting(int(s.n), float(s.c), float(s.rho)) for s in value}

    truth = _truth(params)
    layouts = {spec.name: params.layout(spec) for spec in specs}
    k = params.n_judge
    g_pad_of = padded_prompts([s.n // k for s in settings], float(pad_ratio))
    sizes = (params.n_cand, k)
    # Neither the padded shapes nor the programs depend on c, ρ (arguments of the simulator):
    # build every program from one set of parameters.
    shape_params = params.with_controls(1.0, 0.0)

    width = default_vmap_width() if vmap_width is None else check_positive_int("vmap_width", vmap_width)
    plan, programs = [], []
    for s in settings:
        todo = [spec for spec in specs if allowed[spec.name] is None or s in allowed[spec.name]]
        if not todo:
            continue
        g = s.n // k
        g_pad = g_pad_of[g]
        cap = chunk
        if cap is None and width == 1:  # in sequence: small chunks, so the progress count moves every few fits
            cap = max(1, min(PROGRESS_CHUNK, record_budget // max(k * g_pad, 1)))
        size, n_chunks = chunking(reps, k * g_pad, cap, record_budget)
        sim = Program("sim", size, g, g_pad, shape_params, sizes, None, 0)
        fits = {spec.name: Program("fit", size, 0, g_pad, shape_params, sizes, layouts[spec.name], int(max_iter),
                                    width)
                for spec in todo}
        plan.append((s, g, g_pad, size, n_chunks, sim, todo, fits))
        programs += [sim] + list(fits.values())
    total = sum(reps * len(item[6]) for item in plan)

    if jax.process_count() > 1:
        # jax.distributed: every process simulates the same keys; inputs become global
        # arrays over the mesh of all processes' devices and results are gathered back.
        mesh = replicate_mesh()

        def place(tree, batched):
            return place_for_mesh(tree, mesh, batched)
    else:
        def place(tree, batched):
            return tree

    workers = host_workers(jax.device_count())
    # (setting index, method) → chunk outputs, seconds; simulate seconds per setting
    chunks = {(i, spec.name): [] for i, item in enumerate(plan) for spec in item[6]}
    clock = {key: {"wait_s": 0.0, "compile_s": 0.0, "run_s": 0.0} for key in chunks}
    sim_clock = {}

    def jobs(builder):
        # One stream over every setting, generated on this thread as the workers need it:
        # programs come from the builder in order while earlier chunks run, and no setting
        # waits for the previous one's slowest method.
        for i, (s, g, g_pad, size, n_chunks, sim_prog, todo, fits) in enumerate(plan):
            omega = (np.arange(g_pad) < g).astype(np.float64)
            t0 = time.perf_counter()
            sim, sim_compile = builder.get(sim_prog)
            sim_clock[i] = {"simulate_compile_s": sim_compile, "simulate_wait_s": time.perf_counter() - t0}
            for ci in range(n_chunks):
                # (on the host: a program's output is committed to its device, and a program
                # compiled for several devices refuses it; the keys are a few bytes)
                keys = np.asarray(replicate_keys(seed, s.n, ci * size, (ci + 1) * size))
                data = sim(place(keys, True),
                           place((np.float64(s.c), np.float64(s.rho)), False))
                for spec in todo:
                    t1 = time.perf_counter()
                    ev, compile_s = builder.get(fits[spec.name])
                    clock[i, spec.name]["wait_s"] += time.perf_counter() - t1
                    clock[i, spec.name]["compile_s"] += compile_s
                    shared = (omega, truth.s, truth.kappa, truth.q, np.float64(spec.ridge),
                              np.float64(spec.v_bound), np.float64(gtol))
                    yield partial(_run_chunk, (i, spec.name), min(size, reps - ci * size), ev, data,
                                  place(shared, False))

    builder = Builder(programs, ahead=compile_ahead)
    try:
        with progress(total, desc="simulate", enabled=show_progress) as bar:
            for key, n_done, out, seconds in run_in_order(jobs(builder), workers):
                clock[key]["run_s"] += seconds
                chunks[key].append(out)
                bar.update(n_done)
    finally:
        builder.close()
    parts, timings = [], []
    for i, (s, _, g_pad, size, n_chunks, _, todo, _) in enumerate(plan):
        for spec in todo:
            out = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[:reps], *chunks[i, spec.name])
            part = {"n": np.full(reps, s.n), "c": np.full(reps, s.c), "rho": np.full(reps, s.rho),
                    "method": np.full(reps, spec.name, dtype=object), "rep": np.arange(reps)}
            part.update((f, np.asarray(getattr(out, f))) for f in ReplicateMetrics._fields)
            parts.append(part)
            timings.append({"n": s.n, "c": s.c, "rho": s.rho, "method": spec.name, "fits": reps,
                            "fitted_as_n": k * g_pad, "chunk": size, "chunks": n_chunks,
                            **clock[i, spec.name], **sim_clock[i]})
    columns = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    for col in ("ok",) + CHECKS + ("converged",):
        columns[col] = columns[col].astype(bool)
    columns["n_iter"] = columns["n_iter"].astype(int)
    return SweepResult(columns=columns, seed=int(seed), reps=reps, params=params, methods=tuple(names),
                       timing_rows=tuple(timings))
