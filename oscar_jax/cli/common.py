"""Arguments and output helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..io.schemas import SCHEMAS
from ..model.problem import as_design, prepare
from ..results.jsonable import to_json
from ..runtime.validate import OscarInputError

MODELS_HELP = "j, j+p, j+l, j+f, bt+plf, davidson+plf, oscar (or e.g. j+p+l, oscar+c)"


def add_data_arguments(parser, *, model: bool = False):
    """DATA and the options that read and select it (``prepare``'s keywords); ``model``: also --model."""
    parser.add_argument("data", metavar="DATA", help="judgments: .json (Xu et al.), .jsonl, .csv, .tsv or .parquet")
    if model:
        parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
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


def setup_from_args(args) -> dict:
    """The set-up keywords of :func:`oscar_jax.prepare` that the data arguments give."""
    filters = [*args.filter, *([("category", args.category)] if args.category is not None else [])]
    return dict(schema=args.schema, reference_judge=args.reference_judge, family_map=load_family_map(args.family_map),
                covariates=tuple(args.covariate), bothbad=args.bothbad, baseline=args.baseline,
                strong_weight=args.strong_weight, encoding=args.encoding, responses=args.responses, turn=args.turn,
                missing_responses=args.missing_responses, filters=filters, exclude_ties=args.exclude_tie)


def design_from_args(args):
    """The Design a command works on (the records are read and checked before JAX loads)."""
    return as_design(args.data, **setup_from_args(args))


def problem_from_args(args):
    """The Problem of ``--model`` (and ``--ridge``) on the data (read and checked before JAX loads)."""
    return prepare(args.data, args.model, ridge=getattr(args, "ridge", None), **setup_from_args(args))


def emit(text: str):
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def emit_json(obj):
    emit(to_json(obj))
