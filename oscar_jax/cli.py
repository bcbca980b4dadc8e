"""``oscar`` command line: one subcommand per module in :mod:`oscar_jax.commands`.

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

from . import __version__
from .validate import OscarInputError

__all__ = ["main", "build_parser"]


def _command_modules():
    from . import commands

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
        p.set_defaults(_run=mod.run)
    return parser


def _enable_compilation_cache():
    """Persist compiled XLA programs across CLI runs (the first fit of a shape compiles).

    ``OSCAR_JAX_CACHE_DIR`` chooses the folder (default ``~/.cache/oscar_jax/xla``);
    ``OSCAR_JAX_CACHE_DIR=off`` disables it.
    """
    import os
    from pathlib import Path

    import jax

    where = os.environ.get("OSCAR_JAX_CACHE_DIR", str(Path.home() / ".cache" / "oscar_jax" / "xla"))
    if where.lower() in ("off", "0", "none", ""):
        return
    try:
        Path(where).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", where)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    except (OSError, AttributeError):  # read-only home or an older jax: just compile
        pass


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    _enable_compilation_cache()
    try:
        from .multiprocess import cli_start

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
