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
from ..runtime.x64 import return_freed_memory

__all__ = ["COMMANDS", "EXAMPLES", "build_parser", "main"]

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
    "plan": "choose the next batch of judgments to buy (pairs, orders, judges) for a target: top-1, ranking, pairs",
}


# command → examples, shown first in `oscar COMMAND --help` (DATA: any judgments file; the
# package ships one: oscar_jax/io/examples/arena_battles.csv).
EXAMPLES = {
    "fit": ["oscar fit battles.csv                                  # OSCAR, prompt-cluster intervals",
            "oscar fit battles.csv --model j+p --scale elo          # Arena-style Elo board",
            "oscar fit battles.csv --format fastchat --anchor fastchat > leaderboard.csv"],
    "demo": ["oscar demo                                             # simulated data, no download",
             "oscar demo --n-prompts 500 --seed 1                    # smaller and faster"],
    "audit": ['oscar audit audit.csv --attribute advertiser --reference "Retailer A"',
              'oscar audit audit.csv --attribute advertiser --reference "Retailer A" --no-bayes --out audit/'],
    "bayes": ["oscar bayes battles.csv --model j+p --seed 0             # NUTS, 4 chains",
              "oscar bayes battles.csv --method svi --no-prompt-effect  # fast approximation"],
    "bootstrap": ["oscar bootstrap battles.csv --replicates 500 --seed 0",
                  "oscar bootstrap battles.csv --model j+p --scale elo --replicates 200 --processes 2"],
    "compare": ["oscar compare battles.csv --models j,j+p,oscar --folds 3 --seed 0",
                "oscar compare battles.csv --models j,j+p --paired-bootstrap 200"],
    "human": ["oscar human judgments.jsonl --votes human_judgments.jsonl",
              "oscar human judgments.jsonl --votes human_judgments.jsonl --models j,j+p --responses model_answer/"],
    "report": ["oscar report battles.csv -o report.html",
               "oscar report battles.csv --model j+p -o board.html"],
    "simulate": ["oscar simulate --n 1000,2500 --reps 20 --methods j,oscar --seed 0",
                 "oscar simulate --n 1000,2500,5000,10000 --reps 100 --seed 0 --out sim/"],
    "plan": ["oscar plan battles.csv --budget 2000 --target top1 --out next.csv   # which judgments to buy",
             "oscar plan battles.csv --budget 500 --target pairs:gpt-4,claude-v1 --judges gpt-4-turbo=10 --out next.csv",
             "oscar plan battles.csv --budget 1000 --target ranking --prompts pool.jsonl --out next.csv"],
}


def _description(name: str, paragraph: str) -> str:
    """Examples first, then the command's paragraph wrapped to the terminal (argparse keeps it as is)."""
    import shutil
    import textwrap

    width = min(shutil.get_terminal_size((100, 24)).columns, 100) - 2
    lines = ["examples:"] + [f"  {e}" for e in EXAMPLES[name]] + [""]
    return "\n".join(lines) + "\n" + textwrap.fill(paragraph, width)


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
    elif name == "plan":
        from . import plan as module
    else:
        raise KeyError(name)
    return module


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``oscar`` parser, with the arguments of ``command`` (None: of no command)."""
    parser = argparse.ArgumentParser(
        prog="oscar", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Judge-aware ranking of language models from LLM-judge comparisons (OSCAR).",
        epilog="examples:\n  oscar demo\n  oscar fit oscar_jax/io/examples/arena_battles.csv --model j+p --scale elo\n"
               "  oscar report battles.csv -o report.html\n\n'oscar COMMAND --help' shows a command's options and "
               "examples.",
    )
    parser.add_argument("--version", action="version", version=f"oscar_jax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=summary)
            continue
        module = _command(name)
        p = sub.add_parser(name, help=summary, description=_description(name, module.DESCRIPTIONS[name]),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
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

    return_freed_memory()  # before any data are read (runtime.x64)
    warnings.showwarning = show
    warnings.filterwarnings("ignore", category=OscarNoteWarning)  # the commands print the notes themselves
    from ..runtime.batching import compile_ahead, workers_setting
    from ..runtime.multiprocess import cli_start
    from ..runtime.progress import compile_notices

    compile_notices(True)  # a cold command says at once that it is compiling, not silent for half a minute
    from ..runtime.validate import check_output_dir, data_file_suffix

    try:  # settings, output folders and the data path are checked before anything loads or is computed
        workers_setting()
        for attr, option in (("out", "--out"), ("plots", "--plots")):
            if getattr(args, attr, None):
                check_output_dir(getattr(args, attr), option)
        if getattr(args, "data", None):
            data_file_suffix(args.data)
    except OscarInputError as exc:
        print(f"oscar {args.command}: error: {exc}", file=sys.stderr)
        return 2
    from ..report.render import TABLE_WIDTH, table_width

    try:
        with table_width(None if getattr(args, "wide", False) else TABLE_WIDTH), compile_ahead():
            launched = cli_start(args, argv)
            if launched is not None:
                return launched
            return _run_staged(args)
    except OscarInputError as exc:
        print(f"oscar {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk or a folder removed mid-run: the user's to fix, not a traceback
        from ..runtime.validate import os_error_message

        print(f"oscar {args.command}: error: could not write the output: {os_error_message(exc)}; free space or "
              "choose another --out (no file of this run was left in it)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _run_staged(args) -> int:
    """Run the command with its --out and --plots folders staged (:func:`~oscar_jax.runtime.validate.staged_outputs`):
    a run leaves all its files or none."""
    from contextlib import ExitStack

    from ..runtime.validate import staged_outputs

    with ExitStack() as stack:
        for attr in ("out", "plots"):
            folder = getattr(args, attr, None)
            if folder:
                setattr(args, f"{attr}_shown", folder)
                setattr(args, attr, str(stack.enter_context(staged_outputs(folder))))
        return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
