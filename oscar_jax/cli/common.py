"""Arguments and output helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..io.data import SCHEMAS
from ..io.filters import parse_filter, select_records
from ..results.jsonable import to_json
from ..runtime.validate import OscarInputError

MODELS_HELP = "j, j+p, j+l, j+f, bt+plf, davidson+plf, oscar (or e.g. j+p+l, oscar+c)"


def add_data_arguments(parser):
    parser.add_argument("data", metavar="DATA", help="judgments: .json (Xu et al.), .jsonl, .csv, .tsv or .parquet")
    parser.add_argument("--schema", choices=sorted(SCHEMAS), default=None,
                        help="input convention (default: detected from the columns)")
    parser.add_argument("--reference-judge", default=None, metavar="NAME",
                        help="judge with sensitivity fixed at 1 (exact name or unique substring; default: most records)")
    parser.add_argument("--family-map", default=None, metavar="FILE.json",
                        help="JSON object name → family overriding the default family rules")
    parser.add_argument("--covariate", action="append", default=[], metavar="COLUMN",
                        help="numeric record-level contrast column entering η per judge (repeatable); "
                             "included by models with the 'c' term, e.g. oscar+c")
    parser.add_argument("--encoding", default=None, metavar="NAME",
                        help="text encoding of CSV/TSV/JSON input (default utf-8; e.g. cp1252, latin-1, utf-16)")
    parser.add_argument("--bothbad", choices=["tie", "drop"], default="tie",
                        help="Arena 'tie (bothbad)': score as ½ (default) or drop (counted)")
    parser.add_argument("--baseline", default=None, metavar="NAME",
                        help="arena-hard files: the baseline model shown first in game 1 (v0.1 rows do not "
                             "store it; e.g. gpt-4-0314)")
    parser.add_argument("--strong-weight", type=float, default=None, metavar="W",
                        help="arena-hard files: weight of A>>B / B>>A verdicts (default 1; arena-hard-auto uses 3)")
    parser.add_argument("--responses", action="append", default=None, metavar="PATH",
                        help="response lengths for the length term: a FastChat model_answer directory, answer "
                             ".jsonl files, or a CSV/JSONL/Parquet table (prompt, candidate, text or length); "
                             "joined by (prompt, candidate), lengths in Unicode characters (repeatable)")
    parser.add_argument("--turn", type=int, default=1, metavar="N",
                        help="answer turn of FastChat answer files to measure (default 1, the first answer)")
    parser.add_argument("--missing-responses", choices=["error", "drop"], default="error",
                        help="a judgment without a response of either candidate: error (default) or drop (counted)")
    parser.add_argument("--exclude-tie", action="store_true",
                        help="drop ties of both kinds before fitting (default: a tie scores ½)")
    parser.add_argument("--filter", action="append", default=[], metavar="COLUMN=VALUE",
                        help="keep only records whose COLUMN equals VALUE (repeatable), e.g. language=English")
    parser.add_argument("--category", default=None, metavar="VALUE",
                        help="FastChat's --category: short for --filter category=VALUE")


def add_output_arguments(parser, formats=("table", "json", "csv")):
    parser.add_argument("--format", choices=list(formats), default=formats[0], help="output format")
    parser.add_argument("--out", default=None, metavar="DIR", help="also write CSV tables and result.json here")


def load_family_map(path):
    if path is None:
        return None
    p = Path(path)
    if not p.exists():
        raise OscarInputError(f"--family-map file {path!r} does not exist")
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise OscarInputError(f"--family-map {path!r} is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise OscarInputError(f"--family-map {path!r} must hold a JSON object mapping names to families")
    return obj


def design_from_args(args):
    """The Design a command works on, through the arena-hard reader when its options are given."""
    from ..model.design import build_design
    from ..fit import as_design

    baseline, strong = getattr(args, "baseline", None), getattr(args, "strong_weight", None)
    responses = dict(responses=getattr(args, "responses", None), turn=getattr(args, "turn", 1),
                     missing_responses=getattr(args, "missing_responses", "error"))
    filters = [parse_filter(f) for f in getattr(args, "filter", [])]
    if getattr(args, "category", None) is not None:
        filters.append(("category", args.category))
    if (filters or getattr(args, "exclude_tie", False)) and baseline is None and strong is None:
        from ..io.data import load_judgments

        try:
            frame, report = load_judgments(args.data, schema=args.schema, bothbad=args.bothbad,
                                           keep_columns=tuple(dict.fromkeys([*args.covariate, *(c for c, _ in filters)])),
                                           encoding=getattr(args, "encoding", None), **responses)
        except OscarInputError as exc:
            missing = [c for c, _ in filters if c not in args.covariate and f"column {c!r} is not" in str(exc)]
            if missing:  # the loader speaks of covariates; name the flag the user gave
                raise OscarInputError(str(exc).replace("covariate column", "--filter/--category column", 1)) from None
            raise
        frame = select_records(frame, report, exclude_tie=args.exclude_tie, filters=filters)
        return build_design(frame, reference_judge=args.reference_judge,
                            family_map=load_family_map(args.family_map), covariates=tuple(args.covariate),
                            report=report)
    if baseline is None and strong is None:
        return as_design(args.data, schema=args.schema, reference_judge=args.reference_judge,
                         family_map=load_family_map(args.family_map), covariates=tuple(args.covariate),
                         bothbad=args.bothbad, encoding=getattr(args, "encoding", None), **responses)
    if args.schema not in (None, "arena-hard"):
        raise OscarInputError(f"--baseline and --strong-weight apply to arena-hard files only, not --schema {args.schema}")
    from ..io.schemas import load_arena_hard

    frame, report = load_arena_hard(args.data, baseline=baseline, strong_weight=strong,
                                    keep_columns=tuple(dict.fromkeys([*args.covariate, *(c for c, _ in filters)])))
    if filters or getattr(args, "exclude_tie", False):
        frame = select_records(frame, report, exclude_tie=args.exclude_tie, filters=filters)
    if responses["responses"] is not None:
        from ..io.responses import attach_responses

        frame = attach_responses(frame, report, responses.pop("responses"), **responses)
    return build_design(frame, reference_judge=args.reference_judge, family_map=load_family_map(args.family_map),
                        covariates=tuple(args.covariate), report=report)


def emit(text: str):
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def emit_json(obj):
    emit(to_json(obj))
