"""Calibration study of the audit tests (issue 7): false-positive rate under no effect,
power under a small effect, coverage of the intervals, for the paper's t-test across
runs and for the paired item-level analyses and the Bayesian model.

Each scenario is one compiled call over all simulated audits
(:func:`oscar_jax.audit.calibration_study`; :func:`~oscar_jax.audit.bayes_calibration`
samples all audits in one NUTS run). Writes a Markdown report that states its settings;
every rate carries its Monte Carlo standard error.

    python benchmarks/bench_audit.py                 # full study (~16 min on 2 shared cores)
    python benchmarks/bench_audit.py --quick         # smoke run, tiny sizes (~1 min)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

import oscar_jax  # noqa: F401
from oscar_jax.audit import (
    AuditSimParams,
    bayes_calibration,
    calibration_study,
    summarize_calibration,
)

RESULTS = Path(__file__).resolve().parent / "results" / "audit_calibration.md"

# name, description, params, n_items, n_reps; cond0 is the reference, cond1 and cond3
# have no effect (false positives), cond2 a small one (power; coverage everywhere).
SCENARIOS = [
    ("noisy judge", "run noise s = 1 (duplicate runs agree on ~50% of items), no interaction",
     AuditSimParams(effects=(0.0, 0.0, -0.1, 0.0), interaction_sd=0.0), 2000, 10),
    ("consistent judge + interaction", "s = 0.2 (duplicates agree on ~87%), item × condition sd 0.4",
     AuditSimParams(effects=(0.0, 0.0, -0.03, 0.0), interaction_sd=0.4, noise_scale=0.2), 2000, 10),
    ("3 runs, consistent judge + interaction", "as above with 3 runs",
     AuditSimParams(effects=(0.0, 0.0, -0.03, 0.0), interaction_sd=0.4, noise_scale=0.2), 2000, 3),
    ("single run (deterministic model)", "one run: the t-test across runs is not available",
     AuditSimParams(effects=(0.0, 0.0, -0.05, 0.0), interaction_sd=0.4, noise_scale=0.2), 2000, 1),
    ("probabilities (pRel)", "logit pRel: noise sd 0.3, interaction sd 0.2",
     AuditSimParams(kind="prob", effects=(0.0, 0.0, -0.03, 0.0), interaction_sd=0.2, noise_sd=0.3), 2000, 10),
]
# name, params, n_items, n_reps, whether the model has the item × condition term u. The
# third fits the model without u to data that have it: what leaving u out costs.
BAYES = [
    ("labels, no interaction", AuditSimParams(effects=(0.0, 0.0, 0.3), interaction_sd=0.0), 60, 4, False),
    ("labels, interaction sd 0.5", AuditSimParams(effects=(0.0, 0.0, 0.3), interaction_sd=0.5), 60, 4, True),
    ("labels, interaction sd 0.5, model without u", AuditSimParams(effects=(0.0, 0.0, 0.3), interaction_sd=0.5),
     60, 4, False),
    ("pRel, interaction sd 0.3", AuditSimParams(kind="prob", effects=(0.0, 0.0, 0.2), interaction_sd=0.3,
                                                noise_sd=0.5), 60, 4, True),
]
METHODS = ("ttest_runs", "bootstrap_items", "mcnemar_clustered", "sign_exact")


def _rate(r, se) -> str:
    return "–" if r is None or not np.isfinite(r) else f"{r:.3f} ± {se:.3f}"


def _sizes(args):
    if args.quick:
        return 8, 30, 100           # audits, items, bootstrap replicates (≥ 100, as the CLI asks)
    return args.audits, None, args.boot


def frequentist(args) -> tuple[list[str], list[dict]]:
    lines, summary = [], []
    n_audits, quick_items, n_boot = _sizes(args)
    for name, desc, params, n_items, n_reps in SCENARIOS:
        n_items = quick_items or n_items
        if args.quick:  # 3 runs stand for several: the runs-based scenarios share one compiled study per kind
            n_reps = min(n_reps, 3)
        t0 = time.perf_counter()
        out = calibration_study(args.seed, n_audits, n_items, n_reps, params, n_boot=n_boot)
        secs = time.perf_counter() - t0
        tab = summarize_calibration(out)
        tab = tab[tab.contrast.isin(["cond1", "cond2", "others (mean)"])]
        for method in METHODS:
            for metric in tab["metric"].unique():
                block = tab[(tab.metric == metric) & (tab.method == method)]
                if not len(block):
                    continue
                row = {"scenario": name, "metric": metric, "method": method}
                for contrast, key in (("cond1", "null"), ("cond2", "effect")):
                    r = block[block.contrast == contrast].iloc[0]
                    row.update({f"{key}_reject": r["reject"], f"{key}_reject_se": r["reject_se"],
                                f"{key}_cov": r["coverage"], f"{key}_cov_se": r["coverage_se"]})
                summary.append(row)
        lines += [f"### {name}", "", f"{desc}; {n_audits} audits × {n_items} items × {params.n_conditions} "
                  f"conditions × {n_reps} runs; {n_boot} bootstrap replicates; {secs:.0f} s (compile included).",
                  "", "| metric | method | contrast | true Δ (pp) | reject at 5% | coverage |", "|---|---|---|---|---|---|"]
        for _, r in tab.iterrows():
            lines.append(f"| {r['metric']} | {r['method']} | {r['contrast']} | {100 * r['truth']:+.2f} | "
                         f"{_rate(r['reject'], r['reject_se'])} | {_rate(r['coverage'], r['coverage_se'])} |")
        lines.append("")
        print("\n".join(lines[-len(tab) - 6:]), flush=True)
    return lines, summary


def summary_table(rows: list[dict]) -> list[str]:
    """Scenario × metric × test: false-positive rate, power, coverage (± MC se)."""
    lines = ["| scenario | metric | test | false-positive rate (cond1, δ = 0) | power (cond2) | coverage (cond1) | "
             "coverage (cond2) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['metric']} | {r['method']} | {_rate(r['null_reject'], r['null_reject_se'])} | "
                     f"{_rate(r['effect_reject'], r['effect_reject_se'])} | {_rate(r['null_cov'], r['null_cov_se'])} | "
                     f"{_rate(r['effect_cov'], r['effect_cov_se'])} |")
    return lines


def bayesian(args) -> list[str]:
    warm, draws = (50, 50) if args.quick else (args.warmup, args.draws)
    n_audits = 4 if args.quick else args.bayes_audits
    lines = ["## Bayesian model (equal-tailed 95% intervals of δ)", "",
             f"One NUTS run per scenario samples all {n_audits} audits (a plate over audits): 2 chains "
             f"(sequential) × ({warm} warm-up + {draws} draws), default priors (`BayesPrior()`). 'reject' = the "
             "interval excludes 0 (the false-positive rate for cond1, power for cond2). δ is on the log-odds of a "
             "more favourable label (labels) or on logit pRel.", "",
             "| scenario | audits × items × runs | model has u | condition (true δ) | coverage | reject | "
             "max R̂ | divergences | time |", "|---|---|---|---|---|---|---|---|---|"]
    for name, params, n_items, n_reps, inter in BAYES:
        n_items = 30 if args.quick else n_items
        t0 = time.perf_counter()
        res = bayes_calibration(args.seed, n_audits, n_items, n_reps, params, n_warmup=warm, n_draws=draws,
                                interaction=inter)
        secs = time.perf_counter() - t0
        for c, block in res.groupby("condition"):
            n = len(block)
            cov, rej = block["covered"].mean(), block["reject"].mean()
            lines.append(f"| {name} | {n_audits} × {n_items} × {n_reps} | {'yes' if inter else 'no'} | "
                         f"cond{c} ({block['truth'].iloc[0]:+.2f}) | {_rate(cov, np.sqrt(cov * (1 - cov) / n))} | "
                         f"{_rate(rej, np.sqrt(rej * (1 - rej) / n))} | {block['r_hat'].max():.3f} | "
                         f"{res.attrs['divergences']} | {secs:.0f} s |")
        cov = res["covered"].mean()
        lines.append(f"| {name} | | | all ({len(res)} intervals) | {_rate(cov, np.sqrt(cov * (1 - cov) / len(res)))} "
                     "| | | | |")
        print("\n".join(lines[-3:]), flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--audits", type=int, default=400, help="simulated audits per scenario (default 400)")
    parser.add_argument("--boot", type=int, default=500, help="bootstrap replicates (default 500)")
    parser.add_argument("--bayes-audits", type=int, default=100, help="audits per Bayesian scenario (default 100)")
    parser.add_argument("--warmup", type=int, default=200, help="NUTS warm-up per chain, Bayesian scenarios (default 200)")
    parser.add_argument("--draws", type=int, default=200, help="NUTS draws per chain, Bayesian scenarios (default 200)")
    parser.add_argument("--no-bayes", action="store_true", help="skip the Bayesian scenarios")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default=str(RESULTS), help=f"Markdown report (default {RESULTS})")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    n_audits, _, n_boot = _sizes(args)
    cmd = " ".join(["python benchmarks/bench_audit.py", *(argv if argv is not None else sys.argv[1:])])
    freq, summary = frequentist(args)
    bayes = [] if args.no_bayes else bayesian(args)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = ["# Audit calibration study (benchmarks/bench_audit.py)", "",
             f"Command: `{cmd.strip()}`{' (quick smoke run: tiny sizes, not a result)' if args.quick else ''}. "
             f"Seed {args.seed}; {n_audits} simulated audits per frequentist scenario, {n_boot} item-bootstrap "
             f"replicates, α = 0.05, two-sided tests, 95% intervals. Machine: {platform.machine()}, "
             f"{os.cpu_count()} CPUs (shared; 1-min load average at the end {load:.1f}), jax {jax.__version__}. "
             f"Total {time.perf_counter() - t0:.0f} s.", "",
             "Rates are shares of simulated audits; ± is the Monte Carlo standard error √(r(1−r)/n) "
             f"(for a 5% rate from {n_audits} audits: {np.sqrt(0.05 * 0.95 / n_audits):.3f}). "
             "cond0 is the reference; cond1 has no effect (its reject column is the false-positive rate), "
             "cond2 a small effect (power); 'others (mean)' is the paper's focal contrast (mean of cond1–cond3 "
             "minus cond0, which includes cond2's effect). Decision-rate and pRel contrasts are in percentage "
             "points of the population rates; coverage is of the population contrast. The simulator is "
             "`oscar_jax.audit.simulate` (latent y* = α_i + δ_c + u_ic + ε_icr; docs/audit.md).", "",
             "## Summary (α = 0.05)", ""] + summary_table(summary) + ["", "## Frequentist tests by scenario", ""]
    lines += freq + bayes
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
