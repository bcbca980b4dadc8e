"""What the design refuses or warns about in the records: a disconnected comparison graph,
a candidate or judge with no weight, one length that sets the length scale alone."""

from __future__ import annotations

import warnings

import numpy as np

from ..runtime.validate import OscarDataWarning, OscarInputError

__all__ = ["check_live", "components", "connected_or_raise", "warn_dominant_length"]


def components(a: np.ndarray, b: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    """(number, labels) of the connected components of the comparison graph, labels in order
    of each component's smallest candidate (as scipy's ``connected_components`` numbers them).

    Host numpy: the distinct edges by one hash pass, then roots hooked to the smaller root and
    pointer jumping until every edge joins one root. Importing ``scipy.sparse.csgraph`` for
    this cost every fit 0.13 CPU-s; this takes 1 ms at 10⁴ records and 0.05 s at 10⁷ (scipy
    0.77 s there).
    """
    import pandas as pd  # (at first use: see cells._factorize)

    edges = pd.unique(np.asarray(a, np.int64) * n + np.asarray(b, np.int64))
    ea, eb = edges // n, edges % n
    root = np.arange(n)
    while True:
        ra, rb = root[ea], root[eb]
        split = ra != rb
        if not split.any():
            break
        np.minimum.at(root, np.maximum(ra, rb)[split], np.minimum(ra, rb)[split])
        while not np.array_equal(up := root[root], root):
            root = up
    roots, labels = np.unique(root, return_inverse=True)
    return len(roots), labels


def connected_or_raise(w, a, b, triples, candidates, n_judge: int) -> None:
    """Refuse a disconnected comparison graph: scores of different components are not comparable.

    ``triples`` are the distinct (a, b, judge) keys ``(a·C + b)·K + k`` of the records
    (:func:`~oscar_jax.model.cells.code_cells`): with every weight positive they give the
    edges without another pass over the records."""
    n_cand = len(candidates)
    if np.all(w > 0):  # one edge per distinct (a, b) judged
        ab = triples // n_judge
        n_comp, labels = components(ab // n_cand, ab % n_cand, n_cand)
    else:  # a weight-0 record carries no comparison, so it links nothing
        live = w > 0
        n_comp, labels = components(a[live], b[live], n_cand)
    if n_comp > 1:
        groups = [sorted(candidates[i] for i in np.flatnonzero(labels == c)) for c in range(n_comp)]
        shown = "; ".join("{" + ", ".join(gr[:8]) + (", …" if len(gr) > 8 else "") + "}" for gr in groups)
        raise OscarInputError(
            f"the comparison graph is disconnected ({n_comp} components: {shown}); scores in different "
            "components are not comparable — add comparisons that link them or fit each component separately"
        )


def check_live(w, a, b, k, candidates, judges) -> None:
    """Refuse a candidate or judge whose every record has weight 0: the data say nothing about
    it, yet it would be ranked (at the ridge's 0) with its records counted as votes."""
    live = w > 0
    for kind, names, codes in (("candidate", candidates, (a, b)), ("judge", judges, (k,))):
        seen = np.zeros(len(names), bool)
        alive = np.zeros(len(names), bool)
        for c in codes:
            seen[c] = True
            alive[c[live]] = True
        dead = np.flatnonzero(seen & ~alive)
        if dead.size:
            i = dead[0]
            row = int(np.flatnonzero(np.any([c == i for c in codes], axis=0))[0]) + 1
            raise OscarInputError(f"{kind} {names[i]!r}: every one of its records has weight 0 (first: row {row}, "
                                  "column 'weight'), so the data say nothing about it; give its records a positive "
                                  "weight or remove them")


def warn_dominant_length(log_ratio: np.ndarray, la: np.ndarray, lb: np.ndarray) -> None:
    """Warn when one outlying record carries most of Σ(ℓ − ℓ̄)², and so sets s_L for everyone.

    s_L is the standard deviation of the log length ratios (method §3.2, divisor N), which
    a single absurd length (a unit or parsing error) can inflate without bound, shrinking
    every other record's L towards 0 and inflating β_len. A large share alone is common in
    small data with honest lengths, so the record must also lie more than 10 standard
    deviations of the other records from their mean.
    """
    n = len(log_ratio)
    if n < 10:
        return
    mean = log_ratio.mean()
    # Σ(x − x̄)² a block at a time, and the record farthest from the mean (an extreme): no
    # per-record temporary (80 MB at 10⁷ records, the design's peak).
    block = 1 << 20
    total = float(sum(np.sum((log_ratio[s:s + block] - mean) ** 2) for s in range(0, n, block)))
    if total <= 0:
        return
    hi, lo = int(np.argmax(log_ratio)), int(np.argmin(log_ratio))
    i = hi if log_ratio[hi] - mean >= mean - log_ratio[lo] else lo
    share = (log_ratio[i] - mean) ** 2 / total
    # The mean and standard deviation of the other records, without copying them:
    # Σ_all (x − m')² = Σ_all (x − m)² + N (m − m')², less the record's own term.
    rest_mean = (log_ratio.sum() - log_ratio[i]) / (n - 1)
    rest_var = max(total + n * (mean - rest_mean) ** 2 - (log_ratio[i] - rest_mean) ** 2, 0.0) / (n - 1)
    outlying = abs(log_ratio[i] - rest_mean) > 10 * np.sqrt(rest_var)
    if share > 0.25 and outlying:
        side, value = ("len_a", la[i]) if abs(np.log1p(la[i]) - np.median(np.log1p(la))) >= \
            abs(np.log1p(lb[i]) - np.median(np.log1p(lb))) else ("len_b", lb[i])
        warnings.warn(
            f"column {side!r} row {i + 1}: length {value:g} carries {100 * share:.0f}% of the variance of "
            "the log length ratios, so it alone sets the length scale s_L (and so β_len); check that value "
            "(lengths are character counts) and fix or drop it", OscarDataWarning, stacklevel=3)
