"""Calibration study of the audit tests (issue 7): false-positive rate under no effect,
power under a small effect, coverage of the intervals, for the paper's t-test across
runs and for the paired item-level analyses and the Bayesian model.

Each scenario is one compiled call over all simulated audits
(:func:`oscar_jax.audit.calibration_study`; :func:`~oscar_jax.audit.bayes_calibration`
samples all audits in one NUTS run). Writes a Markdown report.

    python benchmarks/bench_audit.py                 # full study (tens of minutes on 2 cores)
    python benchmarks/bench_audit.py --quick         # smoke run, tiny sizes
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

import oscar_jax  # noqa: F401
from oscar_jax.audit import AuditSimParams, bayes_calibration, calibration_study, summarize_calibration

RESULTS = Path(__file__).resolve().parent / "results" / "audit_calibration.md"

# name, description, params, n_items, n_reps; cond0 is the reference, cond1 has no
# effect (false positives), cond2 a small one (power; coverage everywhere).
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
BAYES = [
    ("labels, no interaction", AuditSimParams(effects=(0.0, 0.0, 0.3), interaction_sd=0.0), 150, 5, False),
    ("labels, interaction sd 0.5", AuditSimParams(effects=(0.0, 0.0, 0.3), interaction_sd=0.5), 150, 5, True),
    ("pRel, interaction sd 0.3", AuditSimParams(kind="prob", effects=(0.0, 0.0, 0.2), interaction_sd=0.3,
                                                noise_sd=0.5), 150, 5, True),
]


def frequentist(args) -> list[str]:
    lines = []
    for name, desc, params, n_items, n_reps in SCENARIOS:
        if args.quick:
            n_items, n_audits, n_boot = 60, 20, 100
        else:
            n_audits, n_boot = args.audits, args.boot
        t0 = time.perf_counter()
        out = calibration_study(args.seed, n_audits, n_items, n_reps, params, n_boot=n_boot)
        secs = time.perf_counter() - t0
        tab = summarize_calibration(out)
        tab = tab[tab.contrast.isin(["cond1", "cond2", "others (mean)"])]
        lines += [f"### {name}", "", f"{desc}; {n_audits} audits × {n_items} items × {params.n_conditions} "
                  f"conditions × {n_reps} runs; {n_boot} bootstrap replicates; {secs:.0f} s (compile included).",
                  "", "| metric | method | contrast | true Δ (pp) | reject at 5% | coverage |", "|---|---|---|---|---|---|"]
        for _, r in tab.iterrows():
            cov = "–" if not np.isfinite(r["coverage"]) else f"{r['coverage']:.3f} ± {r['coverage_se']:.3f}"
            lines.append(f"| {r['metric']} | {r['method']} | {r['contrast']} | {100 * r['truth']:+.2f} | "
                         f"{r['reject']:.3f} ± {r['reject_se']:.3f} | {cov} |")
        lines.append("")
        print("\n".join(lines[-len(tab) - 6:]), flush=True)
    return lines


def bayesian(args) -> list[str]:
    lines = ["## Bayesian model (equal-tailed 95% intervals of δ)", "",
             "| scenario | audits × items × runs | condition (true δ) | coverage | reject (interval excludes 0) | "
             "max R̂ | divergences | time |", "|---|---|---|---|---|---|---|---|"]
    for name, params, n_items, n_reps, inter in BAYES:
        n_audits = 4 if args.quick else args.bayes_audits
        n_items = 30 if args.quick else n_items
        warm, draws = (50, 50) if args.quick else (300, 300)
        t0 = time.perf_counter()
        res = bayes_calibration(args.seed, n_audits, n_items, n_reps, params, n_warmup=warm, n_draws=draws,
                                interaction=inter)
        secs = time.perf_counter() - t0
        for c, block in res.groupby("condition"):
            n = len(block)
            cov, rej = block["covered"].mean(), block["reject"].mean()
            lines.append(f"| {name} | {n_audits} × {n_items} × {n_reps} | cond{c} ({block['truth'].iloc[0]:+.2f}) | "
                         f"{cov:.3f} ± {np.sqrt(cov * (1 - cov) / n):.3f} | {rej:.3f} ± {np.sqrt(rej * (1 - rej) / n):.3f} | "
                         f"{block['r_hat'].max():.3f} | {res.attrs['divergences']} | {secs:.0f} s |")
        print("\n".join(lines[-2:]), flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--audits", type=int, default=400, help="simulated audits per scenario (default 400)")
    parser.add_argument("--boot", type=int, default=500, help="bootstrap replicates (default 500)")
    parser.add_argument("--bayes-audits", type=int, default=60, help="audits per Bayesian scenario (default 60)")
    parser.add_argument("--no-bayes", action="store_true", help="skip the Bayesian scenarios")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default=str(RESULTS), help=f"Markdown report (default {RESULTS})")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    lines = ["# Audit calibration study (benchmarks/bench_audit.py)", "",
             "Rates are shares of simulated audits; ± is the Monte Carlo standard error √(r(1−r)/n). "
             "cond0 is the reference; cond1 has no effect (its reject column is the false-positive rate), "
             "cond2 a small effect (power); 'others (mean)' is the paper's focal contrast. Decision-rate "
             "contrasts are in percentage points of the population rates.", ""]
    lines += ["## Frequentist tests", ""] + frequentist(args)
    if not args.no_bayes:
        lines += bayesian(args)
    lines += ["", f"Total {time.perf_counter() - t0:.0f} s; seed {args.seed}{' (quick)' if args.quick else ''}."]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
