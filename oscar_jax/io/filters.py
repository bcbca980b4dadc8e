"""Record selection before fitting: FastChat's ``--exclude-tie`` and ``--category``-style filters.

Both act on the canonical frame (``load_judgments(..., filters=, exclude_ties=)`` applies
them while reading) and record what they removed in its
:class:`~oscar_jax.io.columns.LoadReport`, so every output says how many records were left
out and why.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .columns import LoadReport
from ..runtime.validate import OscarInputError

__all__ = ["filter_pairs", "parse_filter", "select_records", "selection_mask"]


def parse_filter(text: str) -> tuple[str, str]:
    """``COLUMN=VALUE`` → (column, value); the value may itself contain '='."""
    column, sep, value = str(text).partition("=")
    column, value = column.strip(), value.strip()
    if not sep or not column:
        raise OscarInputError(f"--filter {text!r}: expected COLUMN=VALUE, e.g. category=coding or language=English")
    return column, value


def filter_pairs(filters) -> list[tuple[str, str]]:
    """``(column, value)`` text pairs from a dict, pairs or ``"COLUMN=VALUE"`` strings."""
    items = filters.items() if isinstance(filters, Mapping) else [filters] if isinstance(filters, str) else filters
    pairs = []
    for item in items or ():
        if isinstance(item, str):
            pairs.append(parse_filter(item))
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            pairs.append((str(item[0]).strip(), str(item[1]).strip()))
        else:
            raise OscarInputError(f"filter {item!r}: expected 'COLUMN=VALUE', a (column, value) pair or a dict "
                                  "{column: value}, e.g. filters={'category': 'coding'}")
    return pairs


def selection_mask(frame: pd.DataFrame, report: LoadReport | None, pairs, exclude_ties: bool) -> np.ndarray:
    """Records that pass every ``(column, value)`` filter and, with ``exclude_ties``, are not
    ties; the drops are counted in ``report``."""
    keep = np.ones(len(frame), dtype=bool)
    for column, value in pairs:
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
    if exclude_ties:
        tie = np.isin(frame["tie_kind"].to_numpy(), ["tie", "bothbad"]) | (frame["outcome"].to_numpy() == 0.5)
        if report is not None:
            report.dropped["ties (--exclude-tie)"] = int((keep & tie).sum())
        keep &= ~tie
    if not keep.any():
        raise OscarInputError("no records left after the filters and exclude_ties (--filter/--exclude-tie); "
                              "loosen the selection")
    return keep


def select_records(frame: pd.DataFrame, report: LoadReport | None = None, *, exclude_ties: bool = False,
                   filters=()) -> pd.DataFrame:
    """Keep the records that pass every filter and, with ``exclude_ties``, are not ties.

    Parameters
    ----------
    frame
        Canonical frame from :func:`~oscar_jax.load_judgments`, loaded with
        ``keep_columns`` holding every filtered column that is not canonical.
    report
        Its load report; updated in place (drop counts, ties, records kept).
    exclude_ties
        Drop ties of both kinds ("tie" and Arena's "tie (bothbad)"), as FastChat's
        ``--exclude-tie`` does; by default a tie scores ½.
    filters
        A dict ``{column: value}``, ``(column, value)`` pairs or ``"COLUMN=VALUE"``
        strings; a record is kept when its value, as text, equals ``value``.
    """
    out = frame.loc[selection_mask(frame, report, filter_pairs(filters), exclude_ties)].reset_index(drop=True)
    if report is not None:
        kinds = out["tie_kind"].to_numpy()
        report.ties = {"ties": int(np.sum(kinds == "tie")), "'tie (bothbad)' ties": int(np.sum(kinds == "bothbad"))}
        report.n_kept = len(out)
    return out
