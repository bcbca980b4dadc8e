"""Integer-code a canonical frame into the arrays every estimator shares.

Records that share (a, b, k, L, F, X) share η, so the design stores *cells* — unique
combinations with summed statistics (w, wy, wt) — and, for cluster sums and resampling,
*pairs*: the non-empty (prompt cluster, cell) combinations with their own statistics.
Without lengths MT-Bench's 9.7k records collapse to ≤ 600 cells; a bootstrap or fold
weight per cluster becomes cell statistics by one segment sum over pairs, so resampled
fits keep the static shapes that ``vmap`` needs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..io.columns import LoadReport, check_canonical, warn_case_variants
from ..io.families import family_function
from .params import Layout
from .spec import ModelSpec
from ..runtime.validate import OscarDataWarning, OscarInputError, resolve_name

__all__ = ["GROUP_MIN_CELLS", "Design", "DesignArrays", "build_design", "cell_stats_from_cluster_weights",
           "with_groups"]


class DesignArrays(NamedTuple):
    """Arrays of a design (a pytree; shapes with C_ cells, P pairs, U covariates).

    a, b, k : (C_,) int32   slot-A candidate, slot-B candidate, judge of each cell
    z       : (C_, 2+U)     covariates (L, F, X_1..X_U)
    stats   : (C_, 3)       full-data (w, wy, wt) per cell
    pair_cell, pair_g : (P,) int32   cell and prompt cluster of each pair
    pair_stats : (P, 3)     (w, wy, wt) of the records of that cluster in that cell
    cell_group : (C_,) int32 or None   the (a, b, k) group of each cell (:func:`with_groups`)
    group_cell : (n_g,) int32 or None  a cell of each group (its a, b, k and F)

    With groups (many cells per (a, b, k), e.g. a continuous length), the derivative passes
    sum a few moments per group and apply the chain rule per group
    (:func:`~oscar_jax.model.grouped.group_derivatives`); without them (None), per cell.
    """

    a: jax.Array
    b: jax.Array
    k: jax.Array
    z: jax.Array
    stats: jax.Array
    pair_cell: jax.Array
    pair_g: jax.Array
    pair_stats: jax.Array
    cell_group: jax.Array | None = None
    group_cell: jax.Array | None = None


@dataclass(frozen=True, eq=False)
class Design:
    """A coded dataset: JAX arrays plus the name tables and notes around them."""

    arrays: DesignArrays
    candidates: tuple[str, ...]
    judges: tuple[str, ...]
    prompts: tuple
    reference: int
    covariates: tuple[str, ...]
    has_length: bool
    length_scale: float | None
    candidate_family: tuple[str, ...]
    judge_family: tuple[str, ...]
    n_records: int
    record_cell: np.ndarray
    record_cluster: np.ndarray
    notes: tuple[str, ...] = ()
    report: LoadReport | None = None
    family_nonzero: bool = True
    counts: dict = field(default_factory=dict)

    @property
    def n_cand(self) -> int:
        return len(self.candidates)

    @property
    def n_judge(self) -> int:
        return len(self.judges)

    @property
    def n_clusters(self) -> int:
        return len(self.prompts)

    @property
    def n_cells(self) -> int:
        return int(self.arrays.a.shape[0])

    def layout(self, spec: ModelSpec) -> Layout:
        return Layout(self.n_cand, self.n_judge, self.reference, len(self.covariates), spec.structure())

    def effective_spec(self, spec: ModelSpec) -> tuple[ModelSpec, list[str]]:
        """Drop terms the data cannot support, with the note that says so (never silently)."""
        notes = []
        if "len" in spec.terms and not self.has_length:
            spec = spec.without("len")
            notes.append("length term dropped: the data carry no response lengths or texts (L not estimable)")
        if "fam" in spec.terms and not self.family_nonzero:
            spec = spec.without("fam")
            notes.append("family term dropped: no judge shares a family with any candidate (F ≡ 0)")
        if "cov" in spec.terms and not self.covariates:
            spec = spec.without("cov")
            notes.append("covariate term dropped: no user covariates were given to build_design")
        return spec, notes

    def cluster_weights_to_stats(self, omega) -> jax.Array:
        return cell_stats_from_cluster_weights(self.arrays, omega, self.n_cells)


def cell_stats_from_cluster_weights(arrays: DesignArrays, omega, n_cells: int) -> jax.Array:
    """Cell statistics when prompt cluster g carries weight ω_g (bootstrap counts, fold masks).

    omega : (G,) or (B, G). Returns (C_, 3) or (B, C_, 3).
    """
    omega = jnp.asarray(omega, dtype=jnp.float64)

    def one(om):
        weighted = arrays.pair_stats * om[arrays.pair_g][:, None]
        return jax.ops.segment_sum(weighted, arrays.pair_cell, num_segments=n_cells)

    return jax.vmap(one)(omega) if omega.ndim == 2 else one(omega)


# Below this many cells a derivative pass costs microseconds either way; above it, grouping
# pays when the groups are at most half as many as the cells.
GROUP_MIN_CELLS = 1 << 15


def with_groups(arrays: DesignArrays, n_cand: int, n_judge: int, *, force: bool = False,
                codes: np.ndarray | None = None) -> DesignArrays:
    """``arrays`` with their (a, b, k) groups attached, when grouping pays (or ``force``).

    A group holds the cells of one (candidate A, candidate B, judge) (a continuous length
    makes each record its own cell, yet Chatbot-Arena-sized data have ~20 records per
    group). Groups are numbered in order of first appearance; host numpy, one hash pass
    (none when ``codes``, each cell's group so numbered, is known already).
    (A dense C × C × K grid, whose per-group sums become sums over its axes, was no faster
    at 10⁵ records, C = 50, K = 20: 3.8 against 3.5 ms per derivative evaluation.)
    """
    none = arrays._replace(cell_group=None, group_cell=None)
    n = int(arrays.a.shape[0])
    if not force and n < GROUP_MIN_CELLS:
        return none
    if codes is None:
        a, b, k = (np.asarray(x, np.int64) for x in (arrays.a, arrays.b, arrays.k))
        codes = pd.factorize((a * n_cand + b) * n_judge + k, sort=False)[0]
    n_g = int(codes.max()) + 1
    if not force and 2 * n_g > n:
        return none
    first = np.empty(n_g, np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    return arrays._replace(cell_group=jax.device_put(codes.astype(np.int32)),
                           group_cell=jax.device_put(first.astype(np.int32)))


def _components(a: np.ndarray, b: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return connected_components(graph, directed=False)


def _warn_dominant_length(log_ratio: np.ndarray, la: np.ndarray, lb: np.ndarray) -> None:
    """Warn when one outlying record carries most of Σ(ℓ − ℓ̄)², and so sets s_L for everyone.

    s_L is the standard deviation of the log length ratios (method §3.2, divisor N), which
    a single absurd length (a unit or parsing error) can inflate without bound, shrinking
    every other record's L towards 0 and inflating β_len. A large share alone is common in
    small data with honest lengths, so the record must also lie more than 10 standard
    deviations of the other records from their mean.
    """
    n = len(log_ratio)
    dev = (log_ratio - log_ratio.mean()) ** 2
    total = float(dev.sum())
    if n < 10 or total <= 0:
        return
    i = int(np.argmax(dev))
    others = np.delete(log_ratio, i)
    outlying = abs(log_ratio[i] - others.mean()) > 10 * others.std()
    if dev[i] / total > 0.25 and outlying:
        side, value = ("len_a", la[i]) if abs(np.log1p(la[i]) - np.median(np.log1p(la))) >= \
            abs(np.log1p(lb[i]) - np.median(np.log1p(lb))) else ("len_b", lb[i])
        warnings.warn(
            f"column {side!r} row {i + 1}: length {value:g} carries {100 * dev[i] / total:.0f}% of the variance of "
            "the log length ratios, so it alone sets the length scale s_L (and so β_len); check that value "
            "(lengths are character counts) and fix or drop it", OscarDataWarning, stacklevel=3)


def _sorted_codes(*columns) -> tuple[tuple[np.ndarray, ...], tuple[str, ...]]:
    """Integer codes (int32) of string columns into their sorted common names.

    One hash pass (``pd.factorize``) over all records, then the few distinct names are
    sorted; a Python dictionary lookup per record cost ~0.3 s per million records.
    """
    codes, uniques = pd.factorize(np.concatenate(columns), sort=False)
    names = [str(u) for u in uniques]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), np.int32)
    rank[order] = np.arange(len(names), dtype=np.int32)
    coded = rank[codes]
    n = len(columns[0])
    return tuple(coded[i * n:(i + 1) * n] for i in range(len(columns))), tuple(names[i] for i in order)


def _cell_codes(a, b, k, z, n_cand: int, n_judge: int) -> tuple[np.ndarray, np.ndarray]:
    """(cell, (a, b, k) group) of each record: codes of the unique (a, b, k, z) and of the
    unique (a, b, k), in order of first appearance.

    Built by factorizing one int64 key column at a time (the codes so far, then each z
    column's own codes), so every step hashes integers; a pandas MultiIndex over float
    columns cost ~1 s per million records. Codes stay below N, so each combined key
    (< N · N) fits in int64.
    """
    group, _ = pd.factorize((a.astype(np.int64) * n_cand + b) * n_judge + k, sort=False)
    code = group
    for j in range(z.shape[1]):
        col = z[:, j] + 0.0  # −0.0 and 0.0 are one value
        zc, zu = pd.factorize(col, sort=False)
        code, _ = pd.factorize(code.astype(np.int64) * len(zu) + zc, sort=False)
    return np.asarray(code, dtype=np.int64), group


def _sum_by(codes: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, m) sums of the rows of ``values`` (N, m) by code, in record order."""
    return np.column_stack([np.bincount(codes, weights=values[:, j], minlength=n) for j in range(values.shape[1])])


def build_design(frame: pd.DataFrame, *, reference_judge: str | None = None, family_map=None,
                 covariates=(), length_scale: float | None = None,
                 report: LoadReport | None = None, require_connected: bool = True) -> Design:
    """Code a canonical frame (from :func:`~oscar_jax.io.data.load_judgments`) into a Design.

    Parameters
    ----------
    frame
        Canonical judgments.
    reference_judge
        Judge with γ fixed at 1: exact name or unique case-insensitive substring. Default:
        the judge with the most records (ties broken by name).
    family_map
        dict (name → family) or callable overriding :func:`~oscar_jax.io.families.family_of`.
    covariates
        Names of extra numeric columns: signed record-level contrasts between slots A and
        B (e.g. a brand-name contrast) that enter η as β_cov,k · X (per judge).
    length_scale
        s_L to use instead of the frame's own (folds and bootstraps reuse the full-data
        value, Appendix B.2).
    require_connected
        Raise when the comparison graph is disconnected (scores of different components
        are not comparable).
    """
    missing = [c for c in ("prompt", "candidate_a", "candidate_b", "judge", "outcome") if c not in frame.columns]
    if missing:
        raise OscarInputError(f"frame lacks canonical column(s) {missing}; read data with load_judgments()")
    n = len(frame)
    if n == 0:
        raise OscarInputError("no records (empty data)")
    check_canonical(frame)
    notes: list[str] = []
    cand_a = frame["candidate_a"].astype(str).to_numpy()
    cand_b = frame["candidate_b"].astype(str).to_numpy()
    same = cand_a == cand_b
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise OscarInputError(f"record {row}: candidate {cand_a[row]!r} is compared with itself; remove such records")
    (a, b), candidates = _sorted_codes(cand_a, cand_b)
    if len(candidates) < 2:
        raise OscarInputError(f"only one candidate ({candidates[0]!r}) in the data; a ranking needs at least two")
    (k,), judges = _sorted_codes(frame["judge"].astype(str).to_numpy())
    warn_case_variants("candidate", candidates)
    warn_case_variants("judge", judges)
    j_index = {j: i for i, j in enumerate(judges)}

    if reference_judge is None:
        counts = np.bincount(k, minlength=len(judges))
        ref = int(np.argmax(counts))  # first maximum = alphabetical tie-break
    else:
        ref = j_index[resolve_name("reference judge", str(reference_judge), list(judges))]

    y = pd.to_numeric(frame["outcome"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(y) | (y < 0) | (y > 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(f"column 'outcome' record {row}: {frame['outcome'].iloc[row]!r} is not a score in [0, 1]")
    w = pd.to_numeric(frame["weight"]).to_numpy(dtype=float) if "weight" in frame.columns else np.ones(n)
    tie_kind = frame["tie_kind"].to_numpy() if "tie_kind" in frame.columns else np.where(y == 0.5, "tie", "")
    is_tie = (tie_kind == "tie") | (tie_kind == "bothbad") | (y == 0.5)

    prompts_col = frame["prompt"].to_numpy()
    prompt_codes, prompts = pd.factorize(pd.Series(prompts_col, dtype=object), sort=False)
    g = prompt_codes.astype(np.int32)

    # Length contrast L = log((ℓ_A+1)/(ℓ_B+1)) / s_L (Section 3.2), s_L with divisor N.
    has_length = "len_a" in frame.columns and "len_b" in frame.columns
    L = np.zeros(n)
    if has_length:
        la = frame["len_a"].to_numpy(dtype=float)
        lb = frame["len_b"].to_numpy(dtype=float)
        for name, col in (("len_a", la), ("len_b", lb)):
            badl = ~np.isfinite(col) | (col < 0)
            if badl.any():
                row = int(np.flatnonzero(badl)[0])
                raise OscarInputError(f"column {name!r} record {row}: invalid length {col[row]!r}; lengths must be finite and ≥ 0")
        log_ratio = np.log1p(la) - np.log1p(lb)
        scale = float(np.std(log_ratio)) if length_scale is None else float(length_scale)
        if length_scale is None:
            _warn_dominant_length(log_ratio, la, lb)
        if not np.isfinite(scale) or scale <= 0:
            notes.append("all length contrasts are zero (s_L = 0): the length term is not estimable")
            has_length = False
            scale = None
        else:
            L = log_ratio / scale
            if report is not None and getattr(report, "lengths", ""):
                notes.append(report.lengths)
    else:
        scale = None

    fam = family_function(family_map)
    cand_family = tuple(str(fam(c)) for c in candidates)
    judge_family = tuple(str(fam(j)) for j in judges)
    # Families as integer codes: comparing names record by record was a Python-object pass.
    fam_code = {f: i for i, f in enumerate(sorted(set(cand_family) | set(judge_family)))}
    cf = np.asarray([fam_code[f] for f in cand_family])
    jf = np.asarray([fam_code[f] for f in judge_family])
    F = (cf[a] == jf[k]).astype(float) - (cf[b] == jf[k]).astype(float)
    family_nonzero = bool(np.any(F != 0))

    covariates = tuple(covariates or ())
    X = np.zeros((n, len(covariates)))
    for j, col in enumerate(covariates):
        if col not in frame.columns:
            raise OscarInputError(f"covariate column {col!r} is not in the frame; pass keep_columns=[{col!r}] to load_judgments")
        vals = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)
        badc = ~np.isfinite(vals)
        if badc.any():
            row = int(np.flatnonzero(badc)[0])
            raise OscarInputError(f"covariate column {col!r} record {row}: {frame[col].iloc[row]!r} is not a finite number")
        X[:, j] = vals

    # Cells: unique (a, b, k, L, F, X).
    z = np.column_stack([L, F, X])
    cell_codes, record_group = _cell_codes(a, b, k, z, len(candidates), len(judges))
    n_cells = int(cell_codes.max()) + 1
    first = np.full(n_cells, -1, dtype=np.int64)
    first[cell_codes[::-1]] = np.arange(n)[::-1]
    rec_stats = np.column_stack([w, w * y, w * is_tie.astype(float)])
    cell_stats = _sum_by(cell_codes, rec_stats, n_cells)

    pair_key = g.astype(np.int64) * n_cells + cell_codes
    pair_codes, pair_uniques = pd.factorize(pair_key, sort=True)
    pair_uniques = np.asarray(pair_uniques, dtype=np.int64)
    pair_stats = _sum_by(pair_codes, rec_stats, len(pair_uniques))

    if require_connected:
        n_comp, labels = _components(a, b, len(candidates))
        if n_comp > 1:
            groups = [sorted(candidates[i] for i in np.flatnonzero(labels == c)) for c in range(n_comp)]
            shown = "; ".join("{" + ", ".join(gr[:8]) + (", …" if len(gr) > 8 else "") + "}" for gr in groups)
            raise OscarInputError(
                f"the comparison graph is disconnected ({n_comp} components: {shown}); scores in different "
                "components are not comparable — add comparisons that link them or fit each component separately"
            )

    judge_counts = np.bincount(k, minlength=len(judges))
    # Cast on the host and device_put: jnp.asarray compiles a copy program per shape.
    put = jax.device_put
    arrays = DesignArrays(
        a=put(np.asarray(a[first], np.int32)),
        b=put(np.asarray(b[first], np.int32)),
        k=put(np.asarray(k[first], np.int32)),
        z=put(np.asarray(z[first], np.float64)),
        stats=put(np.asarray(cell_stats, np.float64)),
        pair_cell=put(np.asarray(pair_uniques % n_cells, np.int32)),
        pair_g=put(np.asarray(pair_uniques // n_cells, np.int32)),
        pair_stats=put(np.asarray(pair_stats, np.float64)),
    )
    # Cells are numbered by first appearance, so their groups keep the records' numbering.
    arrays = with_groups(arrays, len(candidates), len(judges), codes=record_group[first])
    return Design(
        arrays=arrays,
        candidates=candidates,
        judges=judges,
        prompts=tuple(prompts),
        reference=ref,
        covariates=covariates,
        has_length=has_length,
        length_scale=scale,
        candidate_family=cand_family,
        judge_family=judge_family,
        n_records=n,
        record_cell=cell_codes,
        record_cluster=g,
        notes=tuple(notes),
        report=report,
        family_nonzero=family_nonzero,
        counts={
            "judge_records": {judges[i]: int(c) for i, c in enumerate(judge_counts)},
            "candidate_votes": {candidates[i]: int(c) for i, c in
                                enumerate(np.bincount(a, minlength=len(candidates)) + np.bincount(b, minlength=len(candidates)))},
        },
    )
