"""Read pairwise judgments into one canonical, validated table.

Every input convention ends up as the same tidy frame (one row per judgment, displayed
order kept):

========== ===================================================================
column     meaning
========== ===================================================================
prompt     prompt-cluster id (hashable); the unit of clustering and resampling
candidate_a / candidate_b   names of the candidates shown in slot A / slot B
judge      judge name
outcome    slot-A score Y: 1 (A preferred), 0 (B preferred), ½ (tie); values in
           (0, 1) are accepted as graded preferences by the fractional model
tie_kind   "" (no tie), "tie" or "bothbad" (kept apart, both scored ½ by default)
weight     record weight (default 1)
len_a/len_b  optional response lengths in Unicode characters
========== ===================================================================

plus any extra numeric columns the user names as covariates. Readers never drop a
record silently: the only drops are the ones a format defines (Xu et al.'s
``unknown`` verdicts, ``tie (bothbad)`` when asked), and their counts are in the
:class:`LoadReport`. Everything else that is wrong is an :class:`OscarInputError` naming
the column, the value, the record and the fix.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .validate import OscarInputError

__all__ = [
    "CANONICAL_COLUMNS",
    "LoadReport",
    "SCHEMAS",
    "Schema",
    "detect_schema",
    "load_judgments",
    "read_table",
    "register_schema",
    "shared_data_dir",
]

CANONICAL_COLUMNS = ("prompt", "candidate_a", "candidate_b", "judge", "outcome", "tie_kind", "weight")
DATA_DIR_ENV = "OSCAR_DATA_DIR"
# Position of each canonical row in the raw input, so extra columns can follow the rows a
# format rule dropped.
_ROW = "__source_row__"


def shared_data_dir() -> Path:
    """Where the shared (not redistributable) datasets live.

    ``$OSCAR_DATA_DIR`` if set, else ``../shared/data`` relative to the repository root.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data"


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
    # Where len_a/len_b came from when they were joined from responses (oscar_jax.responses);
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


# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------

def _text(path: Path, encoding: str) -> str:
    if path.suffix.lower() == ".gz":
        import gzip

        with gzip.open(path, "rt", encoding=encoding) as fh:
            return fh.read()
    return path.read_text(encoding=encoding)


def _read_jsonl(path: Path, encoding: str) -> pd.DataFrame:
    rows = []
    for number, line in enumerate(_text(path, encoding).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise OscarInputError(
                f"{str(path)!r} line {number}: not valid JSON ({exc.msg} at column {exc.colno}); a JSON-lines "
                "file needs one complete record per line — the file may be truncated: re-export it or remove "
                "that line"
            ) from None
    return pd.DataFrame(rows)


def _looks_like_json(path: Path, encoding: str) -> bool:
    try:
        head = _text(path, encoding)[:4096].lstrip("\ufeff \t\r\n")
    except (UnicodeDecodeError, OSError):
        return False
    return head[:1] in ("[", "{")


def read_table(source, encoding: str | None = None) -> tuple[pd.DataFrame, str]:
    """Read a DataFrame, CSV/TSV, JSON (array or object of arrays), JSONL or Parquet file.

    ``encoding`` is the text encoding of CSV/TSV/JSON files (default UTF-8).
    Returns the raw frame and a printable source name.
    """
    enc = encoding or "utf-8"
    if isinstance(source, pd.DataFrame):
        return source.copy(), "<DataFrame>"
    if isinstance(source, (list, tuple)) and (not source or isinstance(source[0], dict)):
        return pd.DataFrame(list(source)), "<records>"
    path = Path(source)
    if not path.exists():
        raise OscarInputError(f"data file {str(path)!r} does not exist")
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
    try:
        if suffix in (".csv", ".csv.gz", ".tsv", ".tsv.gz") and _looks_like_json(path, enc):
            raise OscarInputError(
                f"{str(path)!r} has a {suffix} suffix but holds JSON; rename it to .json (an array of "
                "records) or .jsonl (one record per line)"
            )
        if suffix in (".csv", ".csv.gz"):
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""], encoding=enc)
        elif suffix in (".tsv", ".tsv.gz"):
            frame = pd.read_csv(path, sep="\t", keep_default_na=False, na_values=[""], encoding=enc)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix in (".jsonl", ".ndjson", ".jsonl.gz"):
            frame = _read_jsonl(path, enc)
        elif suffix == ".json":
            frame = _read_json(path, enc)
        else:
            raise OscarInputError(
                f"cannot tell the format of {str(path)!r} from its suffix {suffix!r}; "
                "use .csv, .tsv, .json, .jsonl or .parquet"
            )
    except OscarInputError:
        raise
    except UnicodeDecodeError as exc:
        raise OscarInputError(
            f"cannot read {str(path)!r} as {enc}: byte 0x{exc.object[exc.start]:02x} at position {exc.start} is "
            f"not valid {exc.encoding}; if the file was saved in another encoding, name it with --encoding "
            "(e.g. --encoding cp1252, latin-1 or utf-16; Python: load_judgments(..., encoding=...))"
        ) from None
    except LookupError:
        raise OscarInputError(f"unknown text encoding {enc!r}; e.g. utf-8, cp1252, latin-1, utf-16") from None
    except ImportError as exc:
        raise OscarInputError(f"reading {str(path)!r} needs an optional package: {exc}; "
                              "for Parquet, pip install pyarrow") from None
    except (ValueError, json.JSONDecodeError) as exc:
        raise OscarInputError(f"could not parse {str(path)!r}: {exc}") from None
    return frame, str(path)


def _read_json(path: Path, encoding: str = "utf-8") -> pd.DataFrame:
    text = path.read_text(encoding=encoding)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        # Many "json" dumps are really JSON lines.
        return _read_jsonl(path, encoding)
    if isinstance(obj, list):
        return pd.DataFrame(obj)
    if isinstance(obj, dict):
        for key in ("records", "data", "judgments", "battles"):
            if isinstance(obj.get(key), list):
                return pd.DataFrame(obj[key])
        try:
            return pd.DataFrame(obj)
        except ValueError:
            pass
    raise OscarInputError(
        f"{str(path)!r}: expected a JSON array of records (or an object with a 'records' array)"
    )


# ---------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Schema:
    """An input convention: how to recognise it and how to convert it to canonical rows.

    ``convert(frame, report, options)`` returns a frame with the canonical columns and
    records in the report every drop it makes.
    """

    name: str
    required: tuple[str, ...]
    convert: Callable[[pd.DataFrame, LoadReport, dict], pd.DataFrame]
    description: str = ""
    # Columns whose presence marks this schema even when another's are also present.
    marker: tuple[str, ...] = ()


SCHEMAS: dict[str, Schema] = {}


def register_schema(schema: Schema) -> Schema:
    """Add an input convention (used by the ecosystem readers)."""
    SCHEMAS[schema.name] = schema
    return schema


def detect_schema(frame: pd.DataFrame) -> str:
    """Name of the one schema whose required columns the frame has.

    Raises when none or several match; pass ``schema=`` to choose explicitly.
    """
    cols = set(frame.columns)
    hits = [s.name for s in SCHEMAS.values() if set(s.required) <= cols]
    if len(hits) > 1:
        marked = [h for h in hits if SCHEMAS[h].marker and set(SCHEMAS[h].marker) <= cols]
        if len(marked) == 1:
            return marked[0]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        wanted = "; ".join(f"{s.name}: {', '.join(s.required)}" for s in SCHEMAS.values())
        raise OscarInputError(
            f"cannot recognise the input columns {sorted(map(str, cols))}; "
            f"expected the columns of one schema ({wanted})"
        )
    raise OscarInputError(
        f"the input columns match several schemas {hits}; choose one with schema=... (CLI: --schema)"
    )


def _missing(frame: pd.DataFrame, columns, schema: str):
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


def _row(frame: pd.DataFrame, i: int) -> str:
    """Record ``i`` of ``frame`` as the user counts it: the 1-based row of the raw input
    (before any format rule dropped records; a CSV's file line is this number + 1)."""
    raw = int(frame[_ROW].iloc[i]) if frame is not None and _ROW in frame.columns else int(i)
    return f"row {raw + 1}"


def _names(frame: pd.DataFrame, column: str) -> pd.Series:
    col = frame[column]
    bad = col.isna() | (col.astype(str).str.strip() == "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise OscarInputError(
            f"column {column!r} {_row(frame, row)}: missing name; every record needs a {column}"
        )
    return col.astype(str).str.strip()


def _outcome_from_labels(values: pd.Series, column: str, mapping: dict, allow_numeric: bool, frame=None):
    """Map outcome labels to (Y, tie_kind); numeric values in [0, 1] pass through if allowed.

    ``frame`` (the frame ``values`` came from) lets errors name the raw input row.
    """
    y = np.empty(len(values))
    kind = np.empty(len(values), dtype=object)
    for i, raw in enumerate(values.to_numpy()):
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
        shown = raw.item() if isinstance(raw, np.generic) else raw
        raise OscarInputError(
            f"column {column!r} {_row(frame, i)}: unknown label {shown!r}; "
            f"expected one of {expected}{extra}" + _bool_hint(raw)
        )
    return y, kind


def _shown(value):
    """A raw value as the user wrote it (numpy scalars as plain Python numbers)."""
    return value.item() if isinstance(value, np.generic) else value


def _bool_hint(raw) -> str:
    if isinstance(raw, (bool, np.bool_)) or (isinstance(raw, str) and raw.strip().lower() in ("true", "false")):
        return " (a true/false value is not an outcome: write A/B/tie, or 1/0/0.5 for slot A's score)"
    return ""


def _finish(frame: pd.DataFrame, out: dict, report: LoadReport) -> pd.DataFrame:
    """Attach optional columns shared by every schema (weights, lengths, texts)."""
    # Positional arrays only: a Series built from a sorted, filtered or concatenated frame
    # keeps that frame's index labels, and pandas would align it by label, not by position.
    result = pd.DataFrame({k: (v.to_numpy() if isinstance(v, pd.Series) else np.asarray(v)) for k, v in out.items()})
    if _ROW in frame.columns:
        result[_ROW] = frame[_ROW].to_numpy()
    if "weight" in frame.columns:
        w = pd.to_numeric(frame["weight"], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise OscarInputError(
                f"column 'weight' {_row(frame, row)}: invalid weight {_shown(frame['weight'].iloc[row])!r}; "
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
                raise OscarInputError(f"column {tcol!r} {_row(frame, row)}: missing response text")
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
            f"column {name!r} {_row(frame, row)}: length "
            f"{_shown(col.iloc[row])!r} exceeds {MAX_LENGTH:.0e} characters; lengths are character counts of "
            "the responses — fix the value (or drop the length columns)"
        )
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise OscarInputError(
            f"column {name!r} {_row(frame, row)}: invalid length {_shown(col.iloc[row])!r}; lengths must be "
            "finite, non-negative character counts (give all records lengths, or none)"
        )
    return values


def _convert_oscar(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    _missing(frame, ("candidate_a", "candidate_b", "outcome"), "oscar")
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "tie": (0.5, "tie"),
               "tie (bothbad)": (0.5, "bothbad"), "bothbad": (0.5, "bothbad")}
    y, kind = _outcome_from_labels(frame["outcome"], "outcome", mapping, allow_numeric=True, frame=frame)
    out = {
        "prompt": _prompts(frame, "prompt", report),
        "candidate_a": _names(frame, "candidate_a"),
        "candidate_b": _names(frame, "candidate_b"),
        "judge": _judges(frame, "judge", report),
        "outcome": y,
        "tie_kind": kind,
    }
    return _finish(frame, out, report)


def _convert_xu(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    cols = ("question_id", "model_a", "model_b", "judge_model", "judge_preferred_model")
    _missing(frame, cols, "xu")
    verdict = frame["judge_preferred_model"].astype(str).str.strip().str.lower()
    unknown = verdict == "unknown"
    report.dropped["'unknown' verdicts (format rule)"] = int(unknown.sum())
    frame = frame.loc[~unknown].reset_index(drop=True)
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "c": (0.5, "tie")}
    y, kind = _outcome_from_labels(frame["judge_preferred_model"], "judge_preferred_model", mapping, False, frame)
    out = {
        "prompt": _prompts(frame, "question_id", report),
        "candidate_a": _names(frame, "model_a"),
        "candidate_b": _names(frame, "model_b"),
        "judge": _names(frame, "judge_model"),
        "outcome": y,
        "tie_kind": kind,
    }
    return _finish(frame, out, report)


ARENA_WINNERS = {"model_a": (1.0, ""), "model_b": (0.0, ""), "tie": (0.5, "tie"),
                 "tie (bothbad)": (0.5, "bothbad")}


def _convert_arena(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    _missing(frame, ("model_a", "model_b", "winner"), "arena")
    frame = _apply_bothbad(frame, frame["winner"].astype(str).str.strip().str.lower() == "tie (bothbad)",
                           report, options)
    y, kind = _outcome_from_labels(frame["winner"], "winner", ARENA_WINNERS, False, frame)
    prompt_col = "question_id" if "question_id" in frame.columns else "prompt"
    out = {
        "prompt": _prompts(frame, prompt_col, report),
        "candidate_a": _names(frame, "model_a"),
        "candidate_b": _names(frame, "model_b"),
        "judge": _judges(frame, "judge", report, default="arena"),
        "outcome": y,
        "tie_kind": kind,
    }
    return _finish(frame, out, report)


def _apply_bothbad(frame, is_bothbad, report: LoadReport, options: dict) -> pd.DataFrame:
    """``bothbad='tie'`` (default) scores 'tie (bothbad)' as ½; ``'drop'`` removes it, counted."""
    policy = options.get("bothbad", "tie")
    if policy not in ("tie", "drop"):
        raise OscarInputError(f"bothbad must be 'tie' or 'drop', got {policy!r}")
    if policy == "drop":
        report.dropped["'tie (bothbad)' records (bothbad='drop')"] = int(np.sum(is_bothbad))
        return frame.loc[~np.asarray(is_bothbad)].reset_index(drop=True)
    return frame


def _prompts(frame: pd.DataFrame, column: str, report: LoadReport) -> pd.Series:
    if column not in frame.columns:
        report.notes.append(
            f"no {column!r} column: every record is its own prompt cluster, so cluster-robust "
            "intervals reduce to heteroskedasticity-robust ones"
        )
        return pd.Series([f"record-{i}" for i in range(len(frame))], dtype=object)
    col = frame[column]
    if col.isna().any():
        row = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise OscarInputError(f"column {column!r} {_row(frame, row)}: missing prompt id; give every record "
                              f"its prompt's id (records of one prompt form one cluster), or drop the {column!r} "
                              "column to make every record its own cluster")
    return col.map(prompt_key)


def _judges(frame: pd.DataFrame, column: str, report: LoadReport, default: str = "judge") -> pd.Series:
    if column not in frame.columns:
        report.notes.append(f"no {column!r} column: all records are treated as one judge {default!r}")
        return pd.Series([default] * len(frame), dtype=object)
    return _names(frame, column)


register_schema(Schema("xu", ("question_id", "model_a", "model_b", "judge_model", "judge_preferred_model"),
                       _convert_xu, "Xu et al. (2026) judge release: verdict a/b/c/unknown",
                       marker=("judge_preferred_model",)))
register_schema(Schema("arena", ("model_a", "model_b", "winner"), _convert_arena,
                       "Chatbot Arena battles: winner model_a/model_b/tie/tie (bothbad)",
                       marker=("winner", "model_a")))
register_schema(Schema("oscar", ("candidate_a", "candidate_b", "outcome"), _convert_oscar,
                       "oscar_jax columns: prompt, candidate_a, candidate_b, judge, outcome"))


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------

def load_judgments(source, schema: str | None = None, *, bothbad: str = "tie",
                   keep_columns=(), encoding: str | None = None, responses=None, turn: int = 1,
                   missing_responses: str = "error", **schema_options) -> tuple[pd.DataFrame, LoadReport]:
    """Read judgments from a file or DataFrame into the canonical frame.

    Parameters
    ----------
    source
        A path (.csv, .tsv, .json, .jsonl, .parquet), a DataFrame or a list of dicts.
    schema
        Input convention; detected from the columns when None. One of ``SCHEMAS``.
    bothbad
        ``"tie"`` (default) scores Arena's ``tie (bothbad)`` as ½ and reports it
        separately; ``"drop"`` removes those records (counted in the report).
    keep_columns
        Extra raw columns to carry through (user covariates for ``build_design``).
    encoding
        Text encoding of CSV/TSV/JSON files (default UTF-8).
    responses, turn, missing_responses
        Response lengths joined by (prompt, candidate): a FastChat ``model_answer``
        directory, answer JSONL files or a table (see :mod:`oscar_jax.responses`); ``turn``
        picks the answer turn; ``missing_responses="drop"`` drops (and counts) judgments
        lacking a response instead of raising.
    **schema_options
        Options of a particular reader (e.g. arena-hard's ``baseline``, ``strong_weight``),
        passed to its converter.

    Returns
    -------
    frame, report
        The canonical frame (see module docstring) and a :class:`LoadReport`.

    Examples
    --------
    >>> frame, report = load_judgments([{"candidate_a": "x", "candidate_b": "y", "outcome": "A"}])
    >>> float(frame.outcome[0]), report.n_kept
    (1.0, 1)
    """
    raw, name = read_table(source, encoding)
    # Positions, not index labels, identify records from here on: a sorted, filtered or
    # concatenated DataFrame must give the same result as its reset copy.
    raw = raw.reset_index(drop=True)
    raw.columns = [str(c).strip() for c in raw.columns]
    if len(raw) == 0:
        raise OscarInputError(f"{name}: no records (empty data)")
    if schema is None:
        schema = detect_schema(raw)
    if schema not in SCHEMAS:
        raise OscarInputError(f"Requested schema {schema!r} but it must be one of {sorted(SCHEMAS)}")
    report = LoadReport(source=name, schema=schema, n_input=len(raw))
    options = {"bothbad": bothbad, **schema_options}
    raw[_ROW] = np.arange(len(raw))
    try:
        frame = SCHEMAS[schema].convert(raw, report, options)
    except OscarInputError as exc:
        text = str(exc)
        raise OscarInputError(text if text.startswith(name) else f"{name}: {text}") from None
    rows = frame.pop(_ROW).to_numpy() if _ROW in frame.columns else np.arange(len(frame))
    for col in keep_columns:
        if col not in raw.columns:
            raise OscarInputError(
                f"covariate column {col!r} is not in the data; columns: {sorted(c for c in raw.columns if c != _ROW)}"
            )
        frame[col] = raw[col].to_numpy()[rows]
    same = (frame["candidate_a"] == frame["candidate_b"]).to_numpy()
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise OscarInputError(
            f"row {int(rows[row]) + 1}: candidate_a == candidate_b == {frame['candidate_a'].iloc[row]!r}; "
            f"a candidate cannot be compared with itself ({int(same.sum())} such records); remove them"
        )
    if responses is not None:
        from .responses import attach_responses

        frame = attach_responses(frame, report, responses, turn=turn, missing_responses=missing_responses, rows=rows)
    if len(frame) == 0:
        raise OscarInputError(f"{name}: no records left after the format's drops ({report.summary()})")
    kinds = frame["tie_kind"].to_numpy()
    report.ties = {"ties": int(np.sum(kinds == "tie")), "'tie (bothbad)' ties": int(np.sum(kinds == "bothbad"))}
    report.n_kept = len(frame)
    return frame.reset_index(drop=True), report
