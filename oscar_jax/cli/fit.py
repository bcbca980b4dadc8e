"""``oscar fit`` and ``oscar report``: one fit, shown as text, JSON, CSV and plots, or as an HTML page.

``fit`` prints the leaderboard with cluster-robust intervals (Arena-style boards on any
scale), the judge table and the win probabilities; ``report`` writes the same fit as one
self-contained HTML page to share.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

from ..runtime.x64 import one_thread_cpu_backend
from ..runtime.validate import CI_SOURCES, SCORE_SCALES, OscarInputError, check_ci_prob, check_positive_int, resolve_name
from .common import add_ci_prob, add_data_arguments, add_output_arguments, add_ridge, emit, emit_json, problem_from_args, seed_arg

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
    add_ci_prob(parser)
    add_ridge(parser)
    if command == "report":
        parser.add_argument("--ci", choices=["sandwich", "model"], default="sandwich",
                            help="interval source: prompt-cluster sandwich (default) or model-based")
        parser.add_argument("--seed", type=seed_arg, default=0, help="seed of the random second start (default 0)")
        parser.add_argument("-o", "--output", default="report.html", metavar="FILE.html",
                            help="where to write the page (default report.html)")
        return
    parser.add_argument("--ci", choices=list(CI_SOURCES), default="sandwich",
                        help="interval source: prompt-cluster sandwich (default), model-based (assumes "
                             "independent records), prompt bootstrap (as 'oscar bootstrap', with --replicates) or "
                             "posterior (as 'oscar bayes'; those commands also print rank distributions)")
    parser.add_argument("--scale", choices=list(SCORE_SCALES), default="logit",
                        help="score scale: logit (default; average-judge logit, independent of the reference "
                             "judge), elo (1000 + 173.72·logit, Arena-style table) or winrate (arena-hard's "
                             "win rate %% against the --anchor or --baseline candidate)")
    parser.add_argument("--anchor", default=None, metavar="NAME[=VALUE]",
                        help="pin candidate NAME at VALUE (default 1000 Elo / 0 logit), e.g. "
                             "mixtral-8x7b-instruct-v0.1=1114; 'fastchat' = FastChat's convention (that model at "
                             "1114 when present); the other candidates' intervals are recomputed for the contrast "
                             "with it, so they widen")
    parser.add_argument("--plots", default=None, metavar="DIR",
                        help="write forest.png, win_heatmap.png, judge_panel.png, attenuation.png to DIR "
                             "(fits J, and J+P when the model has no position term, for comparison)")
    parser.add_argument("--replicates", type=int, default=500,
                        help="bootstrap replicates for --ci bootstrap (default 500)")
    parser.add_argument("--no-prompt-effect", action="store_true",
                        help="with --ci bayes: sample the model without the prompt × candidate effect (much "
                             "faster; its intervals assume independent records and are too narrow under prompt "
                             "dependence: on MT-Bench about half the sandwich's width)")
    parser.add_argument("--seed", type=seed_arg, default=0,
                        help="seed of the random second start and of the bootstrap/posterior (default 0)")
    add_output_arguments(parser, formats=("table", "json", "csv", "fastchat"))


def _data_summary(design) -> dict:
    rep = design.report
    if rep is None:
        return {}
    return {"source": rep.source, "schema": rep.schema, "n_input": rep.n_input, "n_kept": rep.n_kept,
            "dropped": dict(rep.dropped), "ties": dict(rep.ties), "notes": list(rep.notes)}


def _draw_source(args, result):
    """The library run behind ``--ci bootstrap`` / ``--ci bayes``: a bootstrap around ``result`` (its point
    estimates stay this fit's) or the posterior; NumPyro loads only for ``bayes``."""
    if args.ci == "bootstrap":
        from ..bootstrap import bootstrap

        return bootstrap(result.design, result.spec, args.replicates, args.seed, ci_prob=result.ci_prob, full=result)
    from ..bayes import fit_bayes

    extra = {"prompt_effect": False} if getattr(args, "no_prompt_effect", False) else {}
    return fit_bayes(result.design, result.spec, seed=args.seed, ci_prob=result.ci_prob, **extra)


def run(args) -> int:
    return _report(args) if args.command == "report" else _fit(args)


def _fit(args) -> int:
    # Validate what does not need the data, then read and check the data, before fitting anything.
    ci_prob = check_ci_prob(args.ci_prob)
    draw_based = args.ci in ("bootstrap", "bayes")
    if draw_based:
        check_positive_int("replicates", args.replicates, minimum=2)
    with one_thread_cpu_backend() if args.ci == "bayes" else nullcontext():  # see runtime.x64
        problem = problem_from_args(args)
    # the numeric stack, once the data are known to be good
    from ..fit import companion_fits, fit, small_data_advice
    from ..infer.sandwich import INDEPENDENCE_NOTE
    from ..report.leaderboard import FASTCHAT_ANCHOR, arena_text, fastchat_csv
    from ..report.render import csv_text, fill, write_tables
    from ..report.text import fit_report, header, judges_text, strong_weight_note, win_text
    from ..results.boards import as_draws, parse_anchor
    from ..results.intervals import few_draws_note

    design = problem.design
    anchor_note = None
    if args.anchor is not None and args.anchor.strip().lower() == "fastchat":  # FastChat's own convention
        name, value = FASTCHAT_ANCHOR
        present = name in design.candidates
        anchor_note = "FastChat's convention" + ("" if present else f"; {name} is not in the data, so no anchor")
        args.anchor = f"{name}={value:g}" if present else None
    anchor = parse_anchor(args.anchor)
    if anchor is not None:
        anchor = (resolve_name("anchor candidate", anchor[0], list(design.candidates)), anchor[1])
    if args.scale == "winrate":  # the baseline is the anchor: from --anchor, or an arena-hard --baseline
        name = anchor[0] if anchor else args.baseline
        anchor = None if name is None else (resolve_name("baseline candidate", name, list(design.candidates)), None)
    result = fit(problem, seed=args.seed, ci_prob=ci_prob)
    wald = "sandwich" if draw_based else args.ci
    no_effect = bool(getattr(args, "no_prompt_effect", False))
    draws = as_draws(_draw_source(args, result), result.layout, args.ci, result.gbar_weights) if draw_based else None
    lb = result.leaderboard(wald, scale=args.scale, anchor=anchor, draws=draws)
    payload = result.to_dict(wald, scale=args.scale, anchor=anchor, draws=draws)
    notes = []
    if draw_based:
        notes.append(f"{args.ci} percentile intervals from {len(draws.theta)} draws for the leaderboard"
                     + (", κ and win probabilities; D and bias-coefficient intervals are prompt-cluster sandwich"
                        if args.format != "table" else
                        "; the judge and win-probability tables below are prompt-cluster sandwich"))
        if draws.n_failed:
            notes.append(f"{draws.n_failed} {args.ci} draws failed their checks and were left out")
        few = few_draws_note(len(draws.theta), ci_prob, f"{args.ci} draws",
                             "--replicates" if args.ci == "bootstrap" else "more draws")
        if few:
            notes.append(few)
    notes += small_data_advice(result, ci=wald, ridge=args.ridge, seed=args.seed, board=lb)
    if strong_weight_note(args.strong_weight):
        notes.append(strong_weight_note(args.strong_weight))
    payload["data"] = _data_summary(design)
    if args.ci == "model" or (args.ci == "bayes" and (no_effect or design.n_records == design.n_clusters)):
        notes.append(f"{'model-based' if args.ci == 'model' else 'posterior without prompt effect:'} intervals "
                     f"{INDEPENDENCE_NOTE}")
    payload["notes"] = list(payload["notes"]) + notes

    plots = {}
    if args.plots:
        from ..report.plots import write_fit_plots

        j_fit, pos_fit = companion_fits(result, ridge=args.ridge, seed=args.seed)
        win_table = result.win_matrix(wald, draws=draws) if draw_based else None
        plots = write_fit_plots(result, args.plots, board=lb, j_fit=j_fit, pos_fit=pos_fit, ci=wald,
                                win_table=win_table)
        # The files are written to a staging folder and moved at the end (cli.main): report where they will be.
        final = Path(getattr(args, "plots_shown", args.plots))
        plots = {k: final / Path(v).relative_to(args.plots) for k, v in plots.items()}
        payload["plots"] = {k: str(v) for k, v in plots.items()}

    if args.out:
        write_tables(args.out, {"leaderboard": lb, "judges": result.judges(wald, draws=draws),
                                "win_prob": result.win_matrix(wald, draws=draws)}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(csv_text(lb))
    elif args.format == "fastchat":
        elo = lb if args.scale == "elo" else result.leaderboard(
            wald, scale="elo", anchor=None if args.scale == "winrate" else anchor, draws=draws)
        emit(fastchat_csv(elo, result.effective_spec, anchor_note))
    else:
        if args.scale == "logit" and anchor is None and not draw_based:
            text = fit_report(result, ci=wald)
            if notes:
                text += "\n\n" + "\n".join(fill(f"note: {n}") for n in notes)
        else:
            # Notes about the tables (e.g. which ones are sandwich under --ci bootstrap) come before them.
            board_text = arena_text(lb)
            if notes:
                board_text += "\n" + "\n".join(fill(f"note: {n}") for n in notes)
            text = "\n\n".join([header(result, wald), board_text, judges_text(result, wald), win_text(result, wald)])
        if plots:
            text += "\n\n" + fill("plots: " + ", ".join(str(p) for p in plots.values()))
        emit(text)
    if plots and args.format != "table":
        print(f"oscar fit: wrote {len(plots)} plots to {getattr(args, 'plots_shown', args.plots)}", file=sys.stderr)
    return 0


def _command_line(args) -> str:
    """The command as the page shows it: paths relative to the working folder, never absolute."""
    from ..report.html import public_command

    argv = getattr(args, "_argv", None)
    if argv is None:
        argv = sys.argv[1:]
    return public_command(["oscar", *map(str, argv)])


def _report(args) -> int:
    ci_prob = check_ci_prob(args.ci_prob)
    if not str(args.output).lower().endswith((".html", ".htm")):
        raise OscarInputError(f"-o {args.output!r}: the report is an HTML page; give a name ending in .html")
    problem = problem_from_args(args)
    from ..fit import fit, small_data_advice  # the numeric stack, once the data are known to be good
    from ..report.html import write_report
    from ..report.text import strong_weight_note

    result = fit(problem, seed=args.seed, ci_prob=ci_prob)

    notes = small_data_advice(result, ci=args.ci, ridge=args.ridge, seed=args.seed)
    notes += [n for n in [strong_weight_note(args.strong_weight)] if n]
    path = write_report(args.output, result, ci=args.ci, command=_command_line(args), ridge=args.ridge,
                        seed=args.seed, notes=notes)
    print(f"oscar report: wrote {path} ({path.stat().st_size / 1024:.0f} KB); open it in a browser", file=sys.stderr)
    return 0
