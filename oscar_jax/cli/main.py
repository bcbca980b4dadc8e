"""``oscar`` command line: one subcommand per module in :mod:`oscar_jax.cli`.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``; modules are discovered, so adding a command touches no other file.
Exit status: 0 success, 2 bad input (the message names the column/value and the fix),
1 any other failure.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings

from .. import __version__  # (importing oscar_jax enabled the persistent compile cache)
from ..report.render import TABLE_WIDTH, table_width
from ..runtime.validate import OscarInputError

__all__ = ["main", "build_parser"]


def _command_modules():
    from .. import cli as commands

    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    order = {"fit": 0, "demo": 1}
    return sorted(mods, key=lambda m: (order.get(m.NAME, 9), m.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oscar",
        description="Judge-aware ranking of language models from LLM-judge comparisons (OSCAR).",
    )
    parser.add_argument("--version", action="version", version=f"oscar_jax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        if "--wide" not in p._option_string_actions:
            p.add_argument("--wide", action="store_true",
                           help="print tables at full width (default: fit 100 columns, shortening names)")
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the exact command, for reports
    if not getattr(args, "command", None):
        parser.print_help()
        return 2

    def show(message, category, filename, lineno, file=None, line=None):
        from ..runtime.xla_cache import drop_unreadable_entry

        if drop_unreadable_entry(str(message)):  # warn once, then compile and cache afresh
            message = f"{message} (entry removed; it is recompiled and cached again)"
        print(f"warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    from ..fit import OscarNoteWarning

    warnings.filterwarnings("ignore", category=OscarNoteWarning)  # the commands print the notes themselves
    try:
        # Output folders and settings are checked before anything is computed.
        from ..runtime.batching import workers_setting
        from ..runtime.outputs import check_output_dir

        workers_setting()

        for attr, option in (("out", "--out"), ("plots", "--plots")):
            if getattr(args, attr, None):
                check_output_dir(getattr(args, attr), option)
    except OscarInputError as exc:
        print(f"oscar {args.command}: error: {exc}", file=sys.stderr)
        return 2
    try:
        from ..runtime.program_cache import compile_ahead

        with table_width(None if getattr(args, "wide", False) else TABLE_WIDTH), compile_ahead():
            from ..runtime.multiprocess import cli_start

            launched = cli_start(args, sys.argv[1:] if argv is None else argv)
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
