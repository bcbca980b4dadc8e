"""Read the pool a plan draws its prompts (or whole judgments) from (``oscar plan --prompts``).

Two forms, told apart by their columns:

* prompts — a ``prompt`` (or ``question_id``) column: prompts available for any pair
  and judge (a FastChat question file has ``question_id``);
* judgments — ``prompt``/``question_id`` plus ``candidate_a``, ``candidate_b``, ``judge``
  (the package's input schema without an outcome): exactly these judgments may be
  chosen, each at most as often as it occurs (a replay of hidden judgments, or prompts
  only some candidates answered).

Prompt ids are read as the data's are (:func:`~oscar_jax.io.columns.prompt_ids`), so a
pool prompt that is already in the data is the same cluster.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .columns import SOURCE_ROW, LoadReport, name_column, prompt_ids
from .readers import read_table
from ..runtime.validate import OscarInputError

__all__ = ["Pool", "read_pool"]

JUDGMENT_COLUMNS = ("candidate_a", "candidate_b", "judge")


class Pool(NamedTuple):
    """``prompts``: distinct prompt ids in file order; ``judgments``: a frame (prompt,
    candidate_a, candidate_b, judge) for a judgment pool, else None."""

    prompts: tuple
    judgments: pd.DataFrame | None
    source: str


def read_pool(source, encoding: str | None = None) -> Pool:
    """A :class:`Pool` from a file (.jsonl, .json, .csv, .tsv, .parquet), a DataFrame,
    a list of records, or a plain list of prompt ids (a Pool is returned as it is)."""
    if isinstance(source, Pool):
        return source
    if isinstance(source, (list, tuple)) and source and not isinstance(source[0], dict):
        source = pd.DataFrame({"prompt": list(source)})
    raw, name = read_table(source, encoding)
    raw = raw.reset_index(drop=True)
    raw.columns = [str(c).strip() for c in raw.columns]
    column = next((c for c in ("prompt", "question_id") if c in raw.columns), None)
    if column is None:
        raise OscarInputError(f"prompt pool {name}: no 'prompt' or 'question_id' column (columns: "
                              f"{sorted(raw.columns)}); give one prompt id per line, e.g. {{\"prompt\": \"q1\"}}")
    if len(raw) == 0:
        raise OscarInputError(f"prompt pool {name}: no rows")
    raw[SOURCE_ROW] = np.arange(len(raw))
    try:
        ids = prompt_ids(raw, column, LoadReport(source=name, schema="pool", n_input=len(raw)))
        present = [c for c in JUDGMENT_COLUMNS if c in raw.columns]
        if present and len(present) < len(JUDGMENT_COLUMNS):
            missing = [c for c in JUDGMENT_COLUMNS if c not in raw.columns]
            raise OscarInputError(f"has {present} but not {missing}: a judgment pool needs all of "
                                  f"{list(JUDGMENT_COLUMNS)}, a prompt pool none of them")
        judgments = None
        if present:
            judgments = pd.DataFrame({"prompt": ids.to_numpy(), **{c: name_column(raw, c).to_numpy()
                                                                    for c in JUDGMENT_COLUMNS}})
            same = (judgments["candidate_a"] == judgments["candidate_b"]).to_numpy()
            if same.any():
                row = int(np.flatnonzero(same)[0])
                raise OscarInputError(f"row {row + 1}: candidate_a == candidate_b == "
                                      f"{judgments['candidate_a'].iloc[row]!r}; a candidate cannot be compared with itself")
    except OscarInputError as exc:
        raise OscarInputError(f"prompt pool {name}: {exc}") from None
    return Pool(prompts=tuple(pd.unique(ids.to_numpy())), judgments=judgments, source=name)
