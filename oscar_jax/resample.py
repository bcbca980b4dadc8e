"""Batched refits over prompt-cluster weights: the prompt bootstrap (Section 5; method §5).

Every resampling scheme in the package is a (B, G) matrix of prompt-cluster weights ω on
one fixed :class:`~oscar_jax.design.Design`: a prompt-bootstrap replicate is a vector of
multinomial counts (how often each prompt was drawn), a fold is a 0/1 mask, and the paired
refit bootstrap of Appendix E.3 multiplies the two. Weights become cell statistics by one
segment sum, so every replicate has the same static shapes and all of them are solved by
one compiled ``jax.vmap`` of :func:`oscar_jax.core.fit_core` — which redoes the B.2 column
selection on each replicate's weighted data, so a column that a replicate cannot identify
is fixed at zero there, and returns every B.3 check per replicate.

Layers:

* :func:`bootstrap_indices`, :func:`bootstrap_weights`, :func:`within_fold_weights`,
  :func:`prompt_folds`, :func:`fold_masks` — weight matrices from explicit PRNG keys/seeds.
* :func:`batched_fit_core` — the pure batched core: (B, G) weights and (B, P) starts →
  :class:`~oscar_jax.core.FitCore` with a leading B axis. A pure function of arrays, so a
  1-D device mesh over replicates can shard it (``jax.jit(..., in_shardings=...)``).
* :func:`fit_batch` — validated, chunked (bounded memory), multi-start wrapper with a
  progress bar, returning :class:`BatchFit`.
* :func:`bootstrap` → :class:`BootstrapResult`: percentile intervals and rank
  distributions around the full-data fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _x64  # noqa: F401
from .batching import default_vmap_width, map_replicates
from .core import FitCore, fit_core
from .design import Design
from .fit import _starts_for, as_design, fit
from .params import Layout
from .program_cache import persistent_jit
from .progress import progress
from .bootstrap_result import BootstrapResult
from .results import FitResult
from .sandwich import targets_batch_jit
from .sharding import to_host
from .spec import ModelSpec, parse_model
from .validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = [
    "BatchFit",
    "BootstrapResult",
    "REPLICATE_CHECKS",
    "batched_fit_core",
    "batched_fit_core_jit",
    "bootstrap",
    "bootstrap_indices",
    "bootstrap_weights",
    "fit_batch",
    "fold_masks",
    "prompt_folds",
    "within_fold_weights",
]

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


# --------------------------------------------------------------------------- weights
def _key(key_or_seed):
    if isinstance(key_or_seed, (int, np.integer)):
        return jax.random.PRNGKey(int(key_or_seed))
    return key_or_seed


def bootstrap_indices(key, n_clusters: int, replicates: int) -> jax.Array:
    """(B, G) int32: prompt clusters drawn with replacement, G draws per replicate.

    ``key`` is a PRNG key or an int seed. ``bootstrap_weights`` is the count matrix of these
    draws, so refitting with those weights equals refitting the explicitly resampled records.
    """
    return jax.random.randint(_key(key), (replicates, n_clusters), 0, n_clusters, dtype=jnp.int32)


def _counts(idx, n_clusters: int):
    return jax.vmap(lambda i: jnp.zeros(n_clusters, jnp.float64).at[i].add(1.0))(idx)


def _bootstrap_weights(key, n_clusters: int, replicates: int):
    return _counts(bootstrap_indices(key, n_clusters, replicates), n_clusters)


# One compiled program (eagerly, the vmapped scatter alone compiled a dozen).
_bootstrap_weights_jit = jax.jit(_bootstrap_weights, static_argnums=(1, 2))


def bootstrap_weights(key, n_clusters: int, replicates: int) -> jax.Array:
    """(B, G) float64 multinomial prompt counts: a prompt bootstrap (method §5).

    Each row sums to G. Deterministic for a given key (or int seed).
    """
    return _bootstrap_weights_jit(_key(key), int(n_clusters), int(replicates))


def within_fold_weights(key, folds, replicates: int) -> jax.Array:
    """(B, G) counts from resampling clusters with replacement *within* each fold (E.3).

    ``folds`` (G,) int fold (or split) id of each cluster. Fold f keeps exactly its own
    size G_f: its G_f draws come from its own clusters only, so train/test membership of
    every record is unchanged and the folds stay fixed across replicates.
    """
    folds = np.asarray(folds)
    if folds.ndim != 1 or folds.size == 0 or not np.issubdtype(folds.dtype, np.integer) or folds.min() < 0:
        raise OscarInputError("folds must be a non-empty 1-D array of non-negative integer fold ids (one per cluster)")
    g = folds.size
    order = np.argsort(folds, kind="stable")
    sizes = np.bincount(folds)
    offsets = np.cumsum(sizes) - sizes
    slot_fold = folds[order]  # slots sorted by fold: fold f owns exactly sizes[f] slots
    draws = jax.random.randint(_key(key), (replicates, g), 0, jnp.asarray(sizes[slot_fold])[None, :], dtype=jnp.int32)
    picked = jnp.asarray(order, jnp.int32)[jnp.asarray(offsets[slot_fold], jnp.int32)[None, :] + draws]
    return _counts(picked, g)


# Seeded draws as one compiled program each (eager, every step is its own XLA compilation).
_permutation_jit = jax.jit(lambda seed, g: jax.random.permutation(jax.random.PRNGKey(seed), g), static_argnums=1)
_replicate_key_jit = jax.jit(lambda seed, i: jax.random.fold_in(jax.random.PRNGKey(seed), i), static_argnums=1)


def prompt_folds(design_or_n: Design | int, n_folds: int = 3, seed: int = 0) -> np.ndarray:
    """(G,) int fold id of every prompt cluster: a random, balanced partition (E.2).

    Clusters are permuted with ``jax.random.PRNGKey(seed)`` and dealt round-robin, so fold
    sizes differ by at most one and every record of a prompt lands in the same fold. The
    same (G, n_folds, seed) always gives the same folds, for every model.
    """
    g = design_or_n.n_clusters if isinstance(design_or_n, Design) else int(design_or_n)
    n_folds = check_positive_int("n_folds", n_folds, minimum=2)
    if n_folds > g:
        raise OscarInputError(f"n_folds = {n_folds} exceeds the number of prompt clusters ({g}); use at most {g} folds")
    perm = np.asarray(_permutation_jit(np.int64(seed), g))
    folds = np.empty(g, dtype=np.int64)
    folds[perm] = np.arange(g) % n_folds
    return folds


def fold_masks(folds) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) 0/1 cluster weights, each (F, G): row f trains without fold f."""
    folds = np.asarray(folds)
    test = (folds[None, :] == np.arange(folds.max() + 1)[:, None]).astype(np.float64)
    return 1.0 - test, test


# --------------------------------------------------------------------------- batched core
def batched_fit_core(arrays, omega, starts, *, layout: Layout, n_clusters: int, ridge=0.05,
                     v_bound=15.0, max_iter: int = 100, mask=None, vmap_width: int | None = None) -> FitCore:
    """:func:`~oscar_jax.core.fit_core` over a batch of cluster weights, one start each.

    Parameters
    ----------
    arrays : DesignArrays (shared by all replicates).
    omega : (B, G) prompt-cluster weights.
    starts : (B, P) one starting point per replicate (multi-start = several rows).
    mask : optional (B, P) fixed-coordinate masks; default (None) redoes B.2 column
        selection on each replicate's weighted data inside ``fit_core``.
    vmap_width : replicates solved side by side (static): None vmaps the whole batch, 1
        runs them in sequence inside the compiled call (faster on CPU; see
        :mod:`oscar_jax.batching`), w > 1 vmaps groups of w.

    Returns
    -------
    FitCore with a leading B axis on every field. Pure and unjitted: jit it (or use
    :data:`batched_fit_core_jit`), and shard it over the leading axis of ``omega`` and
    ``starts`` if you have several devices.
    """
    core = partial(fit_core, layout=layout, n_clusters=n_clusters, ridge=ridge, v_bound=v_bound, max_iter=max_iter)
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
        :class:`~oscar_jax.core.FitCore` of numpy arrays, each with a leading B axis:
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

    def failure_summary(self) -> str:
        counts = self.failure_counts()
        parts = [f"{counts[n]} {_CHECK_LABELS[n]}" for n in REPLICATE_CHECKS if counts[n]]
        head = f"{self.n_failed} of {self.n} fits failed a B.3 check and are excluded"
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
        starts = np.asarray(_starts_for(layout, 2, int(seed)))  # = start_points(layout, 2, PRNGKey(seed))
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


def fit_batch(design: Design, model: str | ModelSpec, omega, *, starts=None, mask=None,
              chunk_size: int | None = None, max_iter: int = 100, seed: int = 0,
              show_progress: bool | None = None, desc: str | None = None, devices=None,
              vmap_width: int | None = None) -> BatchFit:
    """Fit one model on every row of a (B, G) cluster-weight matrix in compiled batches.

    Parameters
    ----------
    design
        The data (a :class:`~oscar_jax.design.Design`; covariates such as s_L are those
        of the full data and are reused by every replicate).
    model
        Model string or :class:`~oscar_jax.spec.ModelSpec`; terms the data cannot support
        are dropped with a note, as in :func:`~oscar_jax.fit`.
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
        Rows per compiled call (memory bound; default from :func:`auto_chunk_size`). The
        last chunk is padded to the same shape with copies of its first row, so a run
        compiles once per chunk size.
    show_progress
        Progress bar over chunks (default: only on a TTY; see :mod:`oscar_jax.progress`).
    devices
        Devices to shard the replicate axis over (default: all of ``jax.devices()``).
        With more than one, each chunk is split over a 1-D mesh (``oscar_jax.sharding``);
        the estimates are the same as on one device.
    vmap_width
        Replicates solved side by side within a chunk (see :mod:`oscar_jax.batching`):
        default 1 on CPU (in sequence inside the compiled call), the whole chunk on an
        accelerator.

    Returns
    -------
    BatchFit
        Per-replicate estimates and B.3 checks; ``valid`` flags replicates that passed.
    """
    if not isinstance(design, Design):
        raise OscarInputError("fit_batch() needs a Design; build one with oscar_jax.fit.as_design(data)")
    max_iter = check_positive_int("max_iter", max_iter)
    omega = _check_omega(omega, design.n_clusters)
    spec = parse_model(model)
    eff, notes = design.effective_spec(spec)
    layout = design.layout(eff)
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
    if chunk_size is None:
        chunk = min(n_rows, auto_chunk_size(design, layout))
    else:
        chunk = check_positive_int("chunk_size", chunk_size)
    if vmap_width is None:
        vmap_width = default_vmap_width()
    elif vmap_width is not None:
        vmap_width = check_positive_int("vmap_width", vmap_width)
    kw = dict(layout=layout, n_clusters=design.n_clusters, ridge=eff.ridge, v_bound=eff.v_bound, max_iter=max_iter,
              vmap_width=vmap_width)
    devs = list(jax.devices() if devices is None else devices)
    if len(devs) > 1:
        from .sharding import padded_size, place_for_mesh, replicate_mesh, replicate_sharded

        mesh = replicate_mesh(devs)
        chunk = padded_size(chunk, mesh)  # every device gets the same number of rows
        # Across processes (jax.distributed) inputs must be global arrays: each process
        # contributes its own devices' rows of the identical host copy.
        shared = place_for_mesh(design.arrays, mesh, batched=False)
        if mask is None:
            sharded = replicate_sharded(batched_fit_core, (None, 0, 0), mesh=mesh, **kw)

            def run(om, st, mk):
                return sharded(shared, place_for_mesh(om, mesh, True), place_for_mesh(st, mesh, True))
        else:
            sharded = replicate_sharded(_batched_core_masked, (None, 0, 0, 0), mesh=mesh, **kw)

            def run(om, st, mk):
                return sharded(shared, *(place_for_mesh(x, mesh, True) for x in (om, st, mk)))
    else:
        def run(om, st, mk):
            return batched_fit_core_jit(design.arrays, om, st, mask=mk, **kw)
    parts = []
    with progress(n_rows, desc or f"{eff.name} fits", enabled=show_progress) as bar:
        for lo in range(0, n_rows, chunk):
            rows = np.arange(lo, min(lo + chunk, n_rows))
            take = np.concatenate([rows, np.repeat(rows[:1], chunk - rows.size)])  # pad: one compiled shape
            mk = None if mask is None else mask[take]  # host arrays: jnp.asarray compiles copies
            out = to_host(run(rows_omega[take], rows_start[take], mk))
            parts.append([value[: rows.size] for value in out])
            bar.update(rows.size)
    core = FitCore(*[np.concatenate(field_parts) for field_parts in zip(*parts)])
    core = _select_starts(core, n_rep, n_starts)
    return BatchFit(core=core, omega=omega, spec=spec, effective_spec=eff, layout=layout,
                    notes=tuple(design.notes) + tuple(notes))


# --------------------------------------------------------------------------- the bootstrap
def bootstrap(data, model: str | ModelSpec = "oscar", replicates: int = 500, seed: int = 0, *,
              ci_prob: float = 0.95, full: FitResult | None = None, chunk_size: int | None = None,
              max_iter: int = 100, reference_judge: str | None = None, family_map=None, covariates=(),
              schema: str | None = None, bothbad: str = "tie", ridge: float | None = None,
              show_progress: bool | None = None, warn: bool = True,
              vmap_width: int | None = None) -> BootstrapResult:
    """Prompt bootstrap of a fit (method §5): refit on multinomial prompt weights in compiled batches.

    Parameters
    ----------
    data
        A Design, path, DataFrame or records (as for :func:`~oscar_jax.fit`).
    model
        Model string or ModelSpec (default ``"oscar"``).
    replicates
        B, number of bootstrap replicates (500 in the paper).
    seed
        Seeds both the random second start of the full-data fit and the resampling
        (``jax.random.PRNGKey(seed)`` folded with 1); same seed, same result.
    full
        An existing full-data :class:`~oscar_jax.results.FitResult` of this design and
        model to reuse (else :func:`~oscar_jax.fit` is called with ``seed``).
    chunk_size
        Replicates per compiled call (bounded memory; default automatic).
    vmap_width
        Replicates solved side by side within a call (default: 1 on CPU, the whole chunk
        on an accelerator; see :mod:`oscar_jax.batching`). The estimates do not depend on it.

    Notes
    -----
    Every replicate is warm-started at the full-data θ̂: the solver is a damped Newton
    with the exact Hessian, so from θ̂ it converges in a few iterations to the replicate's
    own minimum (the starting point changes the cost, not the estimate). Column selection
    (B.2) and every B.3 check are redone per replicate.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from oscar_jax import simulate_design
    >>> from oscar_jax.resample import bootstrap
    >>> boot = bootstrap(simulate_design(seed=0, n_prompts=300), "j+p", replicates=20, seed=0)
    >>> boot.leaderboard().columns[:4].tolist()
    ['rank', 'candidate', 'score', 'score_lo']
    """
    ci_prob = check_ci_prob(ci_prob)
    replicates = check_positive_int("replicates", replicates, minimum=2)
    max_iter = check_positive_int("max_iter", max_iter)
    design = as_design(data, schema=schema, reference_judge=reference_judge, family_map=family_map,
                       covariates=covariates, bothbad=bothbad)
    spec = parse_model(model, ridge)
    eff, _ = design.effective_spec(spec)
    layout = design.layout(eff)
    chunk = chunk_size if chunk_size is not None else min(replicates, auto_chunk_size(design, layout))
    chunk = check_positive_int("chunk_size", chunk)
    if full is None:
        full = fit(design, spec, seed=seed, ci_prob=ci_prob, max_iter=max_iter, warn=warn)
    elif full.design is not design or full.effective_spec.structure() != eff.structure():
        raise OscarInputError("full= must be a fit of the same Design object and model as the bootstrap")
    key = _replicate_key_jit(np.int64(seed), 1)  # = fold_in(PRNGKey(seed), 1)
    omega = np.asarray(bootstrap_weights(key, design.n_clusters, replicates))
    batch = fit_batch(design, eff, omega, starts=full.theta, chunk_size=chunk, max_iter=max_iter,
                      show_progress=show_progress, desc=f"{eff.name} bootstrap", vmap_width=vmap_width)
    batch = BatchFit(core=batch.core, omega=batch.omega, spec=spec, effective_spec=eff, layout=layout,
                     notes=full.notes)
    return BootstrapResult(full=full, batch=batch, seed=int(seed), ci_prob=ci_prob)
