"""``oscar bayes``: Bayesian OSCAR with NUTS — posterior leaderboard, judge table, diagnostics."""

from __future__ import annotations

from ..report import fmt_ci, render_table, shorten
from ._common import MODELS_HELP, add_data_arguments, design_from_args, emit, emit_json

NAME = "bayes"
HELP = "Bayesian fit (NUTS): leaderboard with credible intervals, P(best), judge sensitivities"
DESCRIPTION = (
    "Samples the posterior of an OSCAR-family model with NumPyro's NUTS (several chains in parallel). "
    "Priors default to Normal(0, 1/λ) on every free coordinate, the Bayesian reading of the point "
    "fit's ridge, so the posterior concentrates where the penalized fit does. --prompt-effect adds a "
    "prompt-level random effect on the quality gap, which accounts for within-prompt dependence the "
    "way the point fit's cluster sandwich does. Prints posterior means with highest-density intervals, "
    "P(best), the judge table and R-hat / ESS / divergence diagnostics (with a warning when poor)."
)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--model", default="oscar", help=f"model variant: {MODELS_HELP} (default oscar)")
    parser.add_argument("--chains", type=int, default=4, help="NUTS chains, run in parallel (default 4)")
    parser.add_argument("--warmup", type=int, default=1000, help="adaptation iterations per chain (default 1000)")
    parser.add_argument("--draws", type=int, default=1000, help="kept draws per chain (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of initial values and trajectories (default 0)")
    parser.add_argument("--prompt-effect", action="store_true",
                        help="add a prompt random effect σ_u z_g on the quality gap (within-prompt dependence)")
    parser.add_argument("--ridge", type=float, default=None,
                        help="λ of the default Normal(0, 1/λ) priors (default 0.05, the point fit's ridge)")
    parser.add_argument("--target-accept", type=float, default=0.9, help="NUTS target acceptance (default 0.9)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="HDI level (default 0.95)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format")
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


def _text(result, ci_prob: float) -> str:
    d = result.design
    diag = result.diagnostics
    pct = int(round(100 * ci_prob))
    pe = " + prompt effect" if result.prompt_effect else ""
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
                  f"diagnostics: max R-hat {diag['max_rhat']:.4f} · min ESS {diag['min_ess']:.0f} · "
                  f"divergences {diag['divergences']} · {'ok' if diag['ok'] else 'POOR'}"]
    lines += [f"note: {n}" for n in result.notes]
    lines += [f"warning: {m}" for m in diag["messages"]]
    sig = result.sigma_prompt(ci_prob)
    if sig is not None:
        lines.append(f"prompt effect σ_u: {sig['mean']:.3f} {fmt_ci(sig['lo'], sig['hi'], 3)}")
    lb = result.leaderboard(ci_prob)
    lb = lb.assign(score_ci=[fmt_ci(lo, hi) for lo, hi in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(lo, hi, 3) for lo, hi in zip(lb.q_field_lo, lb.q_field_hi)])
    lines += ["", f"Leaderboard (posterior mean, {pct}% HDI; q = win probability against the field)",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""), ("score", "score", ".3f"),
                                ("score_ci", f"{pct}% HDI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% HDI", ""),
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
    return "\n".join(lines)


def _svi_settings(args):
    if args.method != "svi":
        return None
    from ..bayes import SviSettings

    return SviSettings(guide=args.guide, steps=args.svi_steps, learning_rate=args.learning_rate,
                       batch_size=args.batch_size)


def run(args) -> int:
    from ..bayes import fit_bayes  # numpyro/arviz load only when this command runs

    design = design_from_args(args)
    result = fit_bayes(design, args.model, prompt_effect=args.prompt_effect, ridge=args.ridge, chains=args.chains,
                       warmup=args.warmup, draws=args.draws, seed=args.seed, target_accept=args.target_accept,
                       ci_prob=args.ci_prob, method=args.method, svi=_svi_settings(args))
    if args.out:
        result.save(args.out, ci_prob=args.ci_prob, plots=not args.no_plots)
    if args.format == "json":
        emit_json(result.to_dict(args.ci_prob))
    else:
        emit(_text(result, args.ci_prob))
    return 0
