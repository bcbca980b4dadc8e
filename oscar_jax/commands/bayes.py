"""``oscar bayes``: Bayesian OSCAR with NUTS — posterior leaderboard, judge table, diagnostics."""

from __future__ import annotations

import numpy as np

from ..report import fill, fmt_ci, render_table, shorten
from ._common import MODELS_HELP, add_data_arguments, design_from_args, emit, emit_json

NAME = "bayes"
HELP = "Bayesian fit (NUTS): leaderboard with credible intervals, P(best), judge sensitivities"
DESCRIPTION = (
    "Samples the posterior of an OSCAR-family model with NumPyro's NUTS (several chains in parallel). "
    "Priors default to Normal(0, 1/λ) on every free coordinate, the Bayesian reading of the point "
    "fit's ridge, so the posterior concentrates where the penalized fit does. When prompts carry more "
    "than one record the model includes a prompt × candidate random effect (a prompt may favour some "
    "candidates), which accounts for within-prompt dependence as the cluster sandwich does; "
    "--no-prompt-effect drops it (faster, but the intervals then assume independent records and are "
    "too narrow under prompt dependence). Prints posterior means with highest-density intervals, "
    "P(best), the judge table and R-hat / ESS / divergence diagnostics (with a warning when poor)."
)


def _fmt_or(value, spec: str, missing: str) -> str:
    return missing if value is None or not np.isfinite(value) else format(value, spec)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--chains", type=int, default=4, help="NUTS chains, run in parallel (default 4)")
    parser.add_argument("--warmup", type=int, default=1000, help="adaptation iterations per chain (default 1000)")
    parser.add_argument("--draws", type=int, default=1000, help="kept draws per chain (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of initial values and trajectories (default 0)")
    effect = parser.add_mutually_exclusive_group()
    effect.add_argument("--prompt-effect", nargs="?", const="candidate", default=None, choices=["candidate", "slot"],
                        help="prompt random effect: candidate (default whenever prompts carry more than one "
                             "record: s_{i,g} = s_i + σ_u u_{g,i}) or slot (older single slot-A shift per prompt)")
    effect.add_argument("--no-prompt-effect", action="store_true",
                        help="no prompt effect: much faster (it works on cell totals, not on every prompt), but "
                             "the intervals assume independent records and are too narrow under prompt dependence "
                             "(on MT-Bench about half the prompt-cluster sandwich's width)")
    parser.add_argument("--ridge", type=float, default=None,
                        help="λ of the default Normal(0, 1/λ) priors (default 0.05, the point fit's ridge)")
    parser.add_argument("--target-accept", type=float, default=0.9, help="NUTS target acceptance (default 0.9)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="HDI level (default 0.95)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    from .bootstrap import add_scale_arguments

    add_scale_arguments(parser)
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="also write the posterior (netCDF), summary CSVs, result.json and PNG plots here")
    parser.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    svi = parser.add_argument_group("variational inference (--method svi)")
    svi.add_argument("--method", choices=["nuts", "svi"], default="nuts",
                     help="nuts (default) or svi: a Gaussian approximation fitted by NumPyro SVI with optax Adam, "
                          "minibatched on large data; much faster, intervals may be too narrow")
    svi.add_argument("--guide", choices=["normal", "lowrank"], default="normal",
                     help="SVI guide: normal (AutoNormal, mean-field) or lowrank (AutoLowRankMultivariateNormal)")
    svi.add_argument("--svi-steps", type=int, default=3000, help="SVI optimizer steps (default 3000)")
    svi.add_argument("--learning-rate", type=float, default=0.02, help="peak Adam learning rate (default 0.02)")
    svi.add_argument("--batch-size", type=int, default=None,
                     help="likelihood cells per SVI step (default: all up to 50,000, else 20,000)")


def scaled(result, ci_prob: float, scale: str = "logit", anchor=None):
    """(board, leaderboard) on ``scale``: posterior mean and equal-tailed interval of x = γ̄·s."""
    from ..scales import draws_board, rescore

    s = result.draws("s")
    gbar = result.draws("gamma").mean(axis=-1)  # γ̄ = mean_k γ_k per draw, as in the point fit
    x = (gbar[..., None] * s).reshape(-1, s.shape[-1])
    votes = [result.design.counts.get("candidate_votes", {}).get(c, 0) for c in result.design.candidates]
    board = draws_board(x, result.design.candidates, votes, scale=scale, ci_prob=ci_prob, anchor=anchor)
    return board, rescore(result.leaderboard(ci_prob), board)


def _text(result, ci_prob: float, scale: str = "logit", anchor=None) -> str:
    d = result.design
    diag = result.diagnostics
    pct = int(round(100 * ci_prob))
    pe = {"candidate": " + prompt × candidate effect", "slot": " + prompt slot shift"}.get(result.prompt_effect, "")
    lines = [
        f"Bayesian {result.effective_spec.name}{pe} — {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges",
    ]
    if diag.get("method") == "svi":
        lines += [f"reference judge: {shorten(d.judges[d.reference], 40)} · SVI {diag['guide']} guide · "
                  f"{diag['steps']} steps × {diag['batch_size']:,} of {diag['n_units']:,} cells · "
                  f"{diag['draws']} draws · seed {result.seed}",
                  f"ELBO: final loss {diag['final_loss']:.2f} · last-window change {diag['decrease_last_window']:.3g} "
                  f"(noise {diag['noise_se']:.3g}) · {'plateau' if diag['plateau'] else 'NOT CONVERGED'}"]
    else:
        lines += [f"reference judge: {shorten(d.judges[d.reference], 40)} · NUTS {diag['chains']} chains × "
                  f"({diag['warmup']} warm-up + {diag['draws']} draws) · seed {result.seed}",
                  f"diagnostics: max R-hat {_fmt_or(diag['max_rhat'], '.4f', 'n/a (one chain)')} · "
                  f"min ESS {_fmt_or(diag['min_ess'], '.0f', 'n/a')} · "
                  f"divergences {diag['divergences']} · {'ok' if diag['ok'] else 'POOR'}"]
    lines += [f"note: {n}" for n in result.notes]
    lines += [f"warning: {m}" for m in diag["messages"]]
    sig = result.sigma_prompt(ci_prob)
    if sig is not None:
        lines.append(f"prompt effect σ_u: {sig['mean']:.3f} {fmt_ci(sig['lo'], sig['hi'], 3)}")
    from ..scales import scale_label

    board, lb = scaled(result, ci_prob, scale, anchor)
    digits = 1 if scale in ("elo", "winrate") else 2
    lb = lb.assign(score_ci=[fmt_ci(lo, hi, digits) for lo, hi in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(lo, hi, 3) for lo, hi in zip(lb.q_field_lo, lb.q_field_hi)])
    lines += ["", f"Leaderboard (posterior mean; {scale_label(scale, board.attrs.get('anchor'))} with {pct}% "
                  f"equal-tailed interval; q: win prob. vs the field, {pct}% HDI)",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""),
                                ("score", "score", ".1f" if scale in ("elo", "winrate") else ".3f"),
                                ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% HDI", ""),
                                ("p_best", "P(best)", ".3f")], name_col="candidate")]
    jt = result.judges(ci_prob)
    jt = jt.assign(kappa_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.D_lo, jt.D_hi)],
                   name=[("*" if r else "") + j for j, r in zip(jt.judge, jt.reference)])
    cols = [("name", "judge (*=ref)", ""), ("n", "n", "d"), ("kappa", "κ", ".3f"), ("kappa_ci", "κ HDI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D HDI", "")]
    lines += ["", "Judges (κ = γ·RMS(s): sensitivity; D = tanh(β_pos/2): net first-slot preference)",
              render_table(jt, cols, name_col="name")]
    return "\n".join(line if "\n" in line else fill(line) for line in lines)


def _svi_settings(args):
    if args.method != "svi":
        return None
    from ..bayes import SviSettings

    return SviSettings(guide=args.guide, steps=args.svi_steps, learning_rate=args.learning_rate,
                       batch_size=args.batch_size)


def run(args) -> int:
    from ..bayes import fit_bayes  # numpyro/arviz load only when this command runs

    design = design_from_args(args)
    effect = False if args.no_prompt_effect else args.prompt_effect
    result = fit_bayes(design, args.model, prompt_effect=effect, ridge=args.ridge, chains=args.chains,
                       warmup=args.warmup, draws=args.draws, seed=args.seed, target_accept=args.target_accept,
                       ci_prob=args.ci_prob, method=args.method, svi=_svi_settings(args))
    if args.out:
        result.save(args.out, ci_prob=args.ci_prob, plots=not args.no_plots)
    if args.format == "json":
        payload = result.to_dict(args.ci_prob)
        board, _ = scaled(result, args.ci_prob, args.scale, args.anchor)
        rows = board.set_index("candidate")
        for cand in payload["candidates"]:  # one scale per output: score on --scale; raw s as s_*
            cand["s_mean"], cand["s_sd"], cand["s_lo"], cand["s_hi"] = (cand.pop("mean"), cand.pop("sd"),
                                                                        cand.pop("lo"), cand.pop("hi"))
            row = rows.loc[cand["name"]]
            cand["score"], cand["lo"], cand["hi"] = float(row["score"]), float(row["lo"]), float(row["hi"])
            cand["rank_ub"] = int(row["rank_ub"])
        payload["scale"] = {"scale": args.scale, "anchor": board.attrs.get("anchor"),
                            "score": "posterior mean and equal-tailed interval on the chosen scale (oscar_jax.scales)"}
        emit_json(payload)
    else:
        emit(_text(result, args.ci_prob, args.scale, args.anchor))
    return 0
