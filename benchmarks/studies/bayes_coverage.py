"""Coverage of 95% credible intervals for q_ij on simulated datasets, with and without
the prompt random effect, next to the point fit's sandwich and model-based intervals.

Two dependence structures (``--structure``):

* ``copula`` — Appendix G (Table G1, c = 1, ρ = 0.6): one pair per prompt judged by every
  judge, verdicts tied by a Gaussian copula per prompt.
* ``candidate`` — prompt × candidate effects: 3 candidates per prompt, all 3 pairs judged
  by every judge, s*_{i,g} = s*_i + σ_pc w_{g,i} (σ_pc = 0.5), no copula (ρ = 0); the
  truth is the prompt-averaged q*.

Each replicate draws one dataset with ``oscar_jax.simulate``, fits the Bayesian OSCAR
model with NUTS (``--bayes``: plain, prompt × candidate effect, slot shift) and the
penalized point fit once, and records, over the 28 candidate pairs, whether each 95%
interval for q_ij contains the true q*_ij. Per-replicate rows are appended to a CSV as
they finish (``--resume`` continues an interrupted study); the Markdown table
``benchmarks/results/<csv stem>.md`` summarizes the CSV.

    python benchmarks/studies/bayes_coverage.py --reps 50                      # Appendix G, N = 2500
    python benchmarks/studies/bayes_coverage.py --reps 50 --structure candidate --out benchmarks/results/bayes_coverage_candidate.csv
    python benchmarks/studies/bayes_coverage.py --quick                        # smoke run
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from arviz_stats.base import array_stats

import oscar_jax  # noqa: F401  (float64)
from oscar_jax.bayes import NutsSettings, Priors, model_data, sample_posterior_jit, targets_of_draws
from oscar_jax.infer.fit_core import fit_core_jit
from oscar_jax.infer.selection import column_mask
from oscar_jax.model.params import Layout
from oscar_jax.infer.sandwich import covariances, delta_se, targets
from oscar_jax.simulate import TABLE_G1, SimParams, simulate_jit
from oscar_jax.model.spec import parse_model

RESULTS = Path(__file__).resolve().parents[1] / "results"
Z95 = 1.959963984540054
FIELDS = ["rep", "seed", "n_records", "method", "coverage", "coverage_eti", "q_rmse", "mean_width",
          "max_rhat", "min_ess", "divergences", "mean_steps", "sigma_mean", "seconds"]

BAYES = {"plain": ("bayes_plain", False), "prompt": ("bayes_prompt", "candidate"), "slot": ("bayes_slot", "slot")}
STRUCTURES = {"copula": (TABLE_G1, 500),
              "candidate": (SimParams(rho=0.0, candidates_per_prompt=3, prompt_candidate_sd=0.5), 150)}

covariances_jit = jax.jit(covariances, static_argnames=("layout", "n_clusters"))


def point_intervals(sim, layout, n_prompts, ridge):
    """Point fit: q̂ with sandwich and model-based 95% intervals σ(ĥ ± 1.96 se) (Eq. 10)."""
    omega = jnp.ones(n_prompts)
    core = fit_core_jit(sim.arrays, omega, jnp.zeros((1, layout.n_theta)), layout=layout, n_clusters=n_prompts,
                        ridge=ridge, v_bound=15.0, max_iter=100)
    cov = covariances_jit(core.theta, core.mask, core.hess, core.info, sim.arrays, omega, layout=layout,
                          n_clusters=n_prompts, ridge=ridge)
    h = np.asarray(targets(core.theta, layout).h)
    out = {}
    for name, c in (("point_sandwich", cov.cluster), ("point_model", cov.model)):
        se = np.asarray(delta_se(lambda th: targets(th, layout).h, core.theta, c))
        out[name] = (jax.nn.sigmoid(h), jax.nn.sigmoid(h - Z95 * se), jax.nn.sigmoid(h + Z95 * se))
    return out, bool(core.ok)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--first", type=int, default=0,
                        help="first replicate (replicates --first … --reps − 1; split a study over processes)")
    parser.add_argument("--only", default="", help="comma-separated replicates to run (fills gaps of a split study)")
    parser.add_argument("--summarize", action="store_true",
                        help="only write the Markdown table of --out (e.g. after concatenating split CSVs)")
    parser.add_argument("--structure", choices=sorted(STRUCTURES), default="copula",
                        help="dependence structure: Appendix G copula or prompt × candidate effects")
    parser.add_argument("--n-prompts", type=int, default=None,
                        help="prompts per dataset (default 500 for copula, N = 2500; 150 for candidate, N = 2250)")
    parser.add_argument("--rho", type=float, default=None, help="copula correlation (default: the structure's)")
    parser.add_argument("--bayes", default="plain,prompt", help="Bayesian models to fit: plain, prompt, slot")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=600)
    parser.add_argument("--draws", type=int, default=600)
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument("--out", default=str(RESULTS / "bayes_coverage.csv"))
    parser.add_argument("--resume", action="store_true", help="skip replicates already in --out")
    parser.add_argument("--quick", action="store_true", help="1 small replicate (smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.n_prompts, args.warmup, args.draws = 1, 60, 40, 40
        args.out = str(Path(args.out).with_name("bayes_coverage_quick.csv"))
    base, default_prompts = STRUCTURES[args.structure]
    if args.n_prompts is None:
        args.n_prompts = default_prompts
    params = base.with_controls(rho=args.rho)
    args.rho = params.rho
    models = [BAYES[m.strip()] for m in args.bayes.split(",") if m.strip()]
    # quick: a depth cap bounds the short warm-up's trajectories (the prompt effect mixes slowly)
    settings = NutsSettings(chains=args.chains, warmup=args.warmup, draws=args.draws,
                            **({"max_tree_depth": 5} if args.quick else {}))
    if args.summarize:
        write_markdown(Path(args.out), args, settings)
        return 0
    spec = parse_model("oscar")
    layout = Layout(params.n_cand, params.n_judge, 0, 0, spec.structure())
    priors = Priors().resolved(spec.ridge)
    iu = np.triu_indices(params.n_cand, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.resume and out.exists():
        with out.open() as fh:
            done = {int(r["rep"]) for r in csv.DictReader(fh) if r["method"] == models[-1][0]}
    new_file = not out.exists() or not args.resume
    with out.open("w" if new_file else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        only = {int(r) for r in args.only.split(",") if r.strip()}
        for rep in range(args.first, args.reps):
            if rep in done or (only and rep not in only):
                continue
            seed = args.seed + rep
            k_data, k_plain, k_prompt = jax.random.split(jax.random.PRNGKey(seed), 3)
            sim = simulate_jit(k_data, args.n_prompts, params)
            q_true = np.asarray(sim.truth.q)[iu]
            n = int(sim.arrays.a.shape[0])
            rows = []
            start = time.perf_counter()
            intervals, ok = point_intervals(sim, layout, args.n_prompts, spec.ridge)
            for name, (q, lo, hi) in intervals.items():
                q, lo, hi = (np.asarray(x)[iu] for x in (q, lo, hi))
                rows.append({"method": name, "coverage": np.mean((lo <= q_true) & (q_true <= hi)), "coverage_eti": np.nan,
                             "q_rmse": np.sqrt(np.mean((q - q_true) ** 2)), "mean_width": np.mean(hi - lo),
                             "max_rhat": np.nan, "min_ess": np.nan, "divergences": int(not ok), "mean_steps": np.nan,
                             "sigma_mean": np.nan, "seconds": time.perf_counter() - start})
            mask = np.asarray(column_mask(sim.arrays, sim.arrays.stats, layout))
            free = jnp.asarray(np.flatnonzero(mask), jnp.int32)
            for name, pe in models:
                key = k_plain if not pe else k_prompt
                start = time.perf_counter()
                data = model_data(sim.arrays, mask, priors, layout, prompt_effect=pe)
                draws = sample_posterior_jit(key, data, layout=layout, n_clusters=args.n_prompts if pe else None,
                                             settings=settings)
                diff_sd = np.asarray(draws.sigma) * (np.sqrt(2.0) if pe == "candidate" else 1.0)
                t = targets_of_draws(draws.theta, diff_sd, free, layout)
                q = np.asarray(t.q)[..., iu[0], iu[1]]                  # (chains, draws, 28)
                hdi = np.asarray(array_stats.hdi(q, 0.95, axis=(0, 1)))  # (28, 2)
                eti = np.quantile(q.reshape(-1, q.shape[-1]), [0.025, 0.975], axis=0)
                sampled = [np.asarray(draws.theta)] + ([np.asarray(draws.sigma)[..., None], np.asarray(draws.z)] if pe else [])
                rhat = max(float(np.max(array_stats.rhat(x, chain_axis=0, draw_axis=1))) for x in sampled)
                ess = min(float(np.min(array_stats.ess(x, chain_axis=0, draw_axis=1))) for x in sampled)
                rows.append({"method": name,
                             "coverage": np.mean((hdi[:, 0] <= q_true) & (q_true <= hdi[:, 1])),
                             "coverage_eti": np.mean((eti[0] <= q_true) & (q_true <= eti[1])),
                             "q_rmse": np.sqrt(np.mean((q.mean(axis=(0, 1)) - q_true) ** 2)),
                             "mean_width": np.mean(hdi[:, 1] - hdi[:, 0]), "max_rhat": rhat, "min_ess": ess,
                             "divergences": int(np.asarray(draws.diverging).sum()),
                             "mean_steps": float(np.asarray(draws.n_steps).mean()),
                             "sigma_mean": float(np.asarray(draws.sigma).mean()) if pe else np.nan,
                             "seconds": time.perf_counter() - start})
                if pe and args.structure == "copula":
                    # the prompt-conditional q (z_g = 0), which the prompt-averaged q replaces
                    h = np.asarray(t.gamma_bar)[..., None] * (np.asarray(t.s)[..., iu[0]] - np.asarray(t.s)[..., iu[1]])
                    qc = 1.0 / (1.0 + np.exp(-h))
                    hc = np.asarray(array_stats.hdi(qc, 0.95, axis=(0, 1)))
                    rows.append({"method": "bayes_prompt_conditional",
                                 "coverage": np.mean((hc[:, 0] <= q_true) & (q_true <= hc[:, 1])),
                                 "coverage_eti": np.nan, "q_rmse": np.sqrt(np.mean((qc.mean(axis=(0, 1)) - q_true) ** 2)),
                                 "mean_width": np.mean(hc[:, 1] - hc[:, 0]), "max_rhat": rhat, "min_ess": ess,
                                 "divergences": rows[-1]["divergences"], "mean_steps": rows[-1]["mean_steps"],
                                 "sigma_mean": rows[-1]["sigma_mean"], "seconds": 0.0})
            for r in rows:
                writer.writerow({"rep": rep, "seed": seed, "n_records": n, **r})
            fh.flush()
            summary = " ".join(f"{r['method']}={r['coverage']:.3f}" for r in rows)
            print(f"rep {rep} ({sum(r['seconds'] for r in rows):.0f}s): {summary}", flush=True)
    if not args.quick:
        write_markdown(out, args, settings)
    return 0


def write_markdown(csv_path: Path, args, settings: NutsSettings) -> Path:
    """Summary table: mean coverage ± Monte Carlo SE over replicates, per method."""
    import pandas as pd

    frame = pd.read_csv(csv_path)
    reps = frame["rep"].nunique()
    n = int(frame["n_records"].iloc[0])
    labels = {"point_sandwich": "point fit, prompt-cluster sandwich (Eq. 10)",
              "point_model": "point fit, model-based",
              "bayes_plain": "Bayesian, plain",
              "bayes_prompt": "Bayesian + prompt × candidate effect, prompt-averaged q",
              "bayes_slot": "Bayesian + slot shift per prompt (older model), prompt-averaged q",
              "bayes_prompt_conditional": "Bayesian + prompt effect, prompt-conditional q (z = 0)"}
    what = ("Appendix G" if args.structure == "copula" else
            "prompt × candidate effects (3 candidates per prompt, σ_pc = 0.5)")
    lines = [f"# Coverage of 95% intervals for q_ij — {what}, N = {n}, "
             f"ρ = {args.rho}, {reps} datasets × 28 pairs",
             "",
             f"NUTS: {settings.chains} chains × ({settings.warmup} warm-up + {settings.draws} draws), "
             f"target_accept {settings.target_accept}, dense mass; default Normal(0, 1/λ) priors, λ = 0.05. "
             "Monte Carlo SE = sd over datasets / √datasets.",
             "",
             "| method | coverage (Bayes: HDI) | MC SE | Bayes: equal-tailed (the default interval) | MC SE | q RMSE | "
             "mean width (Bayes: HDI) | max R-hat | min ESS | divergences |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for method, label in labels.items():
        sub = frame[frame.method == method]
        if sub.empty:
            continue
        cov = sub.coverage
        eti, eti_se = sub.coverage_eti.mean(), sub.coverage_eti.std(ddof=1) / np.sqrt(len(sub))
        lines.append(f"| {label} | {100 * cov.mean():.1f}% | {100 * cov.std(ddof=1) / np.sqrt(len(sub)):.1f} | "
                     f"{' | ' if np.isnan(eti) else f'{100 * eti:.1f}% | {100 * eti_se:.1f}'} | {sub.q_rmse.mean():.4f} | {sub.mean_width.mean():.3f} | "
                     f"{'' if sub.max_rhat.isna().all() else f'{sub.max_rhat.max():.3f}'} | "
                     f"{'' if sub.min_ess.isna().all() else f'{sub.min_ess.min():.0f}'} | "
                     f"{int(sub.divergences.sum()) if method.startswith('bayes') else ''} |")
    sig = frame[frame.method == "bayes_prompt"].sigma_mean
    if len(sig):
        lines += ["", f"Posterior mean σ_u: {sig.mean():.3f} (range {sig.min():.3f}–{sig.max():.3f})."]
    path = csv_path.with_suffix(".md")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return path


if __name__ == "__main__":
    sys.exit(main())
