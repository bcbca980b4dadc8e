"""``oscar fit``: penalized fit with cluster-robust intervals."""

from __future__ import annotations

from ..fit import fit
from ..report import write_tables
from ..summaries import fit_report
from ._common import MODELS_HELP, add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

NAME = "fit"
HELP = "fit a model and print the leaderboard, judge table and win probabilities"


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--ci", choices=["sandwich", "model"], default="sandwich",
                        help="interval source: prompt-cluster sandwich (default) or model-based")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random second start (default 0)")
    add_output_arguments(parser)


def run(args) -> int:
    design = design_from_args(args)
    result = fit(design, args.model, ridge=args.ridge, seed=args.seed, ci_prob=args.ci_prob)
    payload = result.to_dict(args.ci)
    if args.out:
        write_tables(args.out, {"leaderboard": result.leaderboard(args.ci), "judges": result.judges(args.ci),
                                "win_prob": result.win_matrix(args.ci)}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(result.leaderboard(args.ci).to_csv(index=False))
    else:
        emit(fit_report(result, ci=args.ci))
    return 0
