"""Integer-code a canonical frame into the arrays every estimator shares.

Records that share (a, b, k, L, F, X) share η, so the design stores *cells* — unique
combinations with summed statistics (w, wy, wt) — and, for cluster sums and resampling,
*pairs*: the non-empty (prompt cluster, cell) combinations with their own statistics.
Without lengths MT-Bench's 9.7k records collapse to ≤ 600 cells; a bootstrap or fold
weight per cluster becomes cell statistics by one segment sum over pairs, so resampled
fits keep the static shapes that ``vmap`` needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..io.families import family_function
from ..runtime.lazy_jax import jax, jnp
from .cells import (GROUP_MIN_CELLS, adoptable, aligned_empty, code_cells, record_stats, sorted_codes, sums_by,
                    unique_inverse, with_groups)
from .params import Layout
from .record_checks import check_live, connected_or_raise, warn_dominant_length
from .spec import ModelSpec
from ..runtime.validate import OscarInputError, resolve_name

if TYPE_CHECKING:
    import pandas as pd

    from ..io.columns import LoadReport

__all__ = ["GROUP_MIN_CELLS", "Design", "DesignArrays", "build_design", "build_design_owning", "cell_stats_from_cluster_weights",
           "with_groups"]


# The canonical frame's columns of names and ids, which the design reads as integer codes.
NAME_COLUMNS = ("prompt", "candidate_a", "candidate_b", "judge")


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


# The data's note when lengths are present but never differ within a record; the model's
# note that drops L then gives this reason, not "no lengths" (issue 35: the two contradicted).
_ZERO_LENGTHS = "lengths given, but every record has len_a = len_b (all lengths 0, or equal): s_L = 0"


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
            reason = ("every record has len_a = len_b, so every length contrast is zero"
                      if _ZERO_LENGTHS in self.notes else "the data carry no response lengths or texts")
            notes.append(f"length term dropped: {reason} (L not estimable)")
        if "fam" in spec.terms and not self.family_nonzero:
            spec = spec.without("fam")
            notes.append("family term dropped: no judge shares a family with any candidate (F ≡ 0)")
        if "cov" in spec.terms and not self.covariates:
            spec = spec.without("cov")
            notes.append("covariate term dropped: no user covariates were given to build_design")
        elif self.covariates and "cov" not in spec.terms:
            notes.append(f"covariate(s) {', '.join(self.covariates)} not used: model {spec.name} has no 'c' term "
                         f"(add it, e.g. --model {spec.name.lower()}+c)")
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


def build_design(frame: pd.DataFrame, *, reference_judge: str | None = None, family_map=None,
                 covariates=(), length_scale: float | None = None,
                 report: LoadReport | None = None, require_connected: bool = True, device: bool = True) -> Design:
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
    device
        Put the arrays in JAX's device memory (default); False keeps them in host numpy
        for a plain-BT fit, which compiles nothing (:func:`~oscar_jax.model.problem.prepare`
        chooses), so JAX is never loaded. Compiled programs accept either, copying host
        arrays in at each call.
    """
    return build_design_owning([frame], reference_judge=reference_judge, family_map=family_map,
                               covariates=covariates, length_scale=length_scale, report=report,
                               require_connected=require_connected, device=device)


def build_design_owning(holder: list, *, reference_judge: str | None = None, family_map=None,
                        covariates=(), length_scale: float | None = None,
                        report: LoadReport | None = None, require_connected: bool = True,
                        device: bool = True) -> Design:
    """:func:`build_design` of the one frame in ``holder``, which it takes out of the list.

    A caller that passes the only reference to a frame (``as_design``: the frame it read)
    lets its name columns be freed once they are coded, before the cells are (at 10⁷ records
    0.6 GB), and the rest once the exact-repeat screen has read it; through
    :func:`build_design` the caller keeps its frame.
    """
    import pandas as pd  # the frame's own library; the compiled paths that take DesignArrays load neither

    from ..io.columns import check_canonical, name_codes, warn_case_variants
    from ..io.names import id_text, numbers

    frame = holder.pop()
    missing = [c for c in (*NAME_COLUMNS, "outcome") if c not in frame.columns]
    if missing:
        raise OscarInputError(f"frame lacks canonical column(s) {missing}; read data with load_judgments()")
    n = len(frame)
    if n == 0:
        raise OscarInputError("no records (empty data)")
    check_canonical(frame)
    notes: list[str] = []
    frame = frame.reset_index(drop=True)
    # The readers' names are normalised already; a frame built by hand gets the same rules here.
    (a, b), candidates = sorted_codes(*name_codes(frame, ("candidate_a", "candidate_b"), "candidate"))
    same = a == b
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise OscarInputError(f"row {row + 1}: candidate {candidates[a[row]]!r} is compared with itself; remove such "
                              "records")
    if len(candidates) < 2:
        raise OscarInputError(f"only one candidate ({candidates[0]!r}) in the data; a ranking needs at least two")
    (k,), judges = sorted_codes(*name_codes(frame, ("judge",), "judge"))
    warn_case_variants("candidate", candidates)
    warn_case_variants("judge", judges)
    j_index = {j: i for i, j in enumerate(judges)}

    if reference_judge is None:
        counts = np.bincount(k, minlength=len(judges))
        ref = int(np.argmax(counts))  # first maximum = alphabetical tie-break
    else:
        ref = j_index[resolve_name("reference judge", str(reference_judge), list(judges))]

    y = numbers(frame["outcome"])
    bad = ~np.isfinite(y) | (y < 0) | (y > 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(f"column 'outcome' row {row + 1}: {frame['outcome'].iloc[row]!r} is not a score in "
                              "[0, 1]; write 1 (A preferred), 0 (B preferred) or 0.5 (tie)")
    w = numbers(frame["weight"]) if "weight" in frame.columns else np.ones(n)
    is_tie = y == 0.5
    if "tie_kind" in frame.columns:
        is_tie |= frame["tie_kind"].isin(["tie", "bothbad"]).to_numpy(dtype=bool)

    prompt_codes, prompts = pd.factorize(id_text(frame["prompt"]), sort=False)
    g = prompt_codes.astype(np.int32)
    # Per-record temporaries are dropped once used (del below): at 10⁶ records each is 8 MB,
    # and together they set the design's peak.
    del prompt_codes
    # The exact-repeat screen below reads the names as their codes (equal codes ⇔ equal names), so
    # the name columns, most of the frame (0.6 GB at 10⁷ records), go once coded.
    frame = frame.drop(columns=[c for c in NAME_COLUMNS if c not in (covariates or ())])

    # Length contrast L = log((ℓ_A+1)/(ℓ_B+1)) / s_L (Section 3.2), s_L with divisor N.
    has_length = "len_a" in frame.columns and "len_b" in frame.columns
    L = np.zeros(n)
    if has_length:
        la, lb = numbers(frame["len_a"]), numbers(frame["len_b"])
        for name, col in (("len_a", la), ("len_b", lb)):
            badl = ~np.isfinite(col) | (col < 0)
            if badl.any():
                row = int(np.flatnonzero(badl)[0])
                raise OscarInputError(f"column {name!r} row {row + 1}: invalid length {col[row]!r}; lengths must be "
                                      "finite and ≥ 0")
        log_ratio = np.log1p(la)
        log_ratio -= np.log1p(lb)  # in place: at 10⁷ records each temporary is 80 MB
        scale = float(np.std(log_ratio)) if length_scale is None else float(length_scale)
        if length_scale is None:
            warn_dominant_length(log_ratio, la, lb)
        if not np.isfinite(scale) or scale <= 0:
            notes.append(_ZERO_LENGTHS)
            has_length = False
            scale = None
        else:
            L = log_ratio / scale
            del la, lb, log_ratio, col  # col: the loop's last column, a view that holds len_b's 80 MB at 10⁷
            if report is not None and getattr(report, "lengths", ""):
                notes.append(report.lengths)
    else:
        scale = None

    fam = family_function(family_map)
    cand_family = tuple(str(fam(c)) for c in candidates)
    judge_family = tuple(str(fam(j)) for j in judges)
    # Families as integer codes: comparing names record by record was a Python-object pass.
    fam_code = {f: i for i, f in enumerate(sorted(set(cand_family) | set(judge_family)))}
    cf = np.asarray([fam_code[f] for f in cand_family], dtype=np.int32)
    jf = np.asarray([fam_code[f] for f in judge_family], dtype=np.int32)

    covariates = tuple(covariates or ())
    X = np.zeros((n, len(covariates)))
    for j, col in enumerate(covariates):
        if col not in frame.columns:
            raise OscarInputError(f"covariate column {col!r} is not in the frame; pass keep_columns=[{col!r}] to load_judgments")
        vals = numbers(frame[col])
        badc = ~np.isfinite(vals)
        if badc.any():
            row = int(np.flatnonzero(badc)[0])
            raise OscarInputError(f"covariate column {col!r} row {row + 1}: {frame[col].iloc[row]!r} is not a finite "
                                  "number; give every record a number (e.g. 0 where the contrast is absent)")
        X[:, j] = vals

    rest = frame.drop(columns=[c for c in NAME_COLUMNS if c in frame.columns])
    del frame

    # Cells: unique (a, b, k, L, F, X); F is a function of (a, b, k), so only L and X enter the key.
    cell_codes, record_group, triples = code_cells(a, b, k, [L, *X.T], len(candidates), len(judges))
    check_live(w, a, b, k, candidates, judges)
    if require_connected:
        connected_or_raise(w, a, b, triples, candidates, len(judges))
    del triples
    judge_counts = np.bincount(k, minlength=len(judges))
    candidate_votes = np.bincount(a, minlength=len(candidates)) + np.bincount(b, minlength=len(candidates))

    # Every per-record array is dropped as soon as it is read for the last time, and the cells'
    # arrays are made after the statistics: at 10⁷ records each array is 40–80 MB, and together
    # they set the process's peak (docs/scaling.md).
    record_group = record_group.astype(np.int32)
    n_cells = int(cell_codes.max()) + 1
    # (prompt, cell) pairs, sorted by cluster, then cell; the key is handed over, freed once sorted.
    pair_uniques, pair_codes = unique_inverse(g.astype(np.int64) * n_cells + cell_codes)

    # Numeric codes first (cheap); only where they repeat, the names' codes and every other column
    # of the frame, as text, decide. A repeat shares its (prompt, cell) pair, so only records of
    # shared pairs are hashed (with one cell per record, as with continuous lengths, that is
    # almost none: at 10⁷ records the frame of all records cost 0.7 GB and seconds).
    shared = np.flatnonzero(np.bincount(pair_codes, minlength=len(pair_uniques))[pair_codes] > 1)
    maybe = shared[pd.DataFrame({"pair": pair_codes[shared], "y": y[shared], "w": w[shared], "t": is_tie[shared]})
                   .duplicated(keep=False).to_numpy()]
    dup = np.zeros(n, bool)
    if maybe.size:
        names = pd.DataFrame({"prompt": g[maybe], "candidate_a": a[maybe], "candidate_b": b[maybe], "judge": k[maybe]})
        rows = pd.concat([names, rest.iloc[maybe].reset_index(drop=True)], axis=1)
        dup[maybe] = rows.astype(str).duplicated().to_numpy()
    del shared, maybe, rest  # the frame is read no further (freed here if the caller handed it over)
    cell_stats, pair_stats = sums_by([(cell_codes, n_cells), (pair_codes, len(pair_uniques))], record_stats(w, y, is_tie))
    del pair_codes, y, w, is_tie

    first = np.full(n_cells, -1, dtype=np.int64)
    first[cell_codes[::-1]] = np.arange(n)[::-1]
    record_cell = cell_codes.astype(np.int32)
    del cell_codes
    a_c, b_c, k_c = (np.take(c, first, out=aligned_empty(n_cells, np.int32)) for c in (a, b, k))
    del a, b, k
    z = aligned_empty((n_cells, 2 + X.shape[1]), np.float64)
    z[:, 0] = L[first]
    # F = [family(A) = family(judge)] − [family(B) = family(judge)], one comparison at a time.
    F = z[:, 1]
    F[...] = cf[a_c] == jf[k_c]
    F -= cf[b_c] == jf[k_c]
    z[:, 2:] = X[first]
    family_nonzero = bool(np.any(F != 0))
    cell_group = adoptable(record_group[first], np.int32)
    del L, X, F, first, record_group
    if dup.any():
        notes.append(f"{int(dup.sum())} record(s) repeat an earlier record exactly (same prompt, candidates, order, "
                     f"judge and outcome; first: row {int(np.flatnonzero(dup)[0]) + 1}); each counts as a separate "
                     "judgment — if they are copies, drop them (pandas: frame.drop_duplicates())")

    host = {"a": a_c, "b": b_c, "k": k_c, "z": z, "stats": cell_stats,
            "pair_cell": adoptable(pair_uniques % n_cells, np.int32),
            "pair_g": adoptable(pair_uniques // n_cells, np.int32),
            "pair_stats": pair_stats}
    del a_c, b_c, k_c, z, cell_stats, pair_uniques, pair_stats
    # The host arrays are 64-byte aligned (cells.aligned_empty), which JAX's CPU client adopts
    # without a copy; elsewhere device_put copies (jnp.asarray would compile a copy program per
    # shape) and each host array is dropped once copied, so at most one is held twice.
    put = jax.device_put if device else np.asarray
    arrays = DesignArrays(**{name: put(host.pop(name)) for name in list(host)})
    # Cells are numbered by first appearance, so their groups keep the records' numbering.
    arrays = with_groups(arrays, len(candidates), len(judges), codes=cell_group)
    return Design(
        arrays=arrays,
        candidates=candidates,
        judges=judges,
        prompts=tuple(prompts.tolist()),
        reference=ref,
        covariates=covariates,
        has_length=has_length,
        length_scale=scale,
        candidate_family=cand_family,
        judge_family=judge_family,
        n_records=n,
        record_cell=record_cell,
        record_cluster=g,
        notes=tuple(notes),
        report=report,
        family_nonzero=family_nonzero,
        counts={
            "judge_records": {judges[i]: int(c) for i, c in enumerate(judge_counts)},
            "candidate_votes": {candidates[i]: int(c) for i, c in enumerate(candidate_votes)},
        },
    )
