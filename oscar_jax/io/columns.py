"""The canonical columns, built from raw input columns with every value checked.

Each input convention (:mod:`oscar_jax.io.schemas`) maps its own columns onto the
canonical frame with :func:`canonical_frame` and the helpers here, so every convention
rejects the same bad values with the same message: the column, the value, the record as
the user counts it (:func:`row_label`) and the fix. :func:`check_canonical` applies the
same rules at the public edge of ``build_design``, to frames users build themselves; a
:class:`LoadReport` records what a reader kept, dropped and noted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..runtime.validate import OscarDataWarning, OscarInputError

__all__ = [
    "CANONICAL_COLUMNS",
    "LoadReport",
    "MAX_LENGTH",
    "SOURCE_ROW",
    "blank",
    "canonical_frame",
    "check_canonical",
    "judge_names",
    "name_column",
    "outcome_from_labels",
    "prompt_ids",
    "prompt_key",
    "raise_at",
    "require_columns",
    "row_label",
    "shown",
    "warn_case_variants",
]

CANONICAL_COLUMNS = ("prompt", "candidate_a", "candidate_b", "judge", "outcome", "tie_kind", "weight")


@dataclass
class LoadReport:
    """What a reader did: the schema it used, record counts and every drop, by reason."""

    source: str
    schema: str
    n_input: int
    n_kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    ties: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Where len_a/len_b came from when they were joined from responses (oscar_jax.io.responses);
    # build_design copies it into the design's (and so every result's) notes.
    lengths: str = ""

    def summary(self) -> str:
        parts = [f"{self.n_kept} of {self.n_input} records kept ({self.schema} schema)"]
        for reason, n in self.dropped.items():
            if n:
                parts.append(f"dropped {n} {reason}")
        for kind, n in self.ties.items():
            if n:
                parts.append(f"{n} {kind}")
        return "; ".join(parts)

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


def raise_at(bad, message) -> None:
    """Raise :class:`OscarInputError` with ``message(i)`` for the first record ``i`` where
    ``bad`` holds (``message`` names the column, the row as the user counts it, the value
    and the fix)."""
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        raise OscarInputError(message(int(np.flatnonzero(bad)[0])))


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
    raise_at(blank(col), lambda i: f"column {column!r} {row_label(frame, i)}: missing name; every record needs a {column}")
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


def canonical_frame(frame: pd.DataFrame, report: LoadReport, outcome, *, prompt, candidate_a, candidate_b,
                    judge: str, default_judge: str = "judge") -> pd.DataFrame:
    """The canonical frame of one input convention: every converter ends here.

    Parameters
    ----------
    frame
        The raw records (with :data:`SOURCE_ROW`, so errors name the user's rows).
    report
        The reader's :class:`LoadReport`; notes on absent columns go there.
    outcome
        ``(Y, tie_kind)`` arrays, as :func:`outcome_from_labels` returns them.
    prompt
        The prompt-id column, or several in order of preference (the first present is
        used; with none, every record is its own cluster, noted), or the ids (a Series).
    candidate_a, candidate_b
        Name columns (checked by :func:`name_column`), or the names (Series).
    judge, default_judge
        The judge column; without it every record has judge ``default_judge`` (noted).

    Weights, lengths and response texts, which every convention spells alike, are read
    from ``frame`` here.
    """
    if not isinstance(prompt, pd.Series):
        names = (prompt,) if isinstance(prompt, str) else tuple(prompt)
        prompt = prompt_ids(frame, next((c for c in names if c in frame.columns), names[0]), report)
    y, kind = outcome
    out = {
        "prompt": prompt,
        "candidate_a": candidate_a if isinstance(candidate_a, pd.Series) else name_column(frame, candidate_a),
        "candidate_b": candidate_b if isinstance(candidate_b, pd.Series) else name_column(frame, candidate_b),
        "judge": judge_names(frame, judge, report, default=default_judge),
        "outcome": y,
        "tie_kind": kind,
    }
    # Positional arrays only: a Series built from a sorted, filtered or concatenated frame
    # keeps that frame's index labels, and pandas would align it by label, not by position.
    result = pd.DataFrame({k: (v.to_numpy() if isinstance(v, pd.Series) else np.asarray(v)) for k, v in out.items()})
    if SOURCE_ROW in frame.columns:
        result[SOURCE_ROW] = frame[SOURCE_ROW].to_numpy()
    if "weight" in frame.columns:
        w = pd.to_numeric(frame["weight"], errors="coerce").to_numpy(dtype=float)
        raise_at(~np.isfinite(w) | (w < 0), lambda i: f"column 'weight' {row_label(frame, i)}: invalid weight "
                 f"{shown(frame['weight'].iloc[i])!r}; weights must be finite and ≥ 0")
        result["weight"] = w
    else:
        result["weight"] = 1.0
    for side in ("a", "b"):
        lcol, tcol = f"len_{side}", f"text_{side}"
        if lcol in frame.columns:
            result[lcol] = _lengths(frame[lcol], lcol, frame)
        elif tcol in frame.columns:
            texts = frame[tcol]
            raise_at(texts.isna(), lambda i, c=tcol: f"column {c!r} {row_label(frame, i)}: missing response text")
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
    raise_at(np.isfinite(values) & (values > MAX_LENGTH), lambda i: (
        f"column {name!r} {row_label(frame, i)}: length {shown(col.iloc[i])!r} exceeds {MAX_LENGTH:.0e} characters; "
        "lengths are character counts of the responses — fix the value (or drop the length columns)"))
    raise_at(~np.isfinite(values) | (values < 0), lambda i: (
        f"column {name!r} {row_label(frame, i)}: invalid length {shown(col.iloc[i])!r}; lengths must be "
        "finite, non-negative character counts (give all records lengths, or none)"))
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
    raise_at(col.isna(), lambda i: f"column {column!r} {row_label(frame, i)}: missing prompt id; give every record "
             f"its prompt's id (records of one prompt form one cluster), or drop the {column!r} column to make "
             "every record its own cluster")
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



# ---------------------------------------------------------------------------------------
# The same rules at the public edge of build_design (frames users build themselves)
# ---------------------------------------------------------------------------------------

def check_canonical(frame: pd.DataFrame) -> None:
    """Raise :class:`OscarInputError` naming the column, row, value and fix of the first bad entry.

    The readers validate what they read, but ``build_design`` is public and is also called
    on frames users build themselves; the same rules apply there, so no path into a fit
    accepts what a reader rejects (a negative or NaN weight, a missing name, a missing
    prompt id). Rows are counted from 1, as the user counts them.
    """
    for column in ("candidate_a", "candidate_b", "judge"):
        raise_at(blank(pd.Series(frame[column].to_numpy(), dtype=object)), lambda i, c=column: (
            f"column {c!r} row {i + 1}: missing name {shown(frame[c].iloc[i])!r}; every record needs a {c}"))
    raise_at(frame["prompt"].isna(), lambda i: f"column 'prompt' row {i + 1}: missing prompt id; give every record its "
             "prompt's id (records of one prompt form one cluster)")
    if "weight" in frame.columns:
        raw = frame["weight"]
        w = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        raise_at(~np.isfinite(w) | (w < 0) | raw.isna().to_numpy(), lambda i: (
            f"column 'weight' row {i + 1}: invalid weight {shown(raw.iloc[i])!r}; weights must be finite and ≥ 0 "
            "(use 0 to leave a record out)"))
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
