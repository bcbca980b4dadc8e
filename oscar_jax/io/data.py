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

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .columns import SOURCE_ROW, finish_frame, judge_names, name_column, outcome_from_labels, prompt_ids, require_columns
from .responses import attach_responses
from .readers import read_table
from ..runtime.validate import OscarInputError

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


def shared_data_dir() -> Path:
    """Where the shared (not redistributable) datasets live.

    ``$OSCAR_DATA_DIR`` if set, else ``../shared/data`` relative to the repository root.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"  # <root>/oscar_jax/io/data.py


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


# ---------------------------------------------------------------------------------------
# The schema registry and the built-in conventions (the ecosystem's are in schemas.py)
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


def _convert_oscar(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("candidate_a", "candidate_b", "outcome"), "oscar")
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "tie": (0.5, "tie"),
               "tie (bothbad)": (0.5, "bothbad"), "bothbad": (0.5, "bothbad")}
    y, kind = outcome_from_labels(frame["outcome"], "outcome", mapping, allow_numeric=True, frame=frame)
    out = {
        "prompt": prompt_ids(frame, "prompt", report),
        "candidate_a": name_column(frame, "candidate_a"),
        "candidate_b": name_column(frame, "candidate_b"),
        "judge": judge_names(frame, "judge", report),
        "outcome": y,
        "tie_kind": kind,
    }
    return finish_frame(frame, out)


def _convert_xu(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    cols = ("question_id", "model_a", "model_b", "judge_model", "judge_preferred_model")
    require_columns(frame, cols, "xu")
    verdict = frame["judge_preferred_model"].astype(str).str.strip().str.lower()
    unknown = verdict == "unknown"
    report.dropped["'unknown' verdicts (format rule)"] = int(unknown.sum())
    frame = frame.loc[~unknown].reset_index(drop=True)
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "c": (0.5, "tie")}
    y, kind = outcome_from_labels(frame["judge_preferred_model"], "judge_preferred_model", mapping, False, frame)
    out = {
        "prompt": prompt_ids(frame, "question_id", report),
        "candidate_a": name_column(frame, "model_a"),
        "candidate_b": name_column(frame, "model_b"),
        "judge": name_column(frame, "judge_model"),
        "outcome": y,
        "tie_kind": kind,
    }
    return finish_frame(frame, out)


ARENA_WINNERS = {"model_a": (1.0, ""), "model_b": (0.0, ""), "tie": (0.5, "tie"),
                 "tie (bothbad)": (0.5, "bothbad")}


def _convert_arena(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("model_a", "model_b", "winner"), "arena")
    frame = _apply_bothbad(frame, frame["winner"].astype(str).str.strip().str.lower() == "tie (bothbad)",
                           report, options)
    y, kind = outcome_from_labels(frame["winner"], "winner", ARENA_WINNERS, False, frame)
    prompt_col = "question_id" if "question_id" in frame.columns else "prompt"
    out = {
        "prompt": prompt_ids(frame, prompt_col, report),
        "candidate_a": name_column(frame, "model_a"),
        "candidate_b": name_column(frame, "model_b"),
        "judge": judge_names(frame, "judge", report, default="arena"),
        "outcome": y,
        "tie_kind": kind,
    }
    return finish_frame(frame, out)


def _apply_bothbad(frame, is_bothbad, report: LoadReport, options: dict) -> pd.DataFrame:
    """``bothbad='tie'`` (default) scores 'tie (bothbad)' as ½; ``'drop'`` removes it, counted."""
    policy = options.get("bothbad", "tie")
    if policy not in ("tie", "drop"):
        raise OscarInputError(f"bothbad must be 'tie' or 'drop', got {policy!r}")
    if policy == "drop":
        report.dropped["'tie (bothbad)' records (bothbad='drop')"] = int(np.sum(is_bothbad))
        return frame.loc[~np.asarray(is_bothbad)].reset_index(drop=True)
    return frame


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
        directory, answer JSONL files or a table (see :mod:`oscar_jax.io.responses`); ``turn``
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
    raw[SOURCE_ROW] = np.arange(len(raw))
    try:
        frame = SCHEMAS[schema].convert(raw, report, options)
    except OscarInputError as exc:
        text = str(exc)
        raise OscarInputError(text if text.startswith(name) else f"{name}: {text}") from None
    rows = frame.pop(SOURCE_ROW).to_numpy() if SOURCE_ROW in frame.columns else np.arange(len(frame))
    for col in keep_columns:
        if col not in raw.columns:
            raise OscarInputError(
                f"covariate column {col!r} is not in the data; columns: {sorted(c for c in raw.columns if c != SOURCE_ROW)}"
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
        frame = attach_responses(frame, report, responses, turn=turn, missing_responses=missing_responses, rows=rows)
    if len(frame) == 0:
        raise OscarInputError(f"{name}: no records left after the format's drops ({report.summary()})")
    kinds = frame["tie_kind"].to_numpy()
    report.ties = {"ties": int(np.sum(kinds == "tie")), "'tie (bothbad)' ties": int(np.sum(kinds == "bothbad"))}
    report.n_kept = len(frame)
    return frame.reset_index(drop=True), report
