"""``oscar report``: one self-contained HTML page of a fit (leaderboard, judges, plots, checks)."""

from __future__ import annotations

import shlex
import sys

from ..fit import fit
from ..runtime.validate import OscarInputError, check_ci_prob
from .common import MODELS_HELP, add_data_arguments, problem_from_args

NAME = "report"
HELP = "write a self-contained HTML report (leaderboard, judges, plots, checks) to share"
DESCRIPTION = (
    "Fit a model and write one HTML file with the leaderboard (Elo and average-judge logit with "
    "intervals, Rank (UB), votes), the judge table, the win-probability heatmap, the 1 − D² "
    "attenuation plot, the data notes and checks, and the command and package versions. The file "
    "uses no network resources (inline CSS, figures as inline PNG), so it can be mailed or published "
    "as it is."
)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--ci", choices=["sandwich", "model"], default="sandwich",
                        help="interval source: prompt-cluster sandwich (default) or model-based")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random second start (default 0)")
    parser.add_argument("-o", "--output", default="report.html", metavar="FILE.html",
                        help="where to write the page (default report.html)")


def _command_line(args) -> str:
    argv = getattr(args, "_argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["oscar", *map(str, argv)])


def run(args) -> int:
    from ..report.html import write_report

    ci_prob = check_ci_prob(args.ci_prob)
    if not str(args.output).lower().endswith((".html", ".htm")):
        raise OscarInputError(f"-o {args.output!r}: the report is an HTML page; give a name ending in .html")
    problem = problem_from_args(args)
    result = fit(problem, seed=args.seed, ci_prob=ci_prob)
    from ..report.advice import small_data_advice, strong_weight_note

    notes = small_data_advice(result, ci=args.ci, ridge=args.ridge, seed=args.seed)
    notes += [n for n in [strong_weight_note(args.strong_weight)] if n]
    path = write_report(args.output, result, ci=args.ci, command=_command_line(args), ridge=args.ridge,
                        seed=args.seed, notes=notes)
    print(f"oscar report: wrote {path} ({path.stat().st_size / 1024:.0f} KB); open it in a browser", file=sys.stderr)
    return 0
