"""``oscar compare`` and ``oscar human``: models judged on what they did not see.

``compare`` is the held-out log loss of several models on identical prompt folds with the
paired refit bootstrap (Appendix E.2–E.3); ``human`` the agreement of LLM-judge rankings
with human votes: Spearman and held-out human-vote log loss (Appendix F).
"""

from __future__ import annotations

from .common import MODELS_HELP, add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

DESCRIPTIONS = {
    "compare": (
        "Deals prompt clusters into folds once, trains every model on the same training folds and scores "
        "the pooled out-of-fold log loss with the full predictor (bias terms kept), predictions clipped to "
        "[1e-15, 1-1e-15]. --paired-bootstrap R adds the paired refit bootstrap of Appendix E.3 (prompts "
        "resampled within each fixed fold, every model refitted on the same resampled folds) with percentile "
        "intervals for the loss differences of --pairs."
    ),
    "human": (
        "Fits a Bradley–Terry model to the human votes (ties ½, ridge 0.05) for the human reference ranking, "
        "fits each --models model to the LLM judgments (DATA), and reports the Spearman correlation of every "
        "ranking with the human one and the held-out human-vote log loss: scores fixed at the full-data LLM fit, "
        "σ(α₀ + α₁(s_a − s_b)) calibrated (ridge 1e-6) on 4 of 5 prompt groups and scored on the 5th. A prompt "
        "bootstrap applies the same prompt counts to judgments and votes for percentile intervals and the gain "
        "of each model over the first (positive = lower loss)."
    ),
}


def add_arguments(parser, command: str):
    add_data_arguments(parser)
    if command == "human":
        parser.add_argument("--votes", required=True, metavar="FILE",
                            help="human pairwise votes (e.g. MT-Bench human_judgments.jsonl: question_id, model_a, "
                                 "model_b, winner, judge) on the same prompts and candidates")
        parser.add_argument("--models", default="j,j+p,oscar", metavar="M1,M2,...",
                            help="models to compare, comma-separated; gains are against the first (default j,j+p,oscar)")
        parser.add_argument("--replicates", type=int, default=200, help="prompt-bootstrap replicates (default 200; 0 = none)")
        parser.add_argument("--groups", type=int, default=5, help="prompt groups of the held-out calibration (default 5)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the prompt groups and the bootstrap (default 0)")
        parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
        add_output_arguments(parser, formats=("table", "json"))
        return
    parser.add_argument("--models", default=None,
                        help=f"comma-separated models: {MODELS_HELP} (default: the seven of Table 1, "
                             "j,j+p,j+l,j+f,bt+plf,davidson+plf,oscar)")
    parser.add_argument("--folds", type=int, default=3, help="number of prompt-cluster folds (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold assignment (default 0)")
    parser.add_argument("--paired-bootstrap", type=int, default=0, metavar="R",
                        help="replicates of the paired refit bootstrap (0 = none; the paper uses 200)")
    parser.add_argument("--pairs", default=None, metavar="A:B,...",
                        help="contrasts for the bootstrap, e.g. j:j+p,bt+plf:oscar (difference LL(A) − LL(B), "
                             "positive favours B; default: Table E2's J:J+P, J+P:OSCAR, BT+PLF:OSCAR where present)")
    parser.add_argument("--bootstrap-seed", type=int, default=None, help="seed of the resampling (default --seed)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--chunk-size", type=int, default=None, help="refits per compiled call (default automatic)")
    add_output_arguments(parser)


def run(args) -> int:
    return _human(args) if args.command == "human" else _compare(args)


def _compare(args) -> int:
    design = design_from_args(args)
    from ..compare import DEFAULT_MODELS, compare  # the numeric stack, once the data are known to be good
    from ..report.render import write_tables
    from ..report.text import compare_report

    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models is not None else DEFAULT_MODELS
    pairs = [p for p in args.pairs.split(",") if p.strip()] if args.pairs else None
    res = compare(design, models, folds=args.folds, seed=args.seed,
                  paired_bootstrap=args.paired_bootstrap, pairs=pairs, bootstrap_seed=args.bootstrap_seed,
                  ci_prob=args.ci_prob, chunk_size=args.chunk_size)
    payload = res.to_dict()
    if args.out:
        tables = {"log_loss": res.table()}
        if res.differences is not None:
            tables["differences"] = res.differences
        write_tables(args.out, tables, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(res.table().to_csv(index=False))
    else:
        emit(compare_report(res))
    return 0


def human_text(res) -> str:
    from ..report.render import fmt_ci, render_table

    pct = int(round(100 * res.ci_prob))
    hum = res.human.assign(score=res.human.human_score)
    lines = [f"human reference: Bradley–Terry fit of {res.n_votes} votes on {res.n_prompts} prompts "
             "(one rater, ties ½, ridge 0.05)",
             render_table(hum, [("human_rank", "rank", "d"), ("candidate", "candidate", ""), ("score", "score", ".3f")],
                          name_col="candidate"), ""]
    tab = res.table()
    tab["ci"] = [fmt_ci(a, b, 4) for a, b in zip(tab.lo, tab.hi)]
    lines.append(f"held-out human-vote log loss ({res.n_groups} prompt groups; {pct}% CI from {res.replicates} "
                 "prompt-bootstrap replicates)")
    lines.append(render_table(tab, [("model", "model", ""), ("top", "top candidate", ""), ("spearman", "Spearman", ".3f"),
                                    ("log_loss", "log loss", ".4f"), ("ci", f"{pct}% CI", "")], name_col="model"))
    for name, (gain, lo, hi) in res.gains.items():
        lines.append(f"gain of {name}: {gain:.4f} {fmt_ci(lo, hi, 4)} (positive = lower loss)")
    lines += [f"note: {n}" for n in res.notes]
    return "\n".join(lines)


def _human(args) -> int:
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    design = design_from_args(args)
    from ..human import human_agreement, load_votes  # the numeric stack, once the data are known to be good
    from ..report.render import write_tables

    res = human_agreement(design, load_votes(args.votes), models, replicates=args.replicates, n_groups=args.groups,
                          seed=args.seed, ci_prob=args.ci_prob)
    payload = res.to_dict()
    if args.out:
        write_tables(args.out, {"human_ranking": res.human, "human_agreement": res.table()}, payload)
    if args.format == "json":
        emit_json(payload)
    else:
        emit(human_text(res))
    return 0
