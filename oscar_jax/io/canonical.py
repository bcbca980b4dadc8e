"""Checks of a canonical frame at the public edge of :func:`~oscar_jax.model.design.build_design`.

The readers of :mod:`oscar_jax.io.data` validate what they read, but ``build_design`` is
public and is also called on frames users build themselves; the same rules apply there,
so no path into a fit accepts what a reader rejects (a negative or NaN weight, a missing
name, a missing prompt id). Rows are counted from 1, as the user counts them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .columns import blank, shown
from ..runtime.validate import OscarDataWarning, OscarInputError

__all__ = ["check_canonical", "warn_case_variants"]


def check_canonical(frame: pd.DataFrame) -> None:
    """Raise :class:`OscarInputError` naming the column, row, value and fix of the first bad entry."""
    for column in ("candidate_a", "candidate_b", "judge"):
        bad = blank(pd.Series(frame[column].to_numpy(), dtype=object))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise OscarInputError(f"column {column!r} row {row + 1}: missing name "
                                  f"{shown(frame[column].iloc[row])!r}; every record needs a {column}")
    prompts = frame["prompt"]
    if prompts.isna().any():
        row = int(np.flatnonzero(prompts.isna().to_numpy())[0])
        raise OscarInputError(f"column 'prompt' row {row + 1}: missing prompt id; give every record its "
                              "prompt's id (records of one prompt form one cluster)")
    if "weight" in frame.columns:
        raw = frame["weight"]
        w = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(w) | (w < 0) | raw.isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise OscarInputError(f"column 'weight' row {row + 1}: invalid weight {shown(raw.iloc[row])!r}; "
                                  "weights must be finite and ≥ 0 (use 0 to leave a record out)")
        if not np.any(w > 0):
            raise OscarInputError("column 'weight': every weight is 0, so no record counts; give the records "
                                  "positive weights")


def warn_case_variants(kind: str, names) -> None:
    """Warn when names differ only in case or surrounding space: they are fitted as different."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(str(name).strip().casefold(), []).append(str(name))
    clashes = [sorted(g) for g in groups.values() if len(g) > 1]
    if clashes:
        listed = "; ".join(" / ".join(repr(n) for n in g) for g in clashes[:5])
        more = "" if len(clashes) <= 5 else f" (and {len(clashes) - 5} more)"
        warnings.warn(f"{kind} names differ only in case: {listed}{more}; they are fitted as different "
                      f"{kind}s — if they are the same, spell them alike in the data", OscarDataWarning, stacklevel=3)
