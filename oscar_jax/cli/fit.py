"""``oscar fit``: penalized fit with cluster-robust intervals, Arena-style boards and plots."""

from __future__ import annotations

import sys

from ..fit import companion_fits, fit_problem, small_data_advice
from ..infer.sandwich import INDEPENDENCE_NOTE
from ..model.problem import prepare
from ..report.leaderboard import arena_text, fastchat_table
from ..report.render import fill, write_tables
from ..report.text import fit_report, header, judges_text, strong_weight_note, win_text
from ..results.boards import SCALES, as_draws, parse_anchor, prepare_board_program
from ..runtime.validate import check_ci_prob, check_positive_int, resolve_name
from .common import MODELS_HELP, add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

CI_SOURCES = ("sandwich", "model", "bootstrap", "bayes")

NAME = "fit"
HELP = "fit a model and print the leaderboard, judge table and win probabilities"
DESCRIPTION = (
    "Fit a model by penalized maximum likelihood and report candidates, judges and win "
    "probabilities. --scale elo prints an Arena-style board (Rank (UB) | Model | Score | "
    "95% CI (+x/−y) | Votes) with Elo = 1000 + (400/ln 10)·(average-judge logit); --anchor "
    "NAME[=VALUE] pins one candidate and recomputes the intervals for the contrast with it; "
    "--plots DIR writes forest, win-probability heatmap, judge panel and 1 − D² figures."
)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--ci", choices=list(CI_SOURCES), default="sandwich",
                        help="interval source: prompt-cluster sandwich (default), model-based, prompt "
                             "bootstrap (oscar_jax.bootstrap) or posterior (oscar_jax.bayes)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--scale", choices=list(SCALES), default="logit",
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
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    parser.add_argument("--seed", type=int, default=0,
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
    # Validate everything that does not need the data before reading or fitting anything.
    ci_prob = check_ci_prob(args.ci_prob)
    anchor = parse_anchor(args.anchor)
    draw_based = args.ci in ("bootstrap", "bayes")
    if draw_based:
        check_positive_int("replicates", args.replicates, minimum=2)
    design = design_from_args(args)
    if anchor is not None:
        anchor = (resolve_name("anchor candidate", anchor[0], list(design.candidates)), anchor[1])
    if args.scale == "winrate":  # the baseline is the anchor: from --anchor, or an arena-hard --baseline
        name = anchor[0] if anchor else args.baseline
        anchor = None if name is None else (resolve_name("baseline candidate", name, list(design.candidates)), None)
    problem = prepare(design, args.model, ridge=args.ridge)
    if anchor is not None:  # the anchored board's program compiles on the worker thread while the fit compiles
        prepare_board_program(problem.layout, problem.design.candidates.index(anchor[0]))
    result = fit_problem(problem, seed=args.seed, ci_prob=ci_prob)
    wald = "sandwich" if draw_based else args.ci
    no_effect = bool(getattr(args, "no_prompt_effect", False))
    draws = as_draws(_draw_source(args, result), result.layout, args.ci) if draw_based else None
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
    notes += small_data_advice(result, ci=wald, ridge=args.ridge, seed=args.seed)
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
        payload["plots"] = {k: str(v) for k, v in plots.items()}

    if args.out:
        write_tables(args.out, {"leaderboard": lb, "judges": result.judges(wald, draws=draws),
                                "win_prob": result.win_matrix(wald, draws=draws)}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(lb.to_csv(index=False))
    elif args.format == "fastchat":
        elo = lb if args.scale == "elo" else result.leaderboard(
            wald, scale="elo", anchor=None if args.scale == "winrate" else anchor, draws=draws)
        emit(fastchat_table(elo).to_csv(index=False))
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
        print(f"oscar fit: wrote {len(plots)} plots to {args.plots}", file=sys.stderr)
    return 0
