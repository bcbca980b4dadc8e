"""``oscar human``: agreement of LLM-judge rankings with human votes (Appendix F)."""

from __future__ import annotations

from ..human import human_agreement, load_votes
from ..report.render import fmt_ci, render_table, write_tables
from .common import add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

NAME = "human"
HELP = "compare LLM-judge rankings with human votes: Spearman, held-out human-vote log loss, bootstrap CIs"
DESCRIPTION = (
    "Fits a Bradley–Terry model to the human votes (ties ½, ridge 0.05) for the human reference ranking, "
    "fits each --models model to the LLM judgments (DATA), and reports the Spearman correlation of every "
    "ranking with the human one and the held-out human-vote log loss: scores fixed at the full-data LLM fit, "
    "σ(α₀ + α₁(s_a − s_b)) calibrated (ridge 1e-6) on 4 of 5 prompt groups and scored on the 5th. A prompt "
    "bootstrap applies the same prompt counts to judgments and votes for percentile intervals and the gain "
    "of each model over the first (positive = lower loss)."
)


def add_arguments(parser):
    add_data_arguments(parser)
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


def human_text(res) -> str:
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


def run(args) -> int:
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    design = design_from_args(args)
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
