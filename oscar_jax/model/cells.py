"""Records into cells and (a, b, judge) groups: integer codes, hash keys and sums, in host numpy.

One hash pass per column, no per-record Python: at 10⁷ records these are the design's cost
(docs/scaling.md). :func:`~oscar_jax.model.design.build_design` is their user.
"""

from __future__ import annotations

import numpy as np

from ..runtime.lazy_jax import is_jax_array, jax

__all__ = ["GROUP_MIN_CELLS", "adoptable", "aligned_empty", "code_cells", "record_stats", "refine_codes", "sorted_codes",
           "sums_by", "unique_inverse", "with_groups"]


def _factorize(values, sort: bool = False):
    """pandas' one-pass hash factorisation: (codes, uniques in order of first appearance).
    Imported at first use: the sweep's compiled path never codes names and loads no pandas."""
    import pandas as pd

    return pd.factorize(values, sort=sort)


def sorted_codes(codes, names) -> tuple[tuple[np.ndarray, ...], tuple[str, ...]]:
    """Integer codes (int32) into the sorted common names of several coded columns.

    ``codes``/``names`` as :func:`~oscar_jax.io.columns.name_codes` returns them (one hash
    pass per column); only the few distinct names are sorted and each column's codes
    remapped. A Python dictionary lookup per record cost ~0.3 s per million records.
    """
    common = sorted({n for column in names for n in column})
    index = {name: i for i, name in enumerate(common)}
    coded = tuple(np.asarray([index[n] for n in column], dtype=np.int32)[c] for c, column in zip(codes, names))
    return coded, tuple(common)


def code_cells(a, b, k, z, n_cand: int, n_judge: int, *, parts: int | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cell, (a, b, k) group) of each record: codes of the unique (a, b, k, z) and of the
    unique (a, b, k), in order of first appearance; and the distinct (a, b, k) keys
    ``(a·C + b)·K + k``.

    ``z`` lists the covariate columns that are not functions of (a, b, k) (the family
    contrast F is one, so it never enters the key). Each column refines the codes so far
    (:func:`refine_codes`); a pandas MultiIndex over float columns cost ~1 s per million
    records. ``parts`` as in :func:`refine_codes`.
    """
    group, keys = _factorize((a.astype(np.int64) * n_cand + b) * n_judge + k, sort=False)
    code = group
    for col in z:
        col = np.asarray(col, dtype=np.float64)
        if col.size and np.all(col == col[0]):
            continue  # a constant column splits no cell
        code = refine_codes(code, col, parts=parts)
    return np.asarray(code, dtype=np.int64), np.asarray(group, dtype=np.int64), np.asarray(keys, dtype=np.int64)


# Records per hash table: one table over 10⁷ distinct keys held ~1.2 GB (the process's peak at
# Arena scale); tables of ~2²¹ keys hold ~50 MB each and stay in cache longer.
PART_RECORDS = 1 << 21


def key_parts(code: np.ndarray, col: np.ndarray, parts: int) -> np.ndarray:
    """Each record's part (int32 in [0, parts)): equal (code, col) have equal bits, so equal
    parts; a multiplicative hash of the bits spreads distinct keys evenly."""
    mix = code.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) ^ col.view(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    return ((mix >> np.uint64(32)) % np.uint64(parts)).astype(np.int32)


def refine_codes(code: np.ndarray, col: np.ndarray, *, parts: int | None = None) -> np.ndarray:
    """Codes of the unique (code, col) pairs, in order of first appearance.

    One hash pass over a complex128 key (code + i·col, −0.0 made 0.0; codes below 2^53 are
    exact). Above :data:`PART_RECORDS` records (or with ``parts`` > 1) the records are split
    by a hash of the key's bits, so that equal keys share a part, and each part is
    factorised by itself; the parts' codes are then renumbered by each key's first record,
    which is the numbering of one pass over all records (the same codes, bit for bit).
    """
    n = len(code)
    parts = max(1, -(-n // PART_RECORDS)) if parts is None else int(parts)
    col = col + 0.0
    if parts == 1:
        key = np.empty(n, dtype=np.complex128)
        key.real = code
        key.imag = col
        return _factorize(key, sort=False)[0]
    part = key_parts(code, col, parts)
    out = np.empty(n, dtype=np.int64)
    firsts = []
    for j in range(parts):
        rows = np.flatnonzero(part == j)
        key = np.empty(len(rows), dtype=np.complex128)
        key.real = code[rows]
        key.imag = col[rows]
        local = _factorize(key, sort=False)[0]
        del key
        at = np.empty(int(local.max()) + 1 if len(local) else 0, dtype=np.int64)
        at[local[::-1]] = rows[::-1]  # the last write wins: each key's first record
        out[rows] = local
        firsts.append(at)
    # A key's code is the rank of its first record among all keys' first records.
    starts = np.zeros(n, dtype=bool)
    for at in firsts:
        starts[at] = True
    ordered = np.flatnonzero(starts)
    del starts
    for j, at in enumerate(firsts):
        rows = np.flatnonzero(part == j)  # found again, not kept: every part's rows are 80 MB at 10⁷
        out[rows] = np.searchsorted(ordered, at)[out[rows]]
    return out


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` (sorted distinct keys, each key's index among
    them), holding fewer per-record arrays at once: at 10⁷ keys numpy's held ~400 MB besides
    the keys, which are freed once sorted when the caller hands over its only reference."""
    n = len(keys)
    order = np.argsort(keys)
    ordered = keys[order]
    del keys
    new = np.empty(len(ordered), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    uniques = ordered[new]
    del ordered
    rank = np.cumsum(new, dtype=np.int64)
    rank -= 1
    del new
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = rank
    return uniques, inverse


# JAX's CPU client adopts a host array whose data start on this boundary instead of copying it
# (device_put), so a design's arrays are not held twice while they move (at 10⁷ records the
# statistics alone are 240 MB).
ALIGN = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start on an :data:`ALIGN`-byte boundary."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(size + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def adoptable(values, dtype) -> np.ndarray:
    """``values`` as a C-ordered ``dtype`` array on an :data:`ALIGN`-byte boundary: itself
    when it is one already, else an aligned copy."""
    values = np.asarray(values)
    if values.dtype == dtype and values.flags.c_contiguous and values.ctypes.data % ALIGN == 0:
        return values
    out = aligned_empty(values.shape, dtype)
    out[...] = values
    return out


RECORD_STATS = 3  # w, w·y, w·[tie]


def record_stats(w, y, is_tie):
    """The records' :data:`RECORD_STATS` statistic columns w, w·y and w·[tie], one at a time
    as ``(values, rows)`` (rows None: all records), for :func:`sums_by`, which adds each up
    before the next is made: at 10⁷ records each is 80 MB.

    The sums are those of the columns as written, bit for bit: with unit weights w·y is y;
    the tie column is summed over the ties only, since every other record adds an exact
    +0.0 (w ≥ 0, so no partial sum is −0.0)."""
    yield w, None
    yield (y if np.all(w == 1.0) else w * y), None
    ties = np.flatnonzero(is_tie)
    yield w[ties], ties


def sums_by(groupings, values, m: int = RECORD_STATS) -> list[np.ndarray]:
    """For each ``(codes, n)`` of ``groupings``, the (n, m) sums by code of the m record
    columns ``values``: ``(values, rows)`` pairs (a sequence or an iterator), the values of
    the records ``rows`` (None: all), added in record order."""
    out = [aligned_empty((n, m), np.float64) for _, n in groupings]
    for j, (v, rows) in enumerate(values):  # column by column: a stack of all the columns was a second copy
        if not v.flags.writeable:
            # np.bincount copies read-only weights (pandas hands its columns out read-only): 80 MB
            # at 10⁷ records. A view it may write to, which it never does, is not copied.
            try:
                v = v.view()
                v.flags.writeable = True
            except ValueError:  # its memory is read-only itself: bincount copies it
                pass
        for o, (codes, n) in zip(out, groupings):
            o[:, j] = np.bincount(codes if rows is None else codes[rows], weights=v, minlength=n)
    return out


# Below this many cells a derivative pass costs microseconds either way; above it, grouping
# pays when the groups are at most half as many as the cells.
GROUP_MIN_CELLS = 1 << 15


def with_groups(arrays, n_cand: int, n_judge: int, *, force: bool = False,
                codes: np.ndarray | None = None):
    """``arrays`` (:class:`~oscar_jax.model.design.DesignArrays`) with their (a, b, k) groups
    attached, when grouping pays (or ``force``).

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
        codes = _factorize((a * n_cand + b) * n_judge + k, sort=False)[0]
    n_g = int(codes.max()) + 1
    if not force and 2 * n_g > n:
        return none
    first = np.empty(n_g, np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    put = jax.device_put if is_jax_array(arrays.a) else np.asarray  # where the design's arrays are
    return arrays._replace(cell_group=put(adoptable(codes, np.int32)), group_cell=put(first.astype(np.int32)))
