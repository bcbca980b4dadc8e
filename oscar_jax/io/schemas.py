"""The input conventions: how to recognise each one and how to convert it to canonical rows.

:data:`SCHEMAS` lists them all, in one place. Every convention becomes the canonical frame
of :mod:`oscar_jax.io.data` (built by :func:`~oscar_jax.io.columns.canonical_frame`) with the
*displayed* order kept (slot A = the response shown first). Detection picks the one
schema whose required columns are present (marker columns break ties); ``schema=`` /
``--schema`` overrides it.

=========== ============================================ =====================================
schema      columns                                      outcome coding → Y (slot A score)
=========== ============================================ =====================================
xu          question_id, model_a, model_b, judge_model,  a → 1, b → 0, c → ½; ``unknown``
            judge_preferred_model (Xu et al. 2026)       dropped (format rule)
arena       model_a, model_b, winner [question_id,       model_a → 1, model_b → 0, tie → ½,
            judge]  (FastChat battles)                   tie (bothbad) → ½ (kept apart, or
                                                         dropped with ``bothbad="drop"``)
oscar       prompt, candidate_a, candidate_b, judge,     A/B/tie or a number in [0, 1]
            outcome
evalica     left, right, winner [question_id, judge]     left → 1, right → 0, tie → ½
crowdkit    worker, left, right, label [task]            label = the winner's id (no ties)
alpacaeval  generator_1, generator_2, preference         1 → 1, 2 → 0, 1.5 or legacy 0 → ½,
            [instruction, annotator, output_1/2]         p ∈ (1, 2) → 2 − p (graded); null
                                                         preference dropped (format rule)
arena-hard  model, games[].score [baseline,              game 1 shows (baseline, model), game 2
            question_id | uid, judge, strong_weight]     (model, baseline); A>B / A>>B → 1,
                                                         A=B → ½, B>A / B>>A → 0; a game with a
                                                         null score is dropped (format rule)
=========== ============================================ =====================================

Arena-hard ``>>`` verdicts carry weight ``strong_weight`` (default 1; arena-hard-auto's
own default is 3, which counts such a verdict as three independent ones and narrows the
intervals accordingly, cf. arena-hard-auto issue #51). The baseline is not stored in
arena-hard-auto v0.1 rows: give it with ``baseline=`` (``load_judgments``, CLI
``--baseline``) or a ``baseline`` column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import (LoadReport, canonical_frame, label_is, name_column, outcome_from_labels, prompt_ids, raise_at,
                      require_columns, row_label, shown)
from ..runtime.validate import OscarInputError

__all__ = [
    "ARENA_HARD_LABELS",
    "ARENA_WINNERS",
    "EVALICA_WINNERS",
    "SCHEMAS",
    "Schema",
    "detect_schema",
    "register_schema",
]


@dataclass(frozen=True)
class Schema:
    """An input convention: how to recognise it and how to convert it to canonical rows.

    ``convert(frame, report, options)`` returns a frame with the canonical columns and
    records in the report every drop it makes; ``options`` holds the reader options
    (``bothbad``, ``baseline``, ``strong_weight``).
    """

    name: str
    required: tuple[str, ...]
    convert: Callable[[pd.DataFrame, LoadReport, dict], pd.DataFrame]
    description: str = ""
    # Columns whose presence marks this schema even when another's are also present.
    marker: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------
# oscar_jax's own columns, Xu et al.'s release, Chatbot Arena battles
# ---------------------------------------------------------------------------------------

def _convert_oscar(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("candidate_a", "candidate_b", "outcome"), "oscar")
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "tie": (0.5, "tie"),
               "tie (bothbad)": (0.5, "bothbad"), "bothbad": (0.5, "bothbad")}
    outcome = outcome_from_labels(frame["outcome"], "outcome", mapping, allow_numeric=True, frame=frame)
    return canonical_frame(frame, report, outcome, prompt="prompt", candidate_a="candidate_a",
                           candidate_b="candidate_b", judge="judge")


def _convert_xu(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    cols = ("question_id", "model_a", "model_b", "judge_model", "judge_preferred_model")
    require_columns(frame, cols, "xu")
    unknown = label_is(frame["judge_preferred_model"], "unknown")
    report.dropped["'unknown' verdicts (format rule)"] = int(unknown.sum())
    frame = frame.loc[~unknown].reset_index(drop=True)
    mapping = {"a": (1.0, ""), "b": (0.0, ""), "c": (0.5, "tie")}
    outcome = outcome_from_labels(frame["judge_preferred_model"], "judge_preferred_model", mapping, False, frame)
    return canonical_frame(frame, report, outcome, prompt="question_id", candidate_a="model_a",
                           candidate_b="model_b", judge="judge_model")


ARENA_WINNERS = {"model_a": (1.0, ""), "model_b": (0.0, ""), "tie": (0.5, "tie"),
                 "tie (bothbad)": (0.5, "bothbad")}


def _convert_arena(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("model_a", "model_b", "winner"), "arena")
    is_bothbad = label_is(frame["winner"], "tie (bothbad)")
    policy = options.get("bothbad", "tie")  # 'tie' scores 'tie (bothbad)' as ½; 'drop' removes it, counted
    if policy not in ("tie", "drop"):
        raise OscarInputError(f"bothbad must be 'tie' or 'drop', got {policy!r}")
    if policy == "drop":
        report.dropped["'tie (bothbad)' records (bothbad='drop')"] = int(np.sum(is_bothbad))
        frame = frame.loc[~is_bothbad].reset_index(drop=True)
    outcome = outcome_from_labels(frame["winner"], "winner", ARENA_WINNERS, False, frame)
    frame = frame.drop(columns=["winner"])  # read: freed here when the caller handed the frame over
    return canonical_frame(frame, report, outcome, prompt=("question_id", "prompt"), candidate_a="model_a",
                           candidate_b="model_b", judge="judge", default_judge="arena")


EVALICA_WINNERS = {"left": (1.0, ""), "right": (0.0, ""), "tie": (0.5, "tie")}

# Verdict label → (slot-A score, strong verdict?). Both spellings of each verdict occur in
# arena-hard-auto's label_to_score table (show_result.py).
ARENA_HARD_LABELS = {
    "A>>B": (1.0, True), "A>B": (1.0, False), "A=B": (0.5, False), "B>A": (0.0, False),
    "B>>A": (0.0, True), "B<<A": (1.0, True), "B<A": (1.0, False), "B=A": (0.5, False),
    "A<B": (0.0, False), "A<<B": (0.0, True),
}


# ---------------------------------------------------------------------------------------
# evalica: left, right, winner ∈ {left, right, tie}
# ---------------------------------------------------------------------------------------

def _convert_evalica(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("left", "right", "winner"), "evalica")
    outcome = outcome_from_labels(frame["winner"], "winner", EVALICA_WINNERS, False, frame)
    return canonical_frame(frame, report, outcome, prompt=("question_id", "prompt"), candidate_a="left",
                           candidate_b="right", judge="judge")


# ---------------------------------------------------------------------------------------
# crowd-kit: worker, left, right, label = winner's id
# ---------------------------------------------------------------------------------------

def _convert_crowdkit(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("worker", "left", "right", "label"), "crowdkit")
    left, right = name_column(frame, "left"), name_column(frame, "right")
    label = name_column(frame, "label")
    a_won = (label == left).to_numpy()
    raise_at(~(a_won | (label == right).to_numpy()), lambda i: (
        f"column 'label' {row_label(frame, i)}: {label.iloc[i]!r} is neither the left item {left.iloc[i]!r} nor the "
        f"right item {right.iloc[i]!r}; crowd-kit labels hold the winner's id and the format has no ties (use the "
        "evalica or oscar schema for ties)"))
    outcome = a_won.astype(float), np.full(len(frame), "", dtype=object)
    return canonical_frame(frame, report, outcome, prompt=("task", "question_id", "prompt"), candidate_a=left,
                           candidate_b=right, judge="worker")


# ---------------------------------------------------------------------------------------
# AlpacaEval annotations: generator_1, generator_2, preference ∈ {1, 2, 1.5, 0} or [1, 2]
# ---------------------------------------------------------------------------------------

def _alpaca_preference(raw, row: str) -> tuple[float, str]:
    number = None
    if not isinstance(raw, bool):
        try:
            number = float(raw)
        except (TypeError, ValueError):
            number = None
    if number is None or not math.isfinite(number) or not (number == 0.0 or 1.0 <= number <= 2.0):
        raise OscarInputError(
            f"column 'preference' {row}: {shown(raw)!r} is not an AlpacaEval preference; expected "
            "1 (output_1 wins), 2 (output_2 wins), 1.5 or legacy 0 (draw), or a value in [1, 2] "
            "from a weighted annotator"
        )
    if number == 0.0 or number == 1.5:
        return 0.5, "tie"
    return 2.0 - number, ""


def _convert_alpacaeval(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("generator_1", "generator_2", "preference"), "alpacaeval")
    # AlpacaEval itself drops annotations that are not preferences (failed annotator calls).
    null = frame["preference"].isna().to_numpy()
    report.dropped["annotations with a null preference (format rule)"] = int(null.sum())
    frame = frame.loc[~null].reset_index(drop=True)
    pairs = [_alpaca_preference(v, row_label(frame, i)) for i, v in enumerate(frame["preference"].to_numpy())]
    frame = frame.copy()
    for side, col in (("a", "output_1"), ("b", "output_2")):
        if col in frame.columns and f"text_{side}" not in frame.columns and f"len_{side}" not in frame.columns:
            frame[f"text_{side}"] = frame[col]
    report.notes.append(
        "AlpacaEval stores preferences relative to output_1/output_2, not the (randomized) order "
        "the annotator saw; slot A is output_1, so position effects are not identified from this file"
    )
    outcome = np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=object)
    return canonical_frame(frame, report, outcome, prompt=("instruction", "question_id", "prompt"),
                           candidate_a="generator_1", candidate_b="generator_2", judge="annotator",
                           default_judge="alpacaeval")


# ---------------------------------------------------------------------------------------
# arena-hard-auto judgments: model, games[0..1].score; game 2 is position-swapped
# ---------------------------------------------------------------------------------------

def _game_score(game):
    if isinstance(game, dict):
        return game.get("score")
    return game


def _arena_hard_options(frame: pd.DataFrame, options: dict) -> pd.DataFrame:
    """``frame`` with the reader's ``baseline`` and ``strong_weight`` as columns (a given
    baseline must agree with a ``baseline`` column the rows carry)."""
    baseline, strong_weight = options.get("baseline"), options.get("strong_weight")
    if baseline is not None:
        if "baseline" in frame.columns:
            given = frame["baseline"].astype(str).str.strip()
            raise_at(given != str(baseline), lambda i: (f"column 'baseline' {row_label(frame, i)}: {given.iloc[i]!r} "
                                                        f"differs from baseline={baseline!r}; drop one of the two"))
        frame = frame.assign(baseline=str(baseline))
    if strong_weight is not None:
        w = float(strong_weight)
        if not (math.isfinite(w) and w > 0):
            raise OscarInputError(f"strong_weight must be a positive number, got {strong_weight!r}")
        frame = frame.assign(strong_weight=w)
    return frame


def _convert_arena_hard(frame: pd.DataFrame, report: LoadReport, options: dict) -> pd.DataFrame:
    require_columns(frame, ("model", "games"), "arena-hard")
    frame = _arena_hard_options(frame, options)
    if "baseline" not in frame.columns:
        raise OscarInputError(
            "schema 'arena-hard': the rows carry no 'baseline' column, and arena-hard-auto v0.1 files "
            "do not record the baseline model; pass it with --baseline NAME (Python: "
            "oscar_jax.load_judgments(path, baseline='gpt-4-0314')) or add a 'baseline' field"
        )
    strong = 1.0
    if "strong_weight" in frame.columns:
        values = pd.to_numeric(frame["strong_weight"], errors="coerce").to_numpy(dtype=float)
        if not np.all(np.isfinite(values) & (values > 0)) or np.ptp(values) != 0:
            raise OscarInputError(
                "column 'strong_weight': the weight of '>>' verdicts must be one positive number for "
                f"the whole file, got {sorted(set(frame['strong_weight'].astype(str)))[:5]}"
            )
        strong = float(values[0])
    model = name_column(frame, "model")
    baseline = name_column(frame, "baseline")
    pid_col = next((c for c in ("question_id", "uid", "prompt") if c in frame.columns), None)
    rows = []
    n_null = 0
    for i in range(len(frame)):
        games = frame["games"].iloc[i]
        if isinstance(games, np.ndarray):
            games = games.tolist()
        if not isinstance(games, (list, tuple)) or not 1 <= len(games) <= 2:
            raise OscarInputError(
                f"column 'games' {row_label(frame, i)}: expected a list of one or two games with a 'score' each "
                f"(game 1: baseline shown first; game 2: positions swapped), got {games!r:.80}"
            )
        for g, game in enumerate(games):
            score = _game_score(game)
            if score is None or (isinstance(score, float) and math.isnan(score)):
                n_null += 1  # arena-hard-auto drops judgments without a verdict
                continue
            label = str(score).strip().replace(" ", "")
            if label not in ARENA_HARD_LABELS:
                raise OscarInputError(
                    f"column 'games' {row_label(frame, i)} game {g + 1}: unknown verdict {score!r}; expected one "
                    f"of {sorted(ARENA_HARD_LABELS)}"
                )
            y, is_strong = ARENA_HARD_LABELS[label]
            # Displayed order: game 1 shows the baseline as A; game 2 swaps the positions.
            a, b = (baseline.iloc[i], model.iloc[i]) if g == 0 else (model.iloc[i], baseline.iloc[i])
            rows.append((i, a, b, y, "tie" if y == 0.5 else "", strong if is_strong else 1.0))
    report.dropped["arena-hard games with a null score (format rule)"] = n_null
    # One input row holds two games (records); count records, as every other schema does.
    report.n_input = len(rows) + n_null
    report.notes.append(f"{len(frame)} arena-hard judgment rows → {len(rows) + n_null} games (records)")
    if not rows:
        raise OscarInputError("schema 'arena-hard': no game has a verdict")
    idx = np.array([r[0] for r in rows])
    games_frame = frame.iloc[idx].reset_index(drop=True).drop(columns=["games"])
    base_w = (pd.to_numeric(games_frame["weight"], errors="coerce").to_numpy(dtype=float)
              if "weight" in games_frame.columns else np.ones(len(rows)))
    games_frame["weight"] = base_w * np.array([r[5] for r in rows])
    if pid_col is not None:
        prompts = prompt_ids(games_frame, pid_col, report)
    else:
        # Both games of one judgment row judge the same prompt: keep them in one cluster.
        report.notes.append("no 'question_id'/'uid' column: each judgment row (two games) is its own prompt cluster")
        prompts = pd.Series([f"row-{i}" for i in idx], dtype=object)
    outcome = np.array([r[3] for r in rows], dtype=float), np.array([r[4] for r in rows], dtype=object)
    a = pd.Series([r[1] for r in rows], dtype=object).astype(str)
    b = pd.Series([r[2] for r in rows], dtype=object).astype(str)
    result = canonical_frame(games_frame, report, outcome, prompt=prompts, candidate_a=a, candidate_b=b, judge="judge")
    if strong != 1.0:
        report.notes.append(f"arena-hard '>>' verdicts weighted {strong:g} (strong_weight)")
    return result


# ---------------------------------------------------------------------------------------
# The registry: every convention, in one place (detection and error messages keep this order)
# ---------------------------------------------------------------------------------------

SCHEMAS: dict[str, Schema] = {schema.name: schema for schema in (
    Schema("xu", ("question_id", "model_a", "model_b", "judge_model", "judge_preferred_model"), _convert_xu,
           "Xu et al. (2026) judge release: verdict a/b/c/unknown", marker=("judge_preferred_model",)),
    Schema("arena", ("model_a", "model_b", "winner"), _convert_arena,
           "Chatbot Arena battles: winner model_a/model_b/tie/tie (bothbad)", marker=("winner", "model_a")),
    Schema("oscar", ("candidate_a", "candidate_b", "outcome"), _convert_oscar,
           "oscar_jax columns: prompt, candidate_a, candidate_b, judge, outcome"),
    Schema("evalica", ("left", "right", "winner"), _convert_evalica,
           "evalica: left, right, winner ∈ {left, right, tie}", marker=("winner",)),
    Schema("crowdkit", ("worker", "left", "right", "label"), _convert_crowdkit,
           "crowd-kit: worker, left, right, label = the winner's id", marker=("worker", "label")),
    Schema("alpacaeval", ("generator_1", "generator_2", "preference"), _convert_alpacaeval,
           "AlpacaEval annotations: preference 1 / 2 / 1.5 (legacy 0 = draw)", marker=("preference",)),
    Schema("arena-hard", ("model", "games"), _convert_arena_hard,
           "arena-hard-auto judgments: games[].score A>>B … B>>A, game 2 position-swapped", marker=("games",)),
)}


def _spelling(name) -> str:
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


def _near_miss(columns: list) -> str:
    """The closest schema, the columns that differ from it and the fix, in words."""
    if len(columns) == 1:
        only = str(columns[0])
        for sep, what in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe")):
            if sep in only:
                return (f"the one column {only!r} holds {what}-separated names, so the file is {what}-delimited; "
                        "save it comma-separated (e.g. pandas: pd.read_csv(path, sep=" + repr(sep) + ").to_csv(new, "
                        "index=False)), or as .tsv if it is tab-separated")
    spelled = {_spelling(c): str(c) for c in columns}
    best, best_key = None, (-1, 0)
    for schema in SCHEMAS.values():
        found = sum(r in columns or r in spelled for r in schema.required)
        key = (found, -len(schema.required))
        if key > best_key:
            best, best_key = schema, key
    if best is None or best_key[0] == 0:
        return "no schema's columns are present"
    renames = [f"{spelled[r]!r} → {r!r}" for r in best.required if r not in columns and r in spelled]
    absent = [r for r in best.required if r not in columns and r not in spelled]
    parts = [f"the closest schema is {best.name!r} ({best.description})"]
    if renames:
        parts.append("rename " + ", ".join(renames) + " (column names are matched exactly, in lower case)")
    if absent:
        parts.append(f"it also needs {', '.join(map(repr, absent))}, which the data lack")
    return "; ".join(parts)


def register_schema(schema: Schema) -> Schema:
    """Add an input convention of your own to :data:`SCHEMAS` (detection and ``schema=``)."""
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
            f"cannot recognise the input columns {sorted(map(str, cols))}; {_near_miss(list(frame.columns))} "
            f"(the schemas and their required columns: {wanted})"
        )
    raise OscarInputError(
        f"the input columns match several schemas {hits}; choose one with schema=... (CLI: --schema)"
    )
