"""``oscar`` command line: parse → call the library → render.

The commands are listed below, in the order ``oscar --help`` shows them. A command module
defines ``DESCRIPTIONS`` (command → paragraph), ``add_arguments(parser, command)`` and
``run(args) -> int`` (``args.command`` names the command) for the one or two commands it
holds; only the chosen command's module is imported, and command modules import the
numeric stack inside ``run``, after the data are read and checked, so ``oscar --help``,
``oscar CMD --help``, argument errors and bad input never start JAX. Exit status: 0
success, 2 bad input (the message names the column/value and the fix), 1 any other
failure.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from .. import __version__  # (importing oscar_jax configured float64 and the persistent compile cache)
from ..runtime.validate import OscarInputError, OscarNoteWarning

__all__ = ["COMMANDS", "build_parser", "main"]

# name → what it does (the one line of `oscar --help`)
COMMANDS = {
    "fit": "fit a model and print the leaderboard, judge table and win probabilities",
    "demo": "simulate the paper's Appendix G design, fit J and OSCAR, and compare with the truth",
    "audit": "counterfactual bias audit: decision rates, consistency, paired tests and Bayesian effects",
    "bayes": "Bayesian fit (NUTS): leaderboard with credible intervals, P(best), judge sensitivities",
    "bootstrap": "prompt bootstrap: percentile CIs for scores, γ, κ, β, D, q_ij and rank distributions",
    "compare": "held-out log loss of several models on identical prompt-cluster folds (paper Table 1, E2)",
    "human": "compare LLM-judge rankings with human votes: Spearman, held-out human-vote log loss, bootstrap CIs",
    "report": "write a self-contained HTML report (leaderboard, judges, plots, checks) to share",
    "simulate": "run the paper's simulation study (Section 7): RMSE, coverage and ranking recovery against N",
}


def _command(name: str):
    """The module holding one command, imported now (and only this one)."""
    if name in ("fit", "report"):
        from . import fit as module
    elif name in ("compare", "human"):
        from . import heldout as module
    elif name == "demo":
        from . import demo as module
    elif name == "audit":
        from . import audit as module
    elif name == "bayes":
        from . import bayes as module
    elif name == "bootstrap":
        from . import bootstrap as module
    elif name == "simulate":
        from . import simulate as module
    else:
        raise KeyError(name)
    return module


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``oscar`` parser, with the arguments of ``command`` (None: of no command)."""
    parser = argparse.ArgumentParser(
        prog="oscar",
        description="Judge-aware ranking of language models from LLM-judge comparisons (OSCAR).",
    )
    parser.add_argument("--version", action="version", version=f"oscar_jax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=summary)
            continue
        module = _command(name)
        p = sub.add_parser(name, help=summary, description=module.DESCRIPTIONS[name])
        module.add_arguments(p, name)
        if "--wide" not in p._option_string_actions:
            p.add_argument("--wide", action="store_true",
                           help="print tables at full width (default: fit 100 columns, shortening names)")
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The only options before the command take no value, so the first other word names it.
    chosen = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(chosen if chosen in COMMANDS else None)
    args = parser.parse_args(argv)
    args._argv = argv  # the exact command, for reports
    if not getattr(args, "command", None):
        parser.print_help()
        return 2

    def show(message, category, filename, lineno, file=None, line=None):
        from ..runtime.cache import drop_unreadable_entry

        if drop_unreadable_entry(str(message)):  # warn once, then compile and cache afresh
            message = f"{message} (entry removed; it is recompiled and cached again)"
        print(f"warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    warnings.filterwarnings("ignore", category=OscarNoteWarning)  # the commands print the notes themselves
    from ..runtime.batching import compile_ahead, workers_setting
    from ..runtime.multiprocess import cli_start
    from ..runtime.validate import check_output_dir

    try:  # output folders and settings are checked before anything is computed
        workers_setting()
        for attr, option in (("out", "--out"), ("plots", "--plots")):
            if getattr(args, attr, None):
                check_output_dir(getattr(args, attr), option)
    except OscarInputError as exc:
        print(f"oscar {args.command}: error: {exc}", file=sys.stderr)
        return 2
    from ..report.render import TABLE_WIDTH, table_width

    try:
        with table_width(None if getattr(args, "wide", False) else TABLE_WIDTH), compile_ahead():
            launched = cli_start(args, argv)
            if launched is not None:
                return launched
            return int(args._run(args) or 0)
    except OscarInputError as exc:
        print(f"oscar {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
