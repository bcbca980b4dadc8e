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

from .names import id_text, normal_names, numbers, refuse_lookalikes
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
    "name_codes",
    "name_columns",
    "outcome_from_labels",
    "prompt_ids",
    "raise_at",
    "require_columns",
    "row_label",
    "shown",
    "TIE_KINDS",
    "label_is",
    "tie_kinds",
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


def row_label(frame: pd.DataFrame, i: int) -> str:
    """Record ``i`` of ``frame`` as the user counts it: the 1-based row of the raw input
    (before any format rule dropped records; a CSV's file line is this number + 1)."""
    raw = int(frame[SOURCE_ROW].iloc[i]) if frame is not None and SOURCE_ROW in frame.columns else int(i)
    return f"row {raw + 1}"


def blank(col: pd.Series) -> np.ndarray:
    """True where a name or id is missing: NaN/None, empty or only white space."""
    codes, uniques = _codes(id_text(pd.Series(col)))
    empty = np.array([str(u).strip() == "" for u in uniques] + [True], dtype=bool)
    return empty[codes]


def _codes(col: pd.Series) -> tuple[np.ndarray, list]:
    """Codes of a text column into its distinct values; a missing value gets the last code."""
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    uniques = [str(u) for u in uniques]
    codes[codes < 0] = len(uniques)  # in place: a second array of codes is 80 MB at 10⁷ records
    return codes, uniques


def name_codes(frame: pd.DataFrame, columns, kind: str) -> tuple[list[np.ndarray], list[list[str]]]:
    codes, names, _ = _name_codes(frame, columns, kind)
    return codes, names


def _name_codes(frame: pd.DataFrame, columns, kind: str, keep_codes: bool = True):
    """``frame``'s name columns (both slots of a pair, or the judge) as one set of names:
    each column's integer codes into its own list of names.

    Each name is stripped and normalised to NFC (:mod:`oscar_jax.io.names`), on the
    distinct values only; a missing or blank name is an error, and so are two names that
    differ only by invisible characters or NFKC folding (both spellings and their first
    rows named). Two spellings that normalise alike share one name (a list may repeat it).
    ``keep_codes=False`` returns None for the codes of a column whose names need no rewrite
    (its column as read is returned instead), so each column's codes (80 MB at 10⁷ records)
    are freed before the next column is coded.
    """
    all_codes, all_names, as_read, seen = [], [], [], {}
    for column in columns:
        raw = id_text(frame[column])
        codes, uniques = _codes(raw)
        names = normal_names(uniques) + [""]
        as_read.append(raw if names[:-1] == uniques else None)  # nothing to rewrite: keep the column
        bad = np.array([n == "" for n in names], dtype=bool)[codes]
        raise_at(bad, lambda i, c=column, r=raw: f"column {c!r} {row_label(frame, i)}: missing name "
                 f"{shown(r.iloc[i])!r}; every record needs a {c}")
        first = np.zeros(len(names), dtype=np.int64)
        # The last write wins: each name's first record (int32 positions: half the memory at 10⁷ records).
        first[codes[::-1]] = np.arange(len(codes), dtype=np.int32 if len(codes) < 2**31 else np.int64)[::-1]
        for j, name in enumerate(names[:-1]):
            row = int(frame[SOURCE_ROW].iloc[first[j]]) if SOURCE_ROW in frame.columns else int(first[j])
            seen[name] = min(seen.get(name, row), row)
        all_codes.append(codes if keep_codes or as_read[-1] is None else None)
        all_names.append(names[:-1])
        del codes, bad, first
    refuse_lookalikes(kind, list(seen), list(seen.values()), where=" / ".join(repr(c) for c in columns))
    return all_codes, all_names, as_read


def name_columns(frame: pd.DataFrame, columns, kind: str) -> list[pd.Series]:
    """:func:`name_codes` as text columns (Arrow strings, one per column of ``columns``)."""
    codes, names, as_read = _name_codes(frame, columns, kind, keep_codes=False)
    return [raw if raw is not None else pd.Series(pd.array(n, dtype="str").take(c), index=frame.index)
            for c, n, raw in zip(codes, names, as_read)]


def name_column(frame: pd.DataFrame, column: str) -> pd.Series:
    """``frame[column]`` as stripped, NFC-normalised names; a missing or blank name is an error."""
    return name_columns(frame, (column,), column)[0]


def outcome_from_labels(values: pd.Series, column: str, mapping: dict, allow_numeric: bool, frame=None):
    """Map outcome labels to (Y, tie_kind); numeric values in [0, 1] pass through if allowed.

    ``frame`` (the frame ``values`` came from) lets errors name the raw input row. Each
    *distinct* label is looked up once; ``tie_kind`` is a text array ("", "tie", "bothbad").
    """
    raw_values = values.to_numpy() if values.dtype.kind in "fiub" else None
    if allow_numeric and raw_values is not None and raw_values.dtype.kind in "fiu":
        # Numbers pass through: vectorised unless one is out of range (the loop below names it).
        number = raw_values.astype(float)
        if np.all(np.isfinite(number) & (number >= 0.0) & (number <= 1.0)):
            return number, tie_kinds(np.where(number == 0.5, 1, 0), ["", "tie"])
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        uniques = list(uniques) + [None]
        codes[codes < 0] = len(uniques) - 1
    except TypeError:  # unhashable values (lists): one "label" per record
        uniques, codes = list(values), np.arange(len(values))
    kinds = list(TIE_KINDS)
    y_u = np.empty(len(uniques))
    kind_u = np.zeros(len(uniques), dtype=np.int8)
    bad_u = np.zeros(len(uniques), dtype=bool)
    for j, raw in enumerate(uniques):
        key = raw.strip().lower() if isinstance(raw, str) else raw
        if isinstance(key, str) and key in mapping:
            y_u[j], kind = mapping[key]
            kind_u[j] = kinds.index(kind)
            continue
        number = None
        if allow_numeric and not isinstance(raw, (bool, np.bool_)):
            try:
                number = float(raw)
            except (TypeError, ValueError):
                number = None
        if number is not None and math.isfinite(number) and 0.0 <= number <= 1.0:
            y_u[j], kind_u[j] = number, int(number == 0.5)
        else:
            bad_u[j] = True
    bad = bad_u[codes]
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raw = values.iloc[i]
        expected = sorted({k for k in mapping})
        extra = " or a number in [0, 1]" if allow_numeric else ""
        raise OscarInputError(
            f"column {column!r} {row_label(frame, i)}: unknown label {shown(raw)!r}; "
            f"expected one of {expected}{extra}" + _bool_hint(raw)
        )
    return y_u[codes], tie_kinds(kind_u[codes], kinds)


TIE_KINDS = ("", "tie", "bothbad")


def tie_kinds(codes: np.ndarray, kinds=TIE_KINDS) -> pd.Series:
    """The ``tie_kind`` column from integer codes into ``kinds``: a categorical of
    :data:`TIE_KINDS` (one byte per record, no string per record)."""
    codes = np.asarray(codes)
    out = np.zeros(len(codes), dtype=np.int8)
    for j, kind in enumerate(kinds):  # a mask per kind: indexing by the codes would copy them as intp (80 MB at 10⁷)
        if code := TIE_KINDS.index(kind):
            out[codes == j] = code
    return pd.Series(pd.Categorical.from_codes(out, categories=list(TIE_KINDS)))


def label_is(values: pd.Series, label: str) -> np.ndarray:
    """Where ``values`` equals ``label`` once stripped and lower-cased, compared per distinct value."""
    codes, uniques = _codes(values.astype(str) if values.dtype == object else values)
    hit = np.array([u.strip().lower() == label for u in uniques] + [False], dtype=bool)
    return hit[codes]


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
    if isinstance(candidate_a, str) and isinstance(candidate_b, str):
        cand = name_columns(frame, (candidate_a, candidate_b), "candidate")
    else:
        pair = pd.DataFrame({c: _column(frame, v).array for c, v in (("candidate_a", candidate_a),
                                                                      ("candidate_b", candidate_b))})
        if SOURCE_ROW in frame.columns:
            pair[SOURCE_ROW] = frame[SOURCE_ROW].to_numpy()
        cand = name_columns(pair, ("candidate_a", "candidate_b"), "candidate")
    out = {
        "prompt": prompt,
        "candidate_a": cand[0],
        "candidate_b": cand[1],
        "judge": judge_names(frame, judge, report, default=default_judge),
        "outcome": y,
        "tie_kind": kind,
    }
    if SOURCE_ROW in frame.columns:
        out[SOURCE_ROW] = frame[SOURCE_ROW].to_numpy()
    if "weight" in frame.columns:
        w = numbers(frame["weight"])
        raise_at(~np.isfinite(w) | (w < 0), lambda i: f"column 'weight' {row_label(frame, i)}: invalid weight "
                 f"{shown(frame['weight'].iloc[i])!r}; weights must be finite and ≥ 0")
        out["weight"] = w
    else:
        out["weight"] = np.ones(len(frame))
    for side in ("a", "b"):
        lcol, tcol = f"len_{side}", f"text_{side}"
        if lcol in frame.columns:
            out[lcol] = _lengths(frame[lcol], lcol, frame)
        elif tcol in frame.columns:
            texts = frame[tcol]
            raise_at(texts.isna(), lambda i, c=tcol: f"column {c!r} {row_label(frame, i)}: missing response text")
            # Unicode characters, as in Section 3.2 (not bytes, not tokens).
            out[lcol] = texts.astype(str).str.len().astype(float).to_numpy()
    # Positional arrays only: a Series built from a sorted, filtered or concatenated frame
    # keeps that frame's index labels, and pandas would align it by label, not by position.
    # (A Series' .array keeps its dtype: text stays Arrow text, never a column of Python objects.)
    # The columns are made here and taken as they are (copy=False): pandas' default copies each
    # numeric column, 80 MB apiece at 10⁷ records.
    result = pd.DataFrame({k: (v.array if isinstance(v, pd.Series) else np.asarray(v)) for k, v in out.items()},
                          copy=False)
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
    values = numbers(col)
    raise_at(np.isfinite(values) & (values > MAX_LENGTH), lambda i: (
        f"column {name!r} {row_label(frame, i)}: length {shown(col.iloc[i])!r} exceeds {MAX_LENGTH:.0e} characters; "
        "lengths are character counts of the responses — fix the value (or drop the length columns)"))
    raise_at(~np.isfinite(values) | (values < 0), lambda i: (
        f"column {name!r} {row_label(frame, i)}: invalid length {shown(col.iloc[i])!r}; lengths must be "
        "finite, non-negative character counts (give all records lengths, or none)"))
    return values


def _column(frame: pd.DataFrame, spec) -> pd.Series:
    return frame[spec] if isinstance(spec, str) else pd.Series(spec).reset_index(drop=True)


def prompt_ids(frame: pd.DataFrame, column: str, report) -> pd.Series:
    """Prompt-cluster keys from ``column``; without it every record is its own cluster
    (noted in ``report``, a :class:`~oscar_jax.io.data.LoadReport`)."""
    if column not in frame.columns:
        report.notes.append(
            f"no {column!r} column: every record is its own prompt cluster, so cluster-robust "
            "intervals reduce to heteroskedasticity-robust ones"
        )
        return pd.Series([f"record-{i}" for i in range(len(frame))], dtype=object)
    col = id_text(frame[column])
    raise_at(col.isna(), lambda i: f"column {column!r} {row_label(frame, i)}: missing prompt id; give every record "
             f"its prompt's id (records of one prompt form one cluster), or drop the {column!r} column to make "
             "every record its own cluster")
    return col


def judge_names(frame: pd.DataFrame, column: str, report, default: str = "judge") -> pd.Series:
    """Judge names from ``column``; without it every record has judge ``default`` (noted)."""
    if column not in frame.columns:
        report.notes.append(f"no {column!r} column: all records are treated as one judge {default!r}")
        return pd.Series(pd.array([default], dtype="str").take(np.zeros(len(frame), dtype=np.intp)))
    return name_columns(frame, (column,), "judge")[0]



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
    # (Names, blank or look-alike, are checked where build_design codes them: name_codes.)
    raise_at(frame["prompt"].isna(), lambda i: f"column 'prompt' row {i + 1}: missing prompt id; give every record its "
             "prompt's id (records of one prompt form one cluster)")
    if "weight" in frame.columns:
        raw = frame["weight"]
        w = numbers(raw)
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
