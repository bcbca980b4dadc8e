"""``oscar plan``: which judgments to buy next (judge-aware adaptive design).

Options, the pool and the data are read and checked before :mod:`oscar_jax.plan` (which
fits, so loads JAX) is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..model.plan_request import (EXPLORE, OUTPUT_SUFFIXES, TARGET_HELP, check_budget, check_explore, check_model,
                                  parse_costs, parse_target)
from ..runtime.validate import OscarInputError, check_ci_prob
from .common import MODELS_HELP, add_ci_prob, add_data_arguments, add_ridge, emit, emit_json, problem_from_args, seed_arg

DESCRIPTIONS = {
    "plan": (
        "Fit the data, then choose the batch of judgments (prompt, candidate in slot A, candidate in slot B, "
        "judge) that most reduces the expected uncertainty of --target per unit cost, from each candidate "
        "judgment's expected Fisher information under the fitted model and the expected prompt-cluster "
        "sandwich after the batch. Writes the batch in the package's input schema (outcome blank, most "
        "valuable first) and prints the expected P(correct top-1), Kendall τ and interval widths before and "
        "after."
    ),
}


def add_arguments(parser, command: str):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model to plan with: {MODELS_HELP} (default oscar; "
                                                         "not davidson)")
    parser.add_argument("--budget", required=True, metavar="B",
                        help="total cost of the batch: judgments, or cost units with --judges")
    parser.add_argument("--target", default="top1", help=f"what to make certain: {TARGET_HELP} (default top1)")
    parser.add_argument("--judges", default=None, metavar="NAME=COST,…",
                        help="cost of one judgment by judge (exact name or unique substring); others cost 1")
    parser.add_argument("--prompts", default=None, metavar="POOL",
                        help="where new judgments go: a file of prompt ids (column prompt or question_id), or of "
                             "judgments (prompt, candidate_a, candidate_b, judge) to choose among; default: new "
                             "prompt ids new-1, … for you to fill")
    parser.add_argument("--seed", type=seed_arg, default=0, help="seed of the fit, tie-breaks, placement and Monte Carlo "
                                                            "(default 0)")
    parser.add_argument("--explore", type=float, default=EXPLORE, metavar="SHARE",
                        help=f"share of the budget spent at random over pairs, orders and judges, so that no "
                             f"judge is starved (default {EXPLORE}; 0: purely greedy)")
    add_ci_prob(parser)
    add_ridge(parser, "ridge λ of the fit")
    parser.add_argument("--out", dest="plan_out", default=None, metavar="FILE",
                        help="write the batch here (.csv or .jsonl), readable by oscar fit once outcomes are filled")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="summary format on stdout")


def _check_out(path) -> Path | None:
    if path is None:
        return None
    p = Path(path)
    if p.suffix.lower() not in OUTPUT_SUFFIXES:
        raise OscarInputError(f"--out {str(p)!r}: give a file name ending in .csv or .jsonl, e.g. --out next.csv")
    if p.is_dir():
        raise OscarInputError(f"--out {str(p)!r} is a folder; give a file name, e.g. {str(p / 'next.csv')!r}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OscarInputError(f"--out {str(p)!r}: folder {str(parent)!r} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OscarInputError(f"--out {str(p)!r}: no permission to write in {str(parent)!r}")
    return p


def run(args) -> int:
    # Every option, then the pool and the data, are checked before anything is fitted.
    budget = check_budget(args.budget)
    check_model(args.model)
    explore = check_explore(args.explore)
    target = parse_target(args.target)
    costs = parse_costs(args.judges)
    ci_prob = check_ci_prob(args.ci_prob)
    out = _check_out(args.plan_out)
    if args.prompts is not None and not Path(args.prompts).exists():
        raise OscarInputError(f"--prompts file {args.prompts!r} does not exist")
    from ..io.pool import read_pool

    pool = None if args.prompts is None else read_pool(args.prompts, args.encoding)
    problem = problem_from_args(args)
    from ..plan import plan
    from ..report.plan_text import plan_text

    result = plan(problem, budget=budget, target=target, costs=costs, prompts=pool, seed=args.seed, explore=explore,
                  ci_prob=ci_prob)
    if out is not None:
        result.write(out)
    if args.format == "json":
        payload = result.to_dict()
        payload["out"] = None if out is None else str(out)
        emit_json(payload)
    else:
        emit(plan_text(result.summary, result.batch, out))
    return 0
