"""``oscar bootstrap``: prompt bootstrap of a fit with percentile intervals (method §5)."""

from __future__ import annotations

import pandas as pd

from ..multiprocess import add_process_arguments
from ..report import fmt_ci, render_table, write_tables
from ..resample import bootstrap
from ..summaries import header
from ._common import MODELS_HELP, add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

NAME = "bootstrap"
HELP = "prompt bootstrap: percentile CIs for scores, γ, κ, β, D, q_ij and rank distributions"
DESCRIPTION = (
    "Refits the model on prompt-bootstrap replicates (prompts resampled with replacement, as multinomial "
    "prompt weights, all replicates in one vmapped batch, warm-started at the full-data fit) and reports "
    "percentile intervals around the full-data estimates, P(best) and the rank distribution of every "
    "candidate. Replicates that fail a B.3 check are counted and excluded."
)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--replicates", type=int, default=500, help="bootstrap replicates (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling and the random start (default 0)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--ridge", type=float, default=None, help="ridge λ (default 0.05)")
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="replicates per compiled call (bounds memory; default automatic)")
    add_output_arguments(parser)
    add_process_arguments(parser)


def bootstrap_report(boot) -> str:
    pct = int(round(100 * boot.ci_prob))
    lines = [header(boot.full)]
    lines.append(f"prompt bootstrap: {boot.replicates} replicates (seed {boot.seed}); point estimates are the "
                 "full-data fit, intervals are bootstrap percentiles")
    lines.append(boot.batch.failure_summary())
    clusters = boot.batch.failure_counts()["clusters"]
    if clusters:
        lines.append(f"({clusters} replicates have G ≤ dim θ distinct prompts: a sandwich caveat only, "
                     "not used by percentile intervals, not excluded)")
    lb = boot.leaderboard()
    lb = lb.assign(score_ci=[fmt_ci(a, b) for a, b in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(a, b, 3) for a, b in zip(lb.q_field_lo, lb.q_field_hi)],
                   rank_ci=[fmt_ci(a, b, 0) for a, b in zip(lb.rank_lo, lb.rank_hi)])
    lines += ["", f"Leaderboard ({pct}% bootstrap percentile CI; q = win probability against the field)",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""), ("score", "score", ".3f"),
                                ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% CI", ""),
                                ("p_best", "P(best)", ".3f"), ("rank_ci", "rank CI", "")], name_col="candidate")]
    jt = boot.judges()
    jt = jt.assign(name=[("*" if r else "") + j for j, r in zip(jt.judge, jt.reference)],
                   kappa_ci=[fmt_ci(a, b) for a, b in zip(jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[fmt_ci(a, b) for a, b in zip(jt.D_lo, jt.D_hi)],
                   fam_ci=[fmt_ci(a, b) for a, b in zip(jt.beta_fam_lo, jt.beta_fam_hi)],
                   len_ci=[fmt_ci(a, b) for a, b in zip(jt.beta_len_lo, jt.beta_len_hi)])
    cols = [("name", "judge (*=ref)", ""), ("kappa", "κ", ".3f"), ("kappa_ci", "κ CI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D CI", "")]
    if jt["beta_len"].notna().any():
        cols += [("beta_len", "β_len", ".2f"), ("len_ci", "CI", "")]
    if jt["beta_fam"].notna().any():
        cols += [("beta_fam", "β_fam", ".2f"), ("fam_ci", "CI", "")]
    lines += ["", f"Judges ({pct}% bootstrap percentile CI; κ = γ·RMS(s), D = tanh(β_pos/2))",
              render_table(jt, cols, name_col="name")]
    rd = boot.rank_distribution()
    rank_cols = [c for c in rd.columns if c.startswith("p_rank_")]
    cols = [("candidate", "candidate", "")] + [(c, c.removeprefix("p_rank_"), ".2f") for c in rank_cols]
    lines += ["", "Rank distribution P(rank = r) over valid replicates",
              render_table(rd, cols + [("expected_rank", "E[rank]", ".2f")], name_col="candidate")]
    lines += [f"note: {n}" for n in boot.batch.notes if n not in boot.full.notes]
    return "\n".join(lines)


def run(args) -> int:
    design = design_from_args(args)
    boot = bootstrap(design, args.model, replicates=args.replicates, seed=args.seed, ci_prob=args.ci_prob,
                     ridge=args.ridge, chunk_size=args.chunk_size)
    payload = boot.to_dict()
    if args.out:
        write_tables(args.out, {"leaderboard": boot.leaderboard(), "judges": boot.judges(),
                                "win_prob": boot.win_matrix(), "rank_distribution": boot.rank_distribution(),
                                "failures": pd.DataFrame([boot.batch.failure_counts()])}, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(boot.leaderboard().to_csv(index=False))
    else:
        emit(bootstrap_report(boot))
    return 0
