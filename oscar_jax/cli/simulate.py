"""``oscar simulate``: the Section 7 simulation study (Appendix G), vmapped."""

from __future__ import annotations

import sys
from pathlib import Path

from ..runtime.multiprocess import add_process_arguments
from ..runtime.validate import OscarInputError
from .common import emit, emit_json

DESCRIPTIONS = {
    "simulate": (
        "Generates replicates of the Appendix G design (8 candidates, 5 judges with position, length and "
        "family biases scaled by c, display order tied to verbosity, within-prompt dependence ρ), fits each "
        "method to all replicates of a setting in one compiled batch, and reports per setting and method "
        "the q RMSE, κ RMSE, Kendall τ_b, top-1 recovery and 95% coverage of q (prompt-cluster and "
        "model-based), with Monte Carlo SEs and t intervals, plus paired method differences (G.3). "
        "Replicates whose fit fails an Appendix B.3 check are counted and left out."
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
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
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


def _comparisons(args, methods: tuple[str, ...], result) -> list[tuple[str, str]]:
    if args.compare:
        pairs = []
        for text in args.compare:
            if text.count(":") != 1:
                raise OscarInputError(f"--compare takes A:B (e.g. oscar:j), got {text!r}")
            a, b = text.split(":")
            pairs.append((result.method_name(a), result.method_name(b)))
        return pairs
    if "OSCAR" in methods:
        return [("OSCAR", m) for m in methods if m != "OSCAR"]
    return []


def run(args) -> int:
    if args.compilation_cache:
        import jax

        jax.config.update("jax_compilation_cache_dir", args.compilation_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    import pandas as pd

    from ..report.render import render_table, write_tables
    from ..sweep import DEFAULT_METHODS, DEFAULT_NS, sweep

    ns = list(DEFAULT_NS) if args.n is None else _numbers(args.n, "--n", int)
    methods = list(DEFAULT_METHODS) if args.methods is None else _methods(args.methods)
    settings, restrict = _settings(args, ns, methods)
    result = sweep(reps=args.reps, methods=methods, seed=args.seed, settings=settings, method_settings=restrict,
                   chunk=args.chunk, pad_ratio=args.pad_ratio, compile_ahead=not args.no_compile_ahead)
    table = result.table(args.level)
    pairs = _comparisons(args, result.methods, result)
    diffs = [result.differences(a, b, args.level) for a, b in pairs]
    failures = result.failures()
    if args.out:
        tables = {"summary": table, "per_replicate": result.per_replicate(), "failures": failures,
                  "timings": result.timings}
        if diffs:
            tables["differences"] = pd.concat(diffs, ignore_index=True)
        payload = result.to_dict(args.level)
        payload["differences"] = tables["differences"].to_dict(orient="records") if diffs else []
        write_tables(args.out, tables, payload)
        (Path(args.out) / "summary.md").write_text(result.to_markdown(args.level) + "\n", encoding="utf-8")
        result.plot(args.out, args.level)
    n_failed = int(failures.n_failed.sum())
    if n_failed:
        bad = failures[failures.n_failed > 0]
        detail = "; ".join(f"N={r.n} c={r.c:g} ρ={r.rho:g} {r.method}: {r.n_failed}" for r in bad.itertuples())
        print(f"warning: {n_failed} fit(s) failed a B.3 check and were left out ({detail})", file=sys.stderr)
    if args.format == "json":
        emit_json(table.to_dict(orient="records"))
    elif args.format == "csv":
        emit(table.to_csv(index=False))
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
            emit(f"paired differences {d.a.iloc[0]} − {d.b.iloc[0]} over replicates where both passed B.3 "
                 f"({args.level:.0%} Monte Carlo interval)")
            emit(render_table(d, [("n", "N", "d"), ("c", "c", "g"), ("rho", "ρ", "g"), ("metric", "metric", ""),
                                  ("n_pairs", "pairs", "d"), ("diff", "diff", "+.4f"), ("mcse", "MC SE", ".4f"),
                                  ("lo", "lo", "+.4f"), ("hi", "hi", "+.4f")]))
    return 0
