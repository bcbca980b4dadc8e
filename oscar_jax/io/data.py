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
``unknown`` verdicts, ``tie (bothbad)`` when asked) and the ones the user asks for
(``filters``, ``exclude_ties``, ``missing_responses="drop"``), and their counts are in
the :class:`LoadReport`. Everything else that is wrong is an :class:`OscarInputError`
naming the column, the value, the record and the fix.

This module needs pandas only: a file is read and checked before JAX is imported.
"""


from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from .columns import CANONICAL_COLUMNS, SOURCE_ROW, LoadReport, raise_at
from .filters import filter_pairs, selection_mask
from .readers import read_table, refuse_duplicate_columns
from .responses import attach_responses
from .schemas import SCHEMAS, detect_schema
from ..runtime.validate import OscarInputError

__all__ = [
    "CANONICAL_COLUMNS",
    "Judgments",
    "LoadReport",
    "load_arena_hard",
    "example_path",
    "load_judgments",
    "shared_data_dir",
]

DATA_DIR_ENV = "OSCAR_DATA_DIR"
# Shipped with the package (package data), so examples run without a download.
EXAMPLES = {"arena": "arena_battles.csv"}


def example_path(name: str = "arena") -> Path:
    """Path of a dataset shipped with the package.

    ``"arena"``: 240 synthetic Chatbot Arena-style battles (``question_id, model_a,
    model_b, winner, judge``): 3 models against ``gpt-4-0314`` on 20 prompts, each pair
    shown in both orders to ``gpt-4-turbo`` (which prefers the first-shown answer) and
    ``claude-3-opus``; 30 ties and 16 ``tie (bothbad)``. The same records as the other
    ecosystem files in ``tests/data`` (``tests/data/make_ecosystem_files.py``).
    """
    if name not in EXAMPLES:
        raise OscarInputError(f"Requested example {name!r} but it must be one of {sorted(EXAMPLES)}")
    return Path(__file__).resolve().parent / "examples" / EXAMPLES[name]


def shared_data_dir() -> Path:
    """Where the shared (not redistributable) datasets live.

    ``$OSCAR_DATA_DIR`` if set, else ``../shared/data`` relative to the repository root.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"  # <root>/oscar_jax/io/data.py


class Judgments(NamedTuple):
    """Judgments read into the canonical frame, with the report of what the reader did.

    What :func:`load_judgments` returns (``frame, report = load_judgments(...)``); every
    estimator accepts it as its data.
    """

    frame: pd.DataFrame
    report: LoadReport


def load_judgments(source, schema: str | None = None, *, bothbad: str = "tie", baseline: str | None = None,
                   strong_weight: float | None = None, filters=(), exclude_ties: bool = False, keep_columns=(),
                   encoding: str | None = None, responses=None, turn: int = 1,
                   missing_responses: str = "error") -> Judgments:
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
    baseline, strong_weight
        arena-hard-auto files: the baseline model shown first in game 1 (v0.1 rows do
        not store it; fills or must agree with a ``baseline`` column) and the weight of a
        ``>>`` verdict (default 1; arena-hard-auto uses 3). Either implies
        ``schema="arena-hard"``.
    filters
        Keep only the records whose column equals a value, as text: a dict
        ``{"category": "coding"}``, ``(column, value)`` pairs or ``"COLUMN=VALUE"``
        strings (FastChat's ``--category``; CLI ``--filter``). A canonical column
        (``judge``, ``prompt``, …) is matched as read, any other on the raw input.
    exclude_ties
        Drop ties of both kinds ("tie" and Arena's "tie (bothbad)"), as FastChat's
        ``--exclude-tie`` does; by default a tie scores ½.
    keep_columns
        Extra raw columns to carry through (user covariates for ``build_design``).
    encoding
        Text encoding of CSV/TSV/JSON files (default UTF-8).
    responses, turn, missing_responses
        Response lengths joined by (prompt, candidate): a FastChat ``model_answer``
        directory, answer JSONL files or a table (see :mod:`oscar_jax.io.responses`); ``turn``
        picks the answer turn; ``missing_responses="drop"`` drops (and counts) judgments
        lacking a response instead of raising. Joined after the filters, so only the
        records kept need a response.

    Returns
    -------
    Judgments
        ``(frame, report)``: the canonical frame (see module docstring) and a
        :class:`LoadReport` counting every drop.

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
    refuse_duplicate_columns(list(raw.columns), name)
    raw.columns = [str(c).strip() for c in raw.columns]
    if len(raw) == 0:
        raise OscarInputError(f"{name}: no records (empty data)")
    if baseline is not None or strong_weight is not None:
        if schema not in (None, "arena-hard"):
            raise OscarInputError(f"baseline and strong_weight (--baseline, --strong-weight) apply to arena-hard "
                                  f"files only, not schema {schema!r}")
        schema = "arena-hard"
    if schema is None:
        schema = detect_schema(raw)
    if schema not in SCHEMAS:
        raise OscarInputError(f"Requested schema {schema!r} but it must be one of {sorted(SCHEMAS)}")
    report = LoadReport(source=name, schema=schema, n_input=len(raw))
    options = {"bothbad": bothbad, "baseline": baseline, "strong_weight": strong_weight}
    raw[SOURCE_ROW] = np.arange(len(raw), dtype=np.int32 if len(raw) < 2**31 else np.int64)  # 40 MB less at 10⁷
    pairs = filter_pairs(filters)
    # The raw columns read after the conversion (covariates, filters on columns the canonical
    # frame lacks) are kept aside; the raw frame itself is handed to the converter, which may
    # drop a column once it has read it (at 10⁷ records Arena's winner labels are 150 MB).
    columns = [c for c in raw.columns if c != SOURCE_ROW]
    aside = raw[[c for c in dict.fromkeys([*keep_columns, *(c for c, _ in pairs)]) if c in raw.columns]]
    holder = [raw]
    del raw
    try:
        frame = SCHEMAS[schema].convert(holder.pop(), report, options)
    except OscarInputError as exc:
        text = str(exc)
        raise OscarInputError(text if text.startswith(name) else f"{name}: {text}") from None
    rows = frame.pop(SOURCE_ROW).to_numpy() if SOURCE_ROW in frame.columns else np.arange(len(frame))
    # A filter on a column the frame lacks reads the raw input's column, carried only while selecting.
    carried = [c for c, _ in pairs if c not in frame.columns and c not in keep_columns]
    for col in dict.fromkeys([*keep_columns, *carried]):
        if col not in aside.columns:
            what = "covariate column" if col in keep_columns else "--filter/--category column"
            raise OscarInputError(
                f"{what} {col!r} is not in the data; columns: {sorted(columns)}"
                + ("" if col in keep_columns else " (Python: filters=)")
            )
        frame[col] = aside[col].to_numpy()[rows]
    same = (frame["candidate_a"] == frame["candidate_b"]).to_numpy()
    raise_at(same, lambda i: (f"row {int(rows[i]) + 1}: candidate_a == candidate_b == {frame['candidate_a'].iloc[i]!r}; "
                              f"a candidate cannot be compared with itself ({int(same.sum())} such records); remove them"))
    if pairs or exclude_ties:
        keep = selection_mask(frame, report, pairs, exclude_ties)
        frame, rows = frame.loc[keep].drop(columns=list(dict.fromkeys(carried))).reset_index(drop=True), rows[keep]
    if responses is not None:
        frame = attach_responses(frame, report, responses, turn=turn, missing_responses=missing_responses, rows=rows)
    if len(frame) == 0:
        raise OscarInputError(f"{name}: no records left after the format's drops ({report.summary()})")
    kinds = frame["tie_kind"]
    report.ties = {"ties": int((kinds == "tie").sum()), "'tie (bothbad)' ties": int((kinds == "bothbad").sum())}
    report.n_kept = len(frame)
    return Judgments(frame.reset_index(drop=True), report)


def load_arena_hard(source, *, baseline: str | None = None, strong_weight: float | None = None,
                    **options) -> Judgments:
    """:func:`load_judgments` of arena-hard-auto judgment rows (``model``, ``games`` and
    optionally ``question_id``/``uid``, ``judge``, ``baseline``), e.g.
    ``load_arena_hard(path, baseline="gpt-4-0314")`` for arena-hard-auto v0.1."""
    return load_judgments(source, "arena-hard", baseline=baseline, strong_weight=strong_weight, **options)
