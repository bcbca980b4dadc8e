"""``oscar simulate``: the Section 7 simulation study (Appendix G), vmapped."""

from __future__ import annotations

import sys
from pathlib import Path

from ..runtime.multiprocess import add_process_arguments
from ..runtime.validate import OscarInputError
from .common import seed_arg, emit, emit_json

DESCRIPTIONS = {
    "simulate": (
        "Generates replicates of the Appendix G design (8 candidates, 5 judges with position, length and "
        "family biases scaled by c, display order tied to verbosity, within-prompt dependence ρ), fits each "
        "method to all replicates of a setting in one compiled batch, and reports per setting and method "
        "the q RMSE, κ RMSE, Kendall τ_b, top-1 recovery and 95% coverage of q (prompt-cluster and "
        "model-based), with Monte Carlo SEs and t intervals, plus paired method differences (G.3). "
        "Replicates whose fit did not converge or was not identified (Appendix B.3) are counted and left out."
    ),
}


def _numbers(text: str, what: str, kind=float) -> list:
    """A comma-separated list of ``kind`` (int or float) from an option's text."""
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        example = "integers, e.g. 1000,2500" if kind is int else "numbers, e.g. 0,1"
        raise OscarInputError(f"{what} must be comma-separated {example}; got {text!r}") from None
    if not values:
        raise OscarInputError(f"{what} is empty")
    return values


def _methods(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    if not values:
        raise OscarInputError("--methods is empty")
    return values


def add_arguments(parser, command: str):
    parser.add_argument("--n", default=None, metavar="N,N,...",
                        help="judgment counts, multiples of the 5 judges (default 1000,2500,5000,10000)")
    parser.add_argument("--reps", type=int, default=100, help="replicates per setting (default 100)")
    parser.add_argument("--methods", default=None,
                        help="models to fit (default j,j+p,j+l,j+f,oscar; any j+... combination)")
    parser.add_argument("--seed", type=seed_arg, default=0, help="base seed (default 0)")
    parser.add_argument("--c", default="1", metavar="C,...", help="bias multiplier(s) c (default 1)")
    parser.add_argument("--rho", default="0.6", metavar="RHO,...", help="within-prompt dependence ρ (default 0.6)")
    parser.add_argument("--controls", action="store_true",
                        help="also run the Table G2 controls (c, ρ) = (0, 0.6), (1, 0), (0, 0) at --control-n")
    parser.add_argument("--control-n", type=int, default=2500, help="N of the controls (default 2500)")
    parser.add_argument("--control-methods", default="j,oscar",
                        help="methods fitted in the controls (default j,oscar, as in Table G2)")
    parser.add_argument("--compare", action="append", default=None, metavar="A:B",
                        help="paired difference A − B to report (repeatable; default oscar against each other method)")
    parser.add_argument("--level", type=float, default=0.95, help="Monte Carlo interval level (default 0.95)")
    parser.add_argument("--chunk", type=int, default=None, help="replicates per compiled batch (default: by memory)")
    parser.add_argument("--pad-ratio", type=float, default=2.5,
                        help="fit an N at a larger N of the sweep within this factor (zero-weight padding, same "
                             "estimates up to rounding) to compile fewer programs (default 2.5; 1 = no padding)")
    parser.add_argument("--no-compile-ahead", action="store_true",
                        help="compile each program when needed instead of one step ahead in a thread")
    parser.add_argument("--compilation-cache", default=None, metavar="DIR",
                        help="persistent XLA compilation cache: later runs skip compiling")
    parser.add_argument("--format", choices=["table", "markdown", "json", "csv"], default="table",
                        help="stdout format (json: a list of summary rows)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write summary/per-replicate/difference CSVs, result.json, summary.md and PNG plots")
    add_process_arguments(parser)


def _settings(args, ns: list[int], methods: list[str]) -> tuple[list, dict | None]:
    from ..sweep import TABLE_G2_CONTROLS, Setting, settings_grid

    settings = settings_grid(ns, _numbers(args.c, "--c"), _numbers(args.rho, "--rho"))
    restrict = None
    if args.controls:
        controls = [Setting(args.control_n, c, r) for c, r in TABLE_G2_CONTROLS]
        controls = [s for s in controls if s not in settings]
        settings = settings + controls
        control_methods = _methods(args.control_methods)
        unknown = [m for m in control_methods if m not in methods]
        if unknown:
            raise OscarInputError(f"--control-methods {unknown} are not among --methods {methods}")
        restrict = {m: [s for s in settings if s not in controls] + (controls if m in control_methods else [])
                    for m in methods}
    return settings, restrict


def _comparisons(args, methods: list) -> list[tuple[str, str]]:
    """The --compare pairs as display names, checked against ``methods`` before the sweep runs."""
    from ..sweep.settings import method_spec

    names = [method_spec(m).name for m in methods]
    if not args.compare:
        return [("OSCAR", m) for m in names if m != "OSCAR"] if "OSCAR" in names else []
    pairs = []
    for text in args.compare:
        if text.count(":") != 1:
            raise OscarInputError(f"--compare takes A:B (e.g. oscar:j), got {text!r}")
        pair = []
        for part in text.split(":"):
            try:
                name = method_spec(part.strip()).name
            except (OscarInputError, ValueError):
                name = None
            if name not in names:
                raise OscarInputError(f"--compare {text!r}: {part.strip()!r} is not among the methods run "
                                      f"({', '.join(names)}); name two of them, e.g. --compare oscar:j")
            pair.append(name)
        pairs.append(tuple(pair))
    return pairs


def _check_options(args) -> None:
    """Every option that is not the sweep's own argument, checked before minutes of sweeping."""
    if not 0.0 < args.level < 1.0:
        raise OscarInputError(f"--level must lie strictly between 0 and 1, got {args.level}; e.g. --level 0.95")
    if args.chunk is not None and args.chunk < 1:
        raise OscarInputError(f"--chunk must be an integer ≥ 1, got {args.chunk}")
    if args.control_n < 1:
        raise OscarInputError(f"--control-n must be a positive multiple of the judges, got {args.control_n}")


def run(args) -> int:
    _check_options(args)
    if args.compilation_cache:
        import jax

        jax.config.update("jax_compilation_cache_dir", args.compilation_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    from ..report.render import csv_text, fill, render_table, write_tables
    from ..sweep import DEFAULT_METHODS, DEFAULT_NS, sweep

    ns = list(DEFAULT_NS) if args.n is None else _numbers(args.n, "--n", int)
    methods = list(DEFAULT_METHODS) if args.methods is None else _methods(args.methods)
    settings, restrict = _settings(args, ns, methods)
    pairs = _comparisons(args, methods)
    result = sweep(reps=args.reps, methods=methods, seed=args.seed, settings=settings, method_settings=restrict,
                   chunk=args.chunk, pad_ratio=args.pad_ratio, compile_ahead=not args.no_compile_ahead)
    # Rows, not DataFrames: the text table, JSON and Markdown need no pandas (0.23–0.27 CPU-s
    # of a warm sweep's ~1.2); CSV and --out write through it.
    table = result.table_rows(args.level)
    diffs = [result.difference_rows(a, b, args.level) for a, b in pairs]
    failures = result.failure_rows()
    if args.out:
        import pandas as pd

        tables = {"summary": pd.DataFrame(table), "per_replicate": result.per_replicate(),
                  "failures": pd.DataFrame(failures), "timings": result.timings}
        payload = result.to_dict(args.level)
        payload["differences"] = [row for d in diffs for row in d]
        if diffs:
            tables["differences"] = pd.DataFrame(payload["differences"])
        write_tables(args.out, tables, payload)
        (Path(args.out) / "summary.md").write_text(result.to_markdown(args.level) + "\n", encoding="utf-8")
        result.plot(args.out, args.level)
    n_failed = sum(r["n_failed"] for r in failures)
    if n_failed:
        detail = "; ".join(f"N={r['n']} c={r['c']:g} ρ={r['rho']:g} {r['method']}: {r['n_failed']}"
                           for r in failures if r["n_failed"] > 0)
        print(f"warning: {n_failed} fit(s) did not converge or were not identified (Appendix B.3) and were left out "
              f"({detail}); more prompts per setting (--n) make this rarer", file=sys.stderr)
    if args.format == "json":
        emit_json(table)
    elif args.format == "csv":
        import pandas as pd

        emit(csv_text(pd.DataFrame(table)))
    elif args.format == "markdown":
        emit(result.to_markdown(args.level))
    else:
        emit(render_table(table, [("n", "N", "d"), ("c", "c", "g"), ("rho", "ρ", "g"), ("method", "method", ""),
                                  ("n_ok", "ok", "d"), ("q_rmse", "q RMSE", ".4f"),
                                  ("kappa_rmse", "κ RMSE", ".4f"), ("kendall_tau", "τ_b", ".3f"),
                                  ("top1", "top-1", ".2f"), ("coverage_cluster", "cov cl", ".3f"),
                                  ("coverage_model", "cov MB", ".3f")]))
        for d in diffs:
            emit("")
            emit(fill(f"paired differences {d[0]['a']} − {d[0]['b']} over replicates where both fits passed "
                      f"their checks ({args.level:.0%} Monte Carlo interval; top-1: Newcombe's interval for paired "
                      "proportions)"))
            emit(render_table(d, [("n", "N", "d"), ("c", "c", "g"), ("rho", "ρ", "g"), ("metric", "metric", ""),
                                  ("n_pairs", "pairs", "d"), ("diff", "diff", "+.4f"), ("mcse", "MC SE", ".4f"),
                                  ("lo", "lo", "+.4f"), ("hi", "hi", "+.4f")]))
    return 0
