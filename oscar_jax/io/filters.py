"""Record selection before fitting: FastChat's ``--exclude-tie`` and ``--category``-style filters.

Both act on the canonical frame of :func:`oscar_jax.load_judgments` and record what they
removed in its :class:`~oscar_jax.io.data.LoadReport`, so every output says how many records
were left out and why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import LoadReport
from ..runtime.validate import OscarInputError

__all__ = ["parse_filter", "select_records"]


def parse_filter(text: str) -> tuple[str, str]:
    """``COLUMN=VALUE`` → (column, value); the value may itself contain '='."""
    column, sep, value = str(text).partition("=")
    column, value = column.strip(), value.strip()
    if not sep or not column:
        raise OscarInputError(f"--filter {text!r}: expected COLUMN=VALUE, e.g. category=coding or language=English")
    return column, value


def select_records(frame: pd.DataFrame, report: LoadReport | None = None, *, exclude_tie: bool = False,
                   filters=()) -> pd.DataFrame:
    """Keep the records that pass every filter and, with ``exclude_tie``, are not ties.

    Parameters
    ----------
    frame
        Canonical frame from :func:`~oscar_jax.load_judgments`, loaded with
        ``keep_columns`` holding every filtered column.
    report
        Its load report; updated in place (drop counts, ties, records kept).
    exclude_tie
        Drop ties of both kinds ("tie" and Arena's "tie (bothbad)"), as FastChat's
        ``--exclude-tie`` does; by default a tie scores ½.
    filters
        ``(column, value)`` pairs or ``"COLUMN=VALUE"`` strings; a record is kept when its
        value, as text, equals ``value`` (e.g. ``category=coding``, FastChat's ``--category``).
    """
    keep = np.ones(len(frame), dtype=bool)
    for item in filters:
        column, value = parse_filter(item) if isinstance(item, str) else item
        if column not in frame.columns:
            raise OscarInputError(f"--filter {column}={value}: the data have no column {column!r}")
        values = frame[column].astype(str).str.strip().to_numpy()
        match = values == value
        if not match.any():
            seen = sorted(set(values.tolist()))
            shown = ", ".join(repr(v) for v in seen[:12]) + (" …" if len(seen) > 12 else "")
            raise OscarInputError(f"--filter {column}={value}: no record has {column} = {value!r}; values: {shown}")
        if report is not None:
            report.dropped[f"not {column} = {value}"] = int((keep & ~match).sum())
        keep &= match
    if exclude_tie:
        tie = np.isin(frame["tie_kind"].to_numpy(), ["tie", "bothbad"]) | (frame["outcome"].to_numpy() == 0.5)
        if report is not None:
            report.dropped["ties (--exclude-tie)"] = int((keep & tie).sum())
        keep &= ~tie
    if not keep.any():
        raise OscarInputError("no records left after --filter/--exclude-tie; loosen the selection")
    out = frame.loc[keep].reset_index(drop=True)
    if report is not None:
        kinds = out["tie_kind"].to_numpy()
        report.ties = {"ties": int(np.sum(kinds == "tie")), "'tie (bothbad)' ties": int(np.sum(kinds == "bothbad"))}
        report.n_kept = len(out)
    return out
