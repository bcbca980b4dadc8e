"""Records into cells and (a, b, judge) groups: integer codes, hash keys and sums, in host numpy.

One hash pass per column, no per-record Python: at 10⁷ records these are the design's cost
(docs/scaling.md). :func:`~oscar_jax.model.design.build_design` is their user.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..runtime.lazy_jax import is_jax_array, jax

__all__ = ["GROUP_MIN_CELLS", "code_cells", "sorted_codes", "sum_by", "with_groups"]


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


def code_cells(a, b, k, z, n_cand: int, n_judge: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cell, (a, b, k) group) of each record: codes of the unique (a, b, k, z) and of the
    unique (a, b, k), in order of first appearance; and the distinct (a, b, k) keys
    ``(a·C + b)·K + k``.

    ``z`` lists the covariate columns that are not functions of (a, b, k) (the family
    contrast F is one, so it never enters the key). The (a, b, k) code and each column are
    folded in one hash pass per column over a complex128 key (code + i·z, −0.0 made 0.0;
    codes below 2^53 are exact): at 10^7 records with a continuous length that is 2 CPU-s
    against 2.9 for factorizing z and the combined int64 key apart, and a pandas
    MultiIndex over float columns cost ~1 s per million records.
    """
    group, keys = pd.factorize((a.astype(np.int64) * n_cand + b) * n_judge + k, sort=False)
    code = group
    for col in z:
        col = np.asarray(col, dtype=np.float64)
        if col.size and np.all(col == col[0]):
            continue  # a constant column splits no cell
        key = np.empty(len(code), dtype=np.complex128)
        key.real = code
        key.imag = col + 0.0
        code, _ = pd.factorize(key, sort=False)
    return np.asarray(code, dtype=np.int64), np.asarray(group, dtype=np.int64), np.asarray(keys, dtype=np.int64)


def sum_by(codes: np.ndarray, values, n: int) -> np.ndarray:
    """(n, m) sums of the m record columns ``values`` by code, in record order."""
    out = np.empty((n, len(values)))
    for j, v in enumerate(values):  # column by column: a stack of all the columns was a second copy
        out[:, j] = np.bincount(codes, weights=v, minlength=n)
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
        codes = pd.factorize((a * n_cand + b) * n_judge + k, sort=False)[0]
    n_g = int(codes.max()) + 1
    if not force and 2 * n_g > n:
        return none
    first = np.empty(n_g, np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    put = jax.device_put if is_jax_array(arrays.a) else np.asarray  # where the design's arrays are
    return arrays._replace(cell_group=put(codes.astype(np.int32)), group_cell=put(first.astype(np.int32)))
