"""Response lengths from answer files, joined to judgments by (prompt, candidate).

Judgment releases rarely carry the response texts, but every user of FastChat's
``llm_judge`` has its ``model_answer/`` directory, and most other pipelines can write a
table of answers. :func:`read_responses` reads either into one table of lengths, and
:func:`attach_responses` joins it to a canonical judgment frame as ``len_a``/``len_b``
(Section 3.2's L contrast), so the length term becomes estimable.

Accepted sources (one path, a list of paths, or a DataFrame):

* a FastChat ``model_answer`` directory, or FastChat answer JSONL files: one record per
  line with ``question_id``, ``choices[0].turns`` and ``model_id`` (the candidate; the
  file name without ``.jsonl`` when ``model_id`` is absent). ``turn`` picks the answer
  turn (1 = the first answer, what a single-turn judge saw). Files in a directory whose
  records have no ``choices`` (FastChat's ``question.jsonl``) are skipped, counted.
* a CSV, TSV, JSONL or Parquet table with a prompt column (``prompt`` or ``question_id``),
  a candidate column (``candidate``, ``model`` or ``model_id``) and ``text`` or ``length``.

Lengths are Unicode characters (code points: ``len(str)``), not bytes or tokens. Prompt
ids go through the same key as the judgment readers (:func:`oscar_jax.io.columns.prompt_key`), so
``126``, ``"126"`` and list ids such as ``["file.jsonl", 444]`` join as they should.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .columns import prompt_key, raise_at
from .readers import read_table
from ..runtime.validate import OscarInputError

__all__ = ["MISSING_POLICIES", "attach_responses", "read_responses"]

MISSING_POLICIES = ("error", "drop")
_PROMPT_COLS = ("prompt", "question_id")
_CANDIDATE_COLS = ("candidate", "model", "model_id")
_FIX = "pass missing_responses='drop' (CLI: --missing-responses drop) to drop such judgments, counted"


def _where(source: str, row: int) -> str:
    """The record as the user counts it: a file line for line formats, else a 1-based row."""
    suffix = Path(source).suffix.lower() if not source.startswith("<") else ""
    if suffix in (".jsonl", ".ndjson"):
        return f"{source} line {row + 1}"
    if suffix in (".csv", ".tsv"):
        return f"{source} line {row + 2} (after the header)"
    return f"{source} record {row + 1}"


def _check_turn(turn) -> int:
    if isinstance(turn, bool) or not isinstance(turn, (int, np.integer)) or turn < 1:
        raise OscarInputError(f"turn must be a whole number ≥ 1 (1 = first answer), got {turn!r}")
    return int(turn)


def _fastchat_file(path: Path, turn: int) -> pd.DataFrame | None:
    """Rows (prompt, candidate, length, origin) of one FastChat answer file; None if not one."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise OscarInputError(f"{path} line {line_no}: not valid JSON ({exc}); fix or remove the line") from None
            if not isinstance(rec, dict) or "choices" not in rec:
                if not rows:
                    return None
                raise OscarInputError(f"{path} line {line_no}: no 'choices' field; every FastChat answer "
                                      "record needs choices[0].turns")
            where = f"{path} line {line_no}"
            if "question_id" not in rec:
                raise OscarInputError(f"{where}: no 'question_id'; every answer needs the id of its question")
            choices = rec["choices"]
            turns = choices[0].get("turns") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
            if not isinstance(turns, list):
                raise OscarInputError(f"{where}: 'choices' must be a list whose first item has a 'turns' list")
            if len(turns) < turn:
                raise OscarInputError(f"{where}: answer has {len(turns)} turn(s), turn {turn} was asked for; "
                                      "choose an existing turn with turn= (CLI: --turn)")
            text = turns[turn - 1]
            if not isinstance(text, str):
                raise OscarInputError(f"{where}: turn {turn} is {type(text).__name__}, not text")
            model = rec.get("model_id") or path.name.removesuffix(".jsonl")
            rows.append((rec["question_id"], str(model).strip(), float(len(text)), where))
    if not rows:
        return None
    return pd.DataFrame(rows, columns=["prompt", "candidate", "length", "origin"])


def _table(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    cols = set(frame.columns)
    prompt = next((c for c in _PROMPT_COLS if c in cols), None)
    cand = next((c for c in _CANDIDATE_COLS if c in cols), None)
    if prompt is None or cand is None or not ({"length", "text"} & cols):
        raise OscarInputError(
            f"{name}: a response table needs a prompt column ({' or '.join(_PROMPT_COLS)}), a candidate "
            f"column ({' or '.join(_CANDIDATE_COLS)}) and 'text' or 'length'; found {sorted(map(str, cols))}"
        )
    origin = [_where(name, i) for i in range(len(frame))]
    # A row's 'length' wins; rows without one are measured from 'text' (Unicode code points).
    given = frame["length"] if "length" in cols else pd.Series([None] * len(frame), index=frame.index)
    texts = frame["text"] if "text" in cols else pd.Series([None] * len(frame), index=frame.index)
    lengths = pd.to_numeric(given, errors="coerce").to_numpy(dtype=float, copy=True)
    from_text = given.isna().to_numpy()
    is_text = texts.map(lambda t: isinstance(t, str)).to_numpy()
    lengths[from_text & is_text] = texts[from_text & is_text].map(len).to_numpy(dtype=float)
    raise_at(~np.isfinite(lengths) | (lengths < 0), lambda i: (
        f"{origin[i]}: no usable response ({'length' if not from_text[i] else 'text'} is "
        f"{(given if not from_text[i] else texts).iloc[i]!r}); give a non-negative character count or the response text"))
    raise_at(frame[prompt].isna().to_numpy() | frame[cand].isna().to_numpy(),
             lambda i: f"{origin[i]}: missing {prompt!r} or {cand!r}; every response needs both")
    return pd.DataFrame({"prompt": frame[prompt].to_numpy(), "candidate": frame[cand].astype(str).str.strip().to_numpy(),
                         "length": lengths, "origin": origin})


def _paths(source) -> list[Path]:
    items = [source] if isinstance(source, (str, Path)) else list(source)
    out = []
    for item in items:
        p = Path(item)
        if not p.exists():
            raise OscarInputError(f"responses {str(p)!r} does not exist; give a FastChat model_answer "
                                  "directory, answer .jsonl files or a table of responses")
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise OscarInputError(f"responses directory {str(p)!r} holds no .jsonl answer files")
            out += found
        else:
            out.append(p)
    return out


def read_responses(source, *, turn: int = 1) -> tuple[pd.DataFrame, list[str]]:
    """One row per (prompt, candidate): its response length in Unicode characters.

    Returns the table (columns ``prompt``, ``candidate``, ``length``, ``origin`` — the file
    line or row it came from) and notes on what was read. Two responses for one
    (prompt, candidate) with different lengths are an error naming both.
    """
    turn = _check_turn(turn)
    notes: list[str] = []
    if isinstance(source, pd.DataFrame):
        parts = [_table(source, "<DataFrame>")]
    else:
        paths = _paths(source)
        parts, skipped = [], []
        directory = any(Path(s).is_dir() for s in ([source] if isinstance(source, (str, Path)) else source))
        for p in paths:
            fastchat = _fastchat_file(p, turn) if p.suffix.lower() in (".jsonl", ".ndjson") else None
            if fastchat is not None:
                parts.append(fastchat)
                continue
            raw, name = read_table(p)
            if directory and "turns" in raw.columns and "choices" not in raw.columns:
                skipped.append(p.name)  # FastChat's question.jsonl sits next to the answers
                continue
            parts.append(_table(raw, name))
        if skipped:
            notes.append(f"skipped {len(skipped)} file(s) without answers: {', '.join(skipped)}")
        if not parts:
            raise OscarInputError(f"no responses found in {source!r}")
    table = pd.concat(parts, ignore_index=True)
    table["prompt"] = table["prompt"].map(prompt_key)
    dup = table.duplicated(["prompt", "candidate"], keep=False)
    if dup.any():
        first = table.loc[dup].groupby(["prompt", "candidate"], sort=False)
        for (prompt, cand), grp in first:
            if grp["length"].nunique() > 1:
                a, b = grp.iloc[0], grp.iloc[1]
                raise OscarInputError(
                    f"two responses of candidate {cand!r} to prompt {prompt!r} differ in length "
                    f"({a.origin}: {a.length:.0f} characters, {b.origin}: {b.length:.0f}); keep one of them"
                )
        table = table.drop_duplicates(["prompt", "candidate"]).reset_index(drop=True)
    return table, notes


def attach_responses(frame: pd.DataFrame, report, source, *, turn: int = 1, missing_responses: str = "error",
                     rows=None) -> pd.DataFrame:
    """``frame`` with ``len_a``/``len_b`` from the responses of its (prompt, candidate) pairs.

    ``frame`` is a canonical judgment frame and ``report`` its
    :class:`~oscar_jax.io.data.LoadReport` (the join is noted there). ``rows`` maps frame rows
    to raw input records, for error messages. A judgment whose prompt lacks a response of
    either candidate is an error naming the record, the prompt and the candidate, unless
    ``missing_responses="drop"``, which drops it and counts the drops in the report.
    """
    if missing_responses not in MISSING_POLICIES:
        raise OscarInputError(f"missing_responses must be one of {MISSING_POLICIES}, got {missing_responses!r}")
    if "len_a" in frame.columns or "len_b" in frame.columns:
        raise OscarInputError(
            f"{report.source}: the judgments already carry response lengths or texts; give lengths either "
            "in the data or with responses=, not both"
        )
    turn = _check_turn(turn)
    table, notes = read_responses(source, turn=turn)
    lookup = pd.Series(table["length"].to_numpy(), index=pd.MultiIndex.from_frame(table[["prompt", "candidate"]]))
    prompts = frame["prompt"].to_numpy()
    lengths = {}
    for side in ("a", "b"):
        keys = pd.MultiIndex.from_arrays([prompts, frame[f"candidate_{side}"].to_numpy()])
        lengths[side] = lookup.reindex(keys).to_numpy(dtype=float)
    missing = np.isnan(lengths["a"]) | np.isnan(lengths["b"])
    rows = np.arange(len(frame)) if rows is None else np.asarray(rows)
    shown = source if isinstance(source, (str, Path)) else (
        "<DataFrame>" if isinstance(source, pd.DataFrame) else ", ".join(map(str, source)))
    if missing_responses == "error":
        raise_at(missing, lambda i: (
            f"{_where(report.source, int(rows[i]))}: no turn-{turn} response of candidate "
            f"{frame['candidate_a' if np.isnan(lengths['a'][i]) else 'candidate_b'].iloc[i]!r} to prompt "
            f"{prompts[i]!r} in {shown} ({int(missing.sum())} judgment(s) lack a response); add the missing "
            f"answers or {_FIX}"))
    out = frame.assign(len_a=lengths["a"], len_b=lengths["b"])
    if missing_responses == "drop":
        report.dropped["judgments without a response (missing_responses='drop')"] = int(missing.sum())
        out = out.loc[~missing].reset_index(drop=True)
    note = (f"response lengths (Unicode characters, turn {turn}) from {shown}: {len(table)} responses "
            f"of {table['candidate'].nunique()} candidates to {table['prompt'].nunique()} prompts")
    report.notes.extend(notes)
    report.lengths = note
    return out
