"""``oscar bootstrap``: prompt bootstrap of a fit with percentile intervals (method §5)."""

from __future__ import annotations

from ..results.intervals import SCORE_SCALES
from ..runtime.multiprocess import add_process_arguments
from .common import add_data_arguments, add_output_arguments, emit, emit_json, problem_from_args

DESCRIPTIONS = {
    "bootstrap": (
        "Refits the model on prompt-bootstrap replicates (prompts resampled with replacement, as multinomial "
        "prompt weights, all replicates in one compiled batch, each started one Newton step from the full-data "
        "fit) and reports percentile intervals around the full-data estimates, P(best) and the rank distribution of every "
        "candidate. Replicates that fail a B.3 check are counted and excluded."
    ),
}


def add_arguments(parser, command: str):
    add_data_arguments(parser, model=True)
    parser.add_argument("--replicates", type=int, default=500, help="bootstrap replicates (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling and the random start (default 0)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="replicates per compiled call (bounds memory; default automatic)")
    add_scale_arguments(parser)
    add_output_arguments(parser)
    add_process_arguments(parser)


def add_scale_arguments(parser):
    """``--scale`` and ``--anchor`` for commands whose intervals come from draws (bootstrap, bayes)."""
    parser.add_argument("--scale", choices=list(SCORE_SCALES), default="logit",
                        help="score scale: logit (default; average-judge logit), elo (1000 + 173.72·logit) or "
                             "winrate (win rate %% against the --anchor candidate)")
    parser.add_argument("--anchor", default=None, metavar="NAME[=VALUE]",
                        help="scores relative to candidate NAME (at VALUE); the baseline of --scale winrate")


def run(args) -> int:
    problem = problem_from_args(args)
    import pandas as pd

    from ..bootstrap import bootstrap  # the numeric stack, once the data are known to be good
    from ..report.render import write_tables
    from ..report.text import bootstrap_report

    boot = bootstrap(problem, replicates=args.replicates, seed=args.seed, ci_prob=args.ci_prob,
                     chunk_size=args.chunk_size)
    payload = boot.to_dict(scale=args.scale, anchor=args.anchor)
    lb = boot.leaderboard(scale=args.scale, anchor=args.anchor)
    if args.out:
        write_tables(args.out, {"leaderboard": lb, "judges": boot.judges(),
                                "win_prob": boot.win_matrix(), "rank_distribution": boot.rank_distribution(),
                                "failures": pd.DataFrame([boot.batch.failure_counts()])}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(lb.to_csv(index=False))
    else:
        emit(bootstrap_report(boot, args.scale, args.anchor))
    return 0
