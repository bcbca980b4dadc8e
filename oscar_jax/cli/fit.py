"""``oscar fit`` and ``oscar report``: one fit, shown as text, JSON, CSV and plots, or as an HTML page.

``fit`` prints the leaderboard with cluster-robust intervals (Arena-style boards on any
scale), the judge table and the win probabilities; ``report`` writes the same fit as one
self-contained HTML page to share.
"""

from __future__ import annotations

import shlex
import sys

from ..results.intervals import CI_SOURCES, SCORE_SCALES
from ..runtime.validate import OscarInputError, check_ci_prob, check_positive_int, resolve_name
from .common import add_data_arguments, add_output_arguments, emit, emit_json, problem_from_args

DESCRIPTIONS = {
    "fit": "Fit a model by penalized maximum likelihood and report candidates, judges and win "
           "probabilities. --scale elo prints an Arena-style board (Rank (UB) | Model | Score | "
           "95% CI (+x/−y) | Votes) with Elo = 1000 + (400/ln 10)·(average-judge logit); --anchor "
           "NAME[=VALUE] pins one candidate and recomputes the intervals for the contrast with it; "
           "--plots DIR writes forest, win-probability heatmap, judge panel and 1 − D² figures.",
    "report": "Fit a model and write one HTML file with the leaderboard (Elo and average-judge logit with "
              "intervals, Rank (UB), votes), the judge table, the win-probability heatmap, the 1 − D² "
              "attenuation plot, the data notes and checks, and the command and package versions. The file "
              "uses no network resources (inline CSS, figures as inline PNG), so it can be mailed or published "
              "as it is.",
}


def add_arguments(parser, command: str):
    add_data_arguments(parser, model=True)
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    if command == "report":
        parser.add_argument("--ci", choices=["sandwich", "model"], default="sandwich",
                            help="interval source: prompt-cluster sandwich (default) or model-based")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random second start (default 0)")
        parser.add_argument("-o", "--output", default="report.html", metavar="FILE.html",
                            help="where to write the page (default report.html)")
        return
    parser.add_argument("--ci", choices=list(CI_SOURCES), default="sandwich",
                        help="interval source: prompt-cluster sandwich (default), model-based, prompt "
                             "bootstrap (oscar_jax.bootstrap) or posterior (oscar_jax.bayes)")
    parser.add_argument("--scale", choices=list(SCORE_SCALES), default="logit",
                        help="score scale: logit (default; average-judge logit, independent of the reference "
                             "judge), elo (1000 + 173.72·logit, Arena-style table) or winrate (arena-hard's "
                             "win rate %% against the --anchor or --baseline candidate)")
    parser.add_argument("--anchor", default=None, metavar="NAME[=VALUE]",
                        help="pin candidate NAME at VALUE (default 1000 Elo / 0 logit); the other "
                             "candidates' intervals are recomputed for the contrast with it, so they widen")
    parser.add_argument("--plots", default=None, metavar="DIR",
                        help="write forest.png, win_heatmap.png, judge_panel.png, attenuation.png to DIR "
                             "(fits J, and J+P when the model has no position term, for comparison)")
    parser.add_argument("--replicates", type=int, default=500,
                        help="bootstrap replicates for --ci bootstrap (default 500)")
    parser.add_argument("--no-prompt-effect", action="store_true",
                        help="with --ci bayes: sample the model without the prompt × candidate effect (much "
                             "faster; its intervals assume independent records and are too narrow under prompt "
                             "dependence: on MT-Bench about half the sandwich's width)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random second start and of the bootstrap/posterior (default 0)")
    add_output_arguments(parser, formats=("table", "json", "csv", "fastchat"))


def _data_summary(design) -> dict:
    rep = design.report
    if rep is None:
        return {}
    return {"source": rep.source, "schema": rep.schema, "n_input": rep.n_input, "n_kept": rep.n_kept,
            "dropped": dict(rep.dropped), "ties": dict(rep.ties), "notes": list(rep.notes)}


def _aux_fit(design, model: str, args, result):
    """J (or J+P) next to the chosen model, for the judge panel and attenuation plot."""
    from ..fit import fit

    return fit(design, model, ridge=args.ridge, seed=args.seed, ci_prob=result.ci_prob)


def run(args) -> int:
    return _report(args) if args.command == "report" else _fit(args)


def _fit(args) -> int:
    # Validate what does not need the data, then read and check the data, before fitting anything.
    ci_prob = check_ci_prob(args.ci_prob)
    draw_based = args.ci in ("bootstrap", "bayes")
    if draw_based:
        check_positive_int("replicates", args.replicates, minimum=2)
    problem = problem_from_args(args)
    from ..fit import fit  # the numeric stack, once the data are known to be good
    from ..infer.sandwich import INDEPENDENCE_NOTE
    from ..report.draw_sources import draw_intervals, interval_draws
    from ..report.leaderboard import ELO_BASE, ELO_SLOPE, arena_text, parse_anchor, prepare_board_program
    from ..report.render import fill, write_tables
    from ..report.scales import fastchat_table, scaled_board
    from ..report.text import fit_report, header, judges_text, win_text
    from ..results.fit_json import merge_board

    anchor = parse_anchor(args.anchor)
    design = problem.design
    if anchor is not None:
        anchor = (resolve_name("anchor candidate", anchor[0], list(design.candidates)), anchor[1])
    # The boards' programs compile on the worker thread while the fit compiles (compile_ahead).
    for name in {None, anchor[0] if anchor else None}:
        prepare_board_program(problem.layout, None if name is None else problem.design.candidates.index(name))
    result = fit(problem, seed=args.seed, ci_prob=ci_prob)
    wald = "sandwich" if draw_based else args.ci
    no_effect = bool(getattr(args, "no_prompt_effect", False))
    draws, n_failed = (interval_draws(args.ci, result, replicates=args.replicates, seed=args.seed,
                                      prompt_effect=False if no_effect else None)
                       if draw_based else (None, 0))
    baseline = None
    if args.scale == "winrate":
        baseline = resolve_name("baseline candidate", anchor[0] if anchor else args.baseline or "",
                                list(design.candidates)) if (anchor or args.baseline) else None
        anchor = None
    board = scaled_board(result, ci=args.ci, scale=args.scale, anchor=anchor, baseline=baseline, draws=draws)

    payload = result.to_dict(wald, intervals=draw_intervals(result, draws) if draw_based else None)
    payload["ci"] = args.ci
    merge_board(payload, board, args.scale)
    notes = []
    if draw_based:
        notes.append(f"{args.ci} percentile intervals from {len(draws)} draws for the leaderboard"
                     + (", κ and win probabilities; D and bias-coefficient intervals are prompt-cluster sandwich"
                        if args.format != "table" else
                        "; the judge and win-probability tables below are prompt-cluster sandwich"))
        if n_failed:
            notes.append(f"{n_failed} {args.ci} draws failed their checks and were left out")
    from ..report.advice import small_data_advice, strong_weight_note

    notes += small_data_advice(result, ci=wald, ridge=args.ridge, seed=args.seed)
    if strong_weight_note(args.strong_weight):
        notes.append(strong_weight_note(args.strong_weight))
    payload["leaderboard"] = {
        "scale": args.scale,
        "score": {"logit": "average-judge logit x = γ̄·s (independent of the reference judge; = s when γ ≡ 1)",
                  "elo": "Elo = 1000 + (400/ln 10)·x",
                  "winrate": f"win rate % against {baseline}: 100·σ(x − x_baseline)"}[args.scale],
        "s": "per-candidate parameter s on the reference judge's scale (changes with --reference-judge)",
        "elo_base": ELO_BASE, "elo_slope": ELO_SLOPE, "anchor": board.attrs["anchor"],
        "anchor_value": board.attrs["anchor_value"], "ci": args.ci, "ci_prob": ci_prob,
        "rank_ub": "1 + number of candidates whose lower bound exceeds this one's upper bound",
        "n_draws": None if draws is None else int(len(draws)), "n_failed_draws": n_failed,
    }
    payload["data"] = _data_summary(design)
    if args.ci == "model" or (args.ci == "bayes" and (no_effect or design.n_records == design.n_clusters)):
        notes.append(f"{'model-based' if args.ci == 'model' else 'posterior without prompt effect:'} intervals "
                     f"{INDEPENDENCE_NOTE}")
    payload["notes"] = list(payload["notes"]) + notes

    plots = {}
    if args.plots:
        from ..report.plots import write_fit_plots

        terms = result.effective_spec.terms
        is_j = result.effective_spec.learn_gamma and not terms
        j_fit = result if is_j else _aux_fit(design, "j", args, result)
        pos_fit = result if "pos" in terms else _aux_fit(design, "j+p", args, result)
        win_table = None
        if draw_based:
            win_table = result.win_matrix("sandwich")
            win_table["lo"] = [r["lo"] for r in payload["win_prob"]]
            win_table["hi"] = [r["hi"] for r in payload["win_prob"]]
        plots = write_fit_plots(result, args.plots, board=board, j_fit=j_fit, pos_fit=pos_fit, ci=wald,
                                win_table=win_table)
        payload["plots"] = {k: str(v) for k, v in plots.items()}

    if args.out:
        write_tables(args.out, {"leaderboard": result.leaderboard(wald), "arena": board,
                                "judges": result.judges(wald), "win_prob": result.win_matrix(wald)}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        plain = args.scale == "logit" and anchor is None and not draw_based
        emit((result.leaderboard(wald) if plain else board).to_csv(index=False))
    elif args.format == "fastchat":
        emit(fastchat_table(result, ci=args.ci, anchor=anchor, draws=draws, board=board).to_csv(index=False))
    else:
        if args.scale == "logit" and anchor is None and not draw_based:
            text = fit_report(result, ci=wald)
            if notes:
                text += "\n\n" + "\n".join(fill(f"note: {n}") for n in notes)
        else:
            from ..infer.identification import interval_status

            board.attrs["interval_status"] = {c: x for c, x in zip(result.design.candidates,
                                                                    interval_status(result, wald)["candidates"]) if x}
            # Notes about the tables (e.g. which ones are sandwich under --ci bootstrap) come before them.
            board_text = arena_text(board)
            if notes:
                board_text += "\n" + "\n".join(fill(f"note: {n}") for n in notes)
            text = "\n\n".join([header(result, wald), board_text, judges_text(result, wald), win_text(result, wald)])
        if plots:
            text += "\n\n" + fill("plots: " + ", ".join(str(p) for p in plots.values()))
        emit(text)
    if plots and args.format != "table":
        print(f"oscar fit: wrote {len(plots)} plots to {args.plots}", file=sys.stderr)
    return 0


def _command_line(args) -> str:
    argv = getattr(args, "_argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return shlex.join(["oscar", *map(str, argv)])


def _report(args) -> int:
    ci_prob = check_ci_prob(args.ci_prob)
    if not str(args.output).lower().endswith((".html", ".htm")):
        raise OscarInputError(f"-o {args.output!r}: the report is an HTML page; give a name ending in .html")
    problem = problem_from_args(args)
    from ..fit import fit  # the numeric stack, once the data are known to be good
    from ..report.html import write_report

    result = fit(problem, seed=args.seed, ci_prob=ci_prob)
    from ..report.advice import small_data_advice, strong_weight_note

    notes = small_data_advice(result, ci=args.ci, ridge=args.ridge, seed=args.seed)
    notes += [n for n in [strong_weight_note(args.strong_weight)] if n]
    path = write_report(args.output, result, ci=args.ci, command=_command_line(args), ridge=args.ridge,
                        seed=args.seed, notes=notes)
    print(f"oscar report: wrote {path} ({path.stat().st_size / 1024:.0f} KB); open it in a browser", file=sys.stderr)
    return 0
