"""Batched refits over prompt-cluster weights: one compiled fit per (B, G) weight matrix.

Weights become cell statistics by one segment sum, so every replicate has the same
static shapes and all of them are solved by one compiled ``jax.vmap`` (or sequential
``lax.map``, see :mod:`oscar_jax.runtime.batching`) of :func:`oscar_jax.infer.fit_core.fit_core` — which
redoes the B.2 column selection on each replicate's weighted data, so a column that a
replicate cannot identify is fixed at zero there, and returns every B.3 check per
replicate.

* :func:`batched_fit_core` — the pure batched core: (B, G) weights and (B, P) starts →
  :class:`~oscar_jax.infer.fit_core.FitCore` with a leading B axis. A pure function of arrays, so a
  1-D device mesh over replicates can shard it (:mod:`oscar_jax.runtime.sharding`).
* :func:`fit_batch` — validated, chunked (bounded memory),
  multi-start wrapper with a progress bar, returning :class:`BatchFit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from ..runtime.batching import default_vmap_width, host_workers, map_replicates, run_in_order
from ..runtime.lazy_jax import jax
from .fit_core import FitCore, fit_core
from ..model.design import Design
from ..model.params import Layout
from ..model.problem import prepare
from ..runtime.jit import persistent_jit
from ..runtime.progress import progress
from .sandwich import targets_batch_jit
from ..runtime.sharding import padded_size, replicate_mesh, sharded_runner, to_host
from ..model.spec import ModelSpec
from .starts import seeded_starts
from ..runtime.validate import OscarInputError, check_positive_int

__all__ = ["BatchFit", "REPLICATE_CHECKS", "auto_chunk_size", "batched_fit_core", "batched_fit_core_jit",
           "default_chunk", "fit_batch"]

# B.3 checks that decide whether a replicate's *point estimate* is usable. The sixth
# check, G > dim θ, guards the cluster sandwich (a G-term variance estimate of a dim-θ
# vector); a percentile bootstrap does not use the sandwich, and a bootstrap replicate
# holds only ≈ 63% distinct prompts, so on MT-Bench (80 prompts, dim θ = 64) it fails
# for most replicates without saying anything about their estimates. It is counted and
# reported (``BatchFit.failure_counts()['clusters']``) but does not exclude a replicate.
REPLICATE_CHECKS = ("stationary", "identified", "curvature_ok", "bounds", "connected")
_CHECK_LABELS = {
    "stationary": "stationarity (‖∇L‖∞/N > 1e-7)",
    "identified": "identification (rank R̂ᵀŴR̂ < dim θ)",
    "curvature_ok": "curvature (penalized Hessian not positive definite)",
    "bounds": "bounds (some v_k at ±15)",
    "connected": "comparison graph disconnected",
}
_MEMORY_BUDGET = 256 * 2 ** 20  # bytes per chunk; keeps a 500-replicate run well under 1 GiB
_MAX_CHUNK = 64  # larger chunks pay more for their slowest replicate (measured on MT-Bench)
PROGRESS_CHUNK = 8  # rows per call when replicates run in sequence: progress moves every 8 fits per thread


def batched_fit_core(arrays, omega, starts, *, layout: Layout, n_clusters: int, ridge=0.05,
                     v_bound=15.0, max_iter: int = 100, mask=None, vmap_width: int | None = None) -> FitCore:
    """:func:`~oscar_jax.infer.fit_core.fit_core` over a batch of cluster weights, one start each.

    Parameters
    ----------
    arrays : DesignArrays (shared by all replicates).
    omega : (B, G) prompt-cluster weights.
    starts : (B, P) one starting point per replicate (multi-start = several rows).
    mask : optional (B, P) fixed-coordinate masks; default (None) redoes B.2 column
        selection on each replicate's weighted data inside ``fit_core``.
    vmap_width : replicates solved side by side (static): None vmaps the whole batch, 1
        runs them in sequence inside the compiled call (faster on CPU; see
        :mod:`oscar_jax.runtime.batching`), w > 1 vmaps groups of w.

    Returns
    -------
    FitCore with a leading B axis on every field. Pure and unjitted: jit it (or use
    :data:`batched_fit_core_jit`), and shard it over the leading axis of ``omega`` and
    ``starts`` if you have several devices.
    """
    core = partial(fit_core, layout=layout, n_clusters=n_clusters, ridge=ridge, v_bound=v_bound, max_iter=max_iter,
                   eigenvalues=False)
    if mask is None:
        return map_replicates(lambda x: core(arrays, x[0], x[1][None]), (omega, starts), vmap_width)
    return map_replicates(lambda x: core(arrays, x[0], x[1][None], mask=x[2]), (omega, starts, mask), vmap_width)


batched_fit_core_jit = persistent_jit(batched_fit_core, static_argnames=("layout", "n_clusters", "max_iter", "vmap_width"))


def _batched_core_masked(arrays, omega, starts, mask, **kw):
    """Positional-mask twin of :func:`batched_fit_core`, for sharding (the mask is batched)."""
    return batched_fit_core(arrays, omega, starts, mask=mask, **kw)


@dataclass(frozen=True, eq=False)
class BatchFit:
    """Fits of one model on B cluster-weight vectors of one design.

    Attributes
    ----------
    core
        :class:`~oscar_jax.infer.fit_core.FitCore` of numpy arrays, each with a leading B axis:
        ``theta`` (B, P), ``mask`` (B, P), ``objective`` (B,), every B.3 check (B,).
    omega
        (B, G) the cluster weights that were fitted.
    spec, effective_spec, layout, notes
        Requested model, the model actually fitted (terms the data cannot support
        dropped, with ``notes``) and its parameter layout.
    """

    core: FitCore
    omega: np.ndarray
    spec: ModelSpec
    effective_spec: ModelSpec
    layout: Layout
    notes: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(self.omega.shape[0])

    @property
    def theta(self) -> np.ndarray:
        return self.core.theta

    @cached_property
    def checks(self) -> dict[str, np.ndarray]:
        """(B,) bool per B.3 check (True = passed), plus ``converged`` and ``clusters``."""
        c = self.core
        return {
            "stationary": np.asarray(c.stationary, bool),
            "identified": np.asarray(c.identified, bool),
            "curvature_ok": np.asarray(c.curvature_ok, bool),
            "bounds": ~np.asarray(c.at_bound, bool),
            "connected": np.asarray(c.connected, bool),
            "converged": np.asarray(c.converged, bool),
            "clusters": np.asarray(c.clusters_ok, bool),
        }

    @cached_property
    def valid(self) -> np.ndarray:
        """(B,) True where every point-estimate check (``REPLICATE_CHECKS``) passed.

        This is ``FitCore.point_ok``: the B.3 checks except G > dim θ, one definition
        shared with the fit core.
        """
        return np.asarray(self.core.point_ok, bool)

    @property
    def n_failed(self) -> int:
        return int(np.sum(~self.valid))

    def failure_counts(self) -> dict[str, int]:
        """Replicates failing each check. Only ``REPLICATE_CHECKS`` exclude a replicate;
        ``converged`` (the solver's stricter 1e-10 tolerance) and ``clusters`` (G > dim θ,
        a sandwich requirement) are reported for information."""
        return {name: int(np.sum(~flags)) for name, flags in self.checks.items()}

    def failure_summary(self, fate: str = "are left out", unit: str = "replicate fits") -> str:
        """"k of B ``unit`` did not converge or failed a check and ``fate``: counts per check"
        (``fate``: what the caller did with them)."""
        counts = self.failure_counts()
        parts = [f"{counts[n]} {_CHECK_LABELS[n]}" for n in REPLICATE_CHECKS if counts[n]]
        if not self.n_failed:
            return f"all {self.n} {unit} converged and passed their checks (Appendix B.3)"
        head = (f"{self.n_failed} of {self.n} {unit} did not converge or failed a check (Appendix B.3) "
                f"and {fate}")
        return head + (": " + "; ".join(parts) if parts else "")

    @cached_property
    def targets(self):
        """Targets (s, h, log γ, log κ, γ̄, field) of every fit, numpy with a leading B."""
        return jax.tree_util.tree_map(np.asarray, targets_batch_jit(np.asarray(self.theta), self.layout))

    @cached_property
    def phi(self) -> np.ndarray:
        """(B, n_phi) expanded parameters φ = J θ (natural-scale coefficients)."""
        return np.asarray(self.theta) @ self.layout.jacobian.T

    def coefficient(self, term: str) -> np.ndarray:
        """(B, K) per-judge coefficient of ``term`` (pos, len, fam, tau); NaN where the
        term is absent or its column was fixed at zero by B.2 in that replicate."""
        k = self.layout.n_judge
        if term not in self.layout.theta_blocks or term == "cov":
            return np.full((self.n, k), np.nan)
        values = self.phi[:, self.layout.phi_blocks[term]]
        kept = np.asarray(self.core.mask)[:, self.layout.theta_blocks[term]] > 0
        return np.where(kept, values, np.nan)


def _check_omega(omega, n_clusters: int) -> np.ndarray:
    arr = np.asarray(omega, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n_clusters:
        raise OscarInputError(
            f"omega must have shape (B, G) = (replicates, {n_clusters} prompt clusters), got {np.shape(omega)}; "
            "build it with bootstrap_weights(), fold_masks() or within_fold_weights()"
        )
    if arr.shape[0] == 0:
        raise OscarInputError("omega has no rows (B = 0); pass at least one weight vector")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        r, g = map(int, np.argwhere(bad)[0])
        raise OscarInputError(f"omega[{r}, {g}] = {arr[r, g]!r}: cluster weights must be finite and ≥ 0")
    empty = arr.sum(axis=1) <= 0
    if empty.any():
        raise OscarInputError(f"omega row {int(np.flatnonzero(empty)[0])} has total weight 0; every replicate needs data")
    return arr


def _check_starts(starts, n_rep: int, n_theta: int, layout: Layout, seed: int) -> np.ndarray:
    """(B, S, P) starts from None (the single fit's), (P,), (S, P) or (B, S, P)."""
    if starts is None:
        starts = np.asarray(seeded_starts(layout, 2, int(seed)))  # = start_points(layout, 2, PRNGKey(seed))
    arr = np.asarray(starts, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, None, :]
    elif arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[-1] != n_theta or arr.shape[0] not in (1, n_rep) or arr.shape[1] < 1:
        raise OscarInputError(
            f"starts must have shape (P,), (S, P) or (B, S, P) with P = {n_theta} (dim θ of this model) "
            f"and B = {n_rep}, got {np.shape(starts)}"
        )
    if not np.all(np.isfinite(arr)):
        raise OscarInputError("starts contain non-finite values")
    return np.broadcast_to(arr, (n_rep,) + arr.shape[1:])


def auto_chunk_size(design: Design, layout: Layout, budget_bytes: int = _MEMORY_BUDGET) -> int:
    """Replicates per compiled call so one chunk's working set stays within ``budget_bytes``.

    Per replicate the core holds the weighted pair statistics (P_pairs × 3), per-cell
    local Hessians (C_ × n_local²) and a few dense θ/φ matrices; ×4 for XLA temporaries.
    """
    n_local = len(layout.local_slots)
    per = 8 * 4 * (3 * int(design.arrays.pair_g.shape[0]) + design.n_cells * (n_local ** 2 + 6)
                   + 8 * layout.n_phi ** 2 + 12 * layout.n_theta ** 2)
    return int(max(1, min(_MAX_CHUNK, budget_bytes // max(per, 1))))


def default_chunk(design: Design, layout: Layout, n_rows: int, workers: int, sequential: bool = False) -> int:
    """Rows per compiled call of a batch of ``n_rows`` run by ``workers`` threads side by side:
    each thread's share of the memory budget, at least one chunk per thread, equal chunks
    (less padding). ``sequential`` (one replicate after another inside a call, as on a CPU):
    at most :data:`PROGRESS_CHUNK` rows, so the progress count moves every few fits instead
    of jumping once a minute; in sequence a chunk's size changes nothing else."""
    chunk = min(n_rows, auto_chunk_size(design, layout, _MEMORY_BUDGET // workers), -(-n_rows // workers))
    if sequential:
        chunk = min(chunk, PROGRESS_CHUNK)
    return -(-n_rows // -(-n_rows // chunk))


def _select_starts(core: FitCore, n_rep: int, n_starts: int) -> FitCore:
    """Keep one row per replicate among its starts: converged first, then smallest objective
    (the rule ``fit_core`` applies to its own starts)."""
    if n_starts == 1:
        return core
    conv = np.asarray(core.converged).reshape(n_rep, n_starts)
    obj = np.asarray(core.objective).reshape(n_rep, n_starts)
    score = np.where(conv, obj, np.inf)
    best = np.where(conv.any(axis=1), np.argmin(score, axis=1), np.argmin(obj, axis=1))
    rows = np.arange(n_rep) * n_starts + best
    out = {}
    for name, value in core._asdict().items():
        if name == "start_objectives":
            out[name] = obj
        else:
            out[name] = np.asarray(value)[rows]
    return FitCore(**out)


def fit_batch(data, model: str | ModelSpec | None = None, omega=None, *, starts=None, mask=None,
              chunk_size: int | None = None, max_iter: int = 100, seed: int = 0,
              show_progress: bool | None = None, desc: str | None = None, devices=None,
              vmap_width: int | None = None, notes: tuple[str, ...] | None = None, **setup) -> BatchFit:
    """Fit one model on every row of a (B, G) cluster-weight matrix in compiled batches.

    Parameters
    ----------
    data
        The data: a :class:`~oscar_jax.model.design.Design`, a prepared
        :class:`~oscar_jax.model.problem.Problem` or anything else
        :func:`~oscar_jax.model.problem.prepare` takes with its ``**setup`` keywords
        (covariates such as s_L are those of the full data and are reused by every
        replicate).
    model
        Model string or :class:`~oscar_jax.model.spec.ModelSpec` (default ``"oscar"``; a
        Problem's own model); terms the data cannot support are dropped with a note, as in
        :func:`~oscar_jax.fit`.
    omega
        (B, G) prompt-cluster weights: bootstrap counts, 0/1 fold masks, or their product.
    starts
        None: the single fit's starts (zero and N(0, 0.08²) from ``seed``), so a row of
        ones reproduces :func:`~oscar_jax.fit`. (P,) or (S, P): the same starts for every
        replicate — pass the full-data θ̂ to warm-start a bootstrap; (B, S, P): per
        replicate. Each (replicate, start) pair is one row of the compiled batch; the best
        start is kept per replicate (converged first, then smallest objective).
    mask
        Optional (P,) or (B, P) fixed-coordinate masks; default: B.2 column selection
        redone on each replicate's weighted data.
    chunk_size
        Rows per compiled call (memory bound; default from :func:`auto_chunk_size`, its
        budget shared by the threads that run chunks side by side on a CPU, with equal
        chunks). The last chunk is padded to the same shape with copies of its first row,
        so a run compiles once per chunk size. The estimates do not depend on it.
    show_progress
        Progress bar over chunks (default: only on a TTY; see :mod:`oscar_jax.runtime.progress`).
    devices
        Devices to shard the replicate axis over (default: all of ``jax.devices()``).
        With more than one, each chunk is split over a 1-D mesh (``oscar_jax.runtime.sharding``);
        the estimates are the same as on one device.
    vmap_width
        Replicates solved side by side within a chunk (see :mod:`oscar_jax.runtime.batching`):
        default 1 on CPU (in sequence inside the compiled call), the whole chunk on an
        accelerator.
    notes
        The notes the :class:`BatchFit` carries (default: the problem's).

    Returns
    -------
    BatchFit
        Per-replicate estimates and B.3 checks; ``valid`` flags replicates that passed.
    """
    if omega is None:
        raise OscarInputError("fit_batch() needs omega, the (B, G) prompt-cluster weights of the replicates")
    problem = prepare(data, model, **setup)
    design, eff, layout = problem.design, problem.effective_spec, problem.layout
    max_iter = check_positive_int("max_iter", max_iter)
    omega = _check_omega(omega, design.n_clusters)
    n_rep = omega.shape[0]
    start_arr = _check_starts(starts, n_rep, layout.n_theta, layout, seed)
    n_starts = start_arr.shape[1]
    if mask is not None:
        mask = np.asarray(mask, dtype=np.float64)
        mask = np.broadcast_to(mask[None] if mask.ndim == 1 else mask, (n_rep, layout.n_theta))
        if not np.all((mask == 0) | (mask == 1)):
            raise OscarInputError("mask entries must be 0 (fixed at zero) or 1 (estimated)")
        mask = np.repeat(mask, n_starts, axis=0)
    rows_omega = np.repeat(omega, n_starts, axis=0)
    rows_start = start_arr.reshape(n_rep * n_starts, layout.n_theta)
    n_rows = rows_omega.shape[0]
    devs = list(jax.devices() if devices is None else devices)
    workers = host_workers(len(devs))
    if vmap_width is None:
        vmap_width = default_vmap_width()
    else:
        vmap_width = check_positive_int("vmap_width", vmap_width)
    if chunk_size is None:
        chunk = default_chunk(design, layout, n_rows, workers, sequential=vmap_width == 1)
    else:
        chunk = check_positive_int("chunk_size", chunk_size)
    kw = dict(layout=layout, n_clusters=design.n_clusters, ridge=eff.ridge, v_bound=eff.v_bound, max_iter=max_iter,
              vmap_width=vmap_width)
    if len(devs) > 1:
        mesh = replicate_mesh(devs)
        chunk = padded_size(chunk, mesh)  # every device gets the same number of rows
        core = batched_fit_core if mask is None else _batched_core_masked
        run = sharded_runner(core, design.arrays, 2 if mask is None else 3, mesh=mesh, **kw)
    else:
        def run(om, st, mk=None):
            return batched_fit_core_jit(design.arrays, om, st, mask=mk, **kw)

    def job(lo):
        rows = np.arange(lo, min(lo + chunk, n_rows))
        take = np.concatenate([rows, np.repeat(rows[:1], chunk - rows.size)])  # pad: one compiled shape
        # host arrays: jnp.asarray would compile copies
        batched = (rows_omega[take], rows_start[take]) + (() if mask is None else (mask[take],))
        return [value[: rows.size] for value in to_host(run(*batched))]

    parts = []
    # Counted in replicates (each may run from several starts); the compile phase is named,
    # so a cold run's first wait does not read as a stall at 0.
    first = np.concatenate([np.arange(min(chunk, n_rows)), np.zeros(max(chunk - n_rows, 0), dtype=int)])
    cold = len(devs) == 1 and batched_fit_core_jit.cached(
        design.arrays, rows_omega[first], rows_start[first], mask=None if mask is None else mask[first], **kw) is False
    unit = "fold" if desc and desc.endswith("folds") else "replicate"
    with progress(n_rep, desc or f"{eff.name} fits", enabled=show_progress, unit=unit) as bar:
        if cold:
            bar.set_postfix_str("compiling (first run on this data shape)")
        rows_done = 0
        for part in run_in_order((partial(job, lo) for lo in range(0, n_rows, chunk)), workers):
            parts.append(part)
            if cold and rows_done == 0:
                bar.set_postfix_str("")
            before = rows_done // n_starts
            rows_done += part[0].shape[0]
            bar.update(rows_done // n_starts - before)
    core = FitCore(*[np.concatenate(field_parts) for field_parts in zip(*parts)])
    core = _select_starts(core, n_rep, n_starts)
    return BatchFit(core=core, omega=omega, spec=problem.spec, effective_spec=eff, layout=layout,
                    notes=problem.notes if notes is None else tuple(notes))
