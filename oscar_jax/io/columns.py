"""The canonical columns, built from raw input columns with every value checked.

Each input convention (:mod:`oscar_jax.io.data`, :mod:`oscar_jax.io.schemas`) maps its own
columns onto the canonical frame with these helpers, so every convention rejects the
same bad values with the same message: the column, the value, the record as the user
counts it (:func:`row_label`) and the fix.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..runtime.validate import OscarInputError

__all__ = [
    "MAX_LENGTH",
    "SOURCE_ROW",
    "blank",
    "finish_frame",
    "judge_names",
    "name_column",
    "outcome_from_labels",
    "prompt_ids",
    "prompt_key",
    "require_columns",
    "row_label",
    "shown",
]

# Position of each canonical row in the raw input, so extra columns can follow the rows a
# format rule dropped.
SOURCE_ROW = "__source_row__"


def require_columns(frame: pd.DataFrame, columns, schema: str) -> None:
    """Raise naming every column of ``columns`` that ``frame`` lacks for ``schema``."""
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise OscarInputError(
            f"missing required column(s) {absent} for schema {schema!r}; "
            f"found columns {sorted(map(str, frame.columns))}"
        )


def prompt_key(value):
    """Hashable prompt id; lists such as ["file.jsonl", 444] become "file.jsonl#444"."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return "#".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def row_label(frame: pd.DataFrame, i: int) -> str:
    """Record ``i`` of ``frame`` as the user counts it: the 1-based row of the raw input
    (before any format rule dropped records; a CSV's file line is this number + 1)."""
    raw = int(frame[SOURCE_ROW].iloc[i]) if frame is not None and SOURCE_ROW in frame.columns else int(i)
    return f"row {raw + 1}"


def blank(col: pd.Series) -> np.ndarray:
    """True where a name or id is missing: NaN/None, empty or only white space."""
    return (col.isna() | (col.astype(str).str.strip() == "")).to_numpy()


def name_column(frame: pd.DataFrame, column: str) -> pd.Series:
    """``frame[column]`` as stripped names; a missing or blank name is an error."""
    col = frame[column]
    bad = blank(col)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(
            f"column {column!r} {row_label(frame, row)}: missing name; every record needs a {column}"
        )
    return col.astype(str).str.strip()


def outcome_from_labels(values: pd.Series, column: str, mapping: dict, allow_numeric: bool, frame=None):
    """Map outcome labels to (Y, tie_kind); numeric values in [0, 1] pass through if allowed.

    ``frame`` (the frame ``values`` came from) lets errors name the raw input row.
    """
    raw_values = values.to_numpy()
    if allow_numeric and raw_values.dtype.kind in "fiu":
        # Numbers pass through: vectorised unless one is out of range (the loop names it).
        number = raw_values.astype(float)
        if np.all(np.isfinite(number) & (number >= 0.0) & (number <= 1.0)):
            return number, np.where(number == 0.5, "tie", "").astype(object)
    y = np.empty(len(values))
    kind = np.empty(len(values), dtype=object)
    for i, raw in enumerate(raw_values):
        key = raw.strip().lower() if isinstance(raw, str) else raw
        if isinstance(key, str) and key in mapping:
            y[i], kind[i] = mapping[key]
            continue
        number = None
        if allow_numeric and not isinstance(raw, (bool, np.bool_)):
            try:
                number = float(raw)
            except (TypeError, ValueError):
                number = None
        if number is not None and math.isfinite(number) and 0.0 <= number <= 1.0:
            y[i] = number
            kind[i] = "tie" if number == 0.5 else ""
            continue
        expected = sorted({k for k in mapping})
        extra = " or a number in [0, 1]" if allow_numeric else ""
        raise OscarInputError(
            f"column {column!r} {row_label(frame, i)}: unknown label {shown(raw)!r}; "
            f"expected one of {expected}{extra}" + _bool_hint(raw)
        )
    return y, kind


def shown(value):
    """A raw value as the user wrote it (numpy scalars as plain Python numbers)."""
    return value.item() if isinstance(value, np.generic) else value


def _bool_hint(raw) -> str:
    if isinstance(raw, (bool, np.bool_)) or (isinstance(raw, str) and raw.strip().lower() in ("true", "false")):
        return " (a true/false value is not an outcome: write A/B/tie, or 1/0/0.5 for slot A's score)"
    return ""


def finish_frame(frame: pd.DataFrame, out: dict) -> pd.DataFrame:
    """The canonical frame of columns ``out``, plus the optional columns every schema
    shares (weights, lengths, texts) read from the raw ``frame``."""
    # Positional arrays only: a Series built from a sorted, filtered or concatenated frame
    # keeps that frame's index labels, and pandas would align it by label, not by position.
    result = pd.DataFrame({k: (v.to_numpy() if isinstance(v, pd.Series) else np.asarray(v)) for k, v in out.items()})
    if SOURCE_ROW in frame.columns:
        result[SOURCE_ROW] = frame[SOURCE_ROW].to_numpy()
    if "weight" in frame.columns:
        w = pd.to_numeric(frame["weight"], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise OscarInputError(
                f"column 'weight' {row_label(frame, row)}: invalid weight {shown(frame['weight'].iloc[row])!r}; "
                "weights must be finite and ≥ 0"
            )
        result["weight"] = w
    else:
        result["weight"] = 1.0
    for side in ("a", "b"):
        lcol, tcol = f"len_{side}", f"text_{side}"
        if lcol in frame.columns:
            result[lcol] = _lengths(frame[lcol], lcol, frame)
        elif tcol in frame.columns:
            texts = frame[tcol]
            if texts.isna().any():
                row = int(np.flatnonzero(texts.isna().to_numpy())[0])
                raise OscarInputError(f"column {tcol!r} {row_label(frame, row)}: missing response text")
            # Unicode characters, as in Section 3.2 (not bytes, not tokens).
            result[lcol] = texts.astype(str).str.len().astype(float).to_numpy()
    if ("len_a" in result) != ("len_b" in result):
        have = "len_a" if "len_a" in result else "len_b"
        raise OscarInputError(
            f"only {have!r} (or its text column) is present; lengths need both slots"
        )
    return result


# No response is a billion characters long: a larger "length" is a unit or parsing error,
# and one such value would dominate the length scale s_L of every other record.
MAX_LENGTH = 1e9


def _lengths(col: pd.Series, name: str, frame=None) -> np.ndarray:
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    huge = np.isfinite(values) & (values > MAX_LENGTH)
    if huge.any():
        row = int(np.flatnonzero(huge)[0])
        raise OscarInputError(
            f"column {name!r} {row_label(frame, row)}: length "
            f"{shown(col.iloc[row])!r} exceeds {MAX_LENGTH:.0e} characters; lengths are character counts of "
            "the responses — fix the value (or drop the length columns)"
        )
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(
            f"column {name!r} {row_label(frame, row)}: invalid length {shown(col.iloc[row])!r}; lengths must be "
            "finite, non-negative character counts (give all records lengths, or none)"
        )
    return values


def prompt_ids(frame: pd.DataFrame, column: str, report) -> pd.Series:
    """Prompt-cluster keys from ``column``; without it every record is its own cluster
    (noted in ``report``, a :class:`~oscar_jax.io.data.LoadReport`)."""
    if column not in frame.columns:
        report.notes.append(
            f"no {column!r} column: every record is its own prompt cluster, so cluster-robust "
            "intervals reduce to heteroskedasticity-robust ones"
        )
        return pd.Series([f"record-{i}" for i in range(len(frame))], dtype=object)
    col = frame[column]
    if col.isna().any():
        row = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise OscarInputError(f"column {column!r} {row_label(frame, row)}: missing prompt id; give every record "
                              f"its prompt's id (records of one prompt form one cluster), or drop the {column!r} "
                              "column to make every record its own cluster")
    if pd.api.types.infer_dtype(col, skipna=False) == "string":
        # Strings are their own keys: one hash pass instead of a Python call per record.
        return col.astype(object)
    return col.map(prompt_key)


def judge_names(frame: pd.DataFrame, column: str, report, default: str = "judge") -> pd.Series:
    """Judge names from ``column``; without it every record has judge ``default`` (noted)."""
    if column not in frame.columns:
        report.notes.append(f"no {column!r} column: all records are treated as one judge {default!r}")
        return pd.Series([default] * len(frame), dtype=object)
    return name_column(frame, column)

