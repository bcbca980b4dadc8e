"""The audit's worked example (docs/audit.md) with the Bayesian model fitted by SVI.

Same data as ``oscar audit`` on the worked example (``RETAILER_EXAMPLE``, seed 0, 2,000
items × 7 conditions × 10 runs; ``--items`` for a smaller version), the same model and
the same sufficient statistics, through ``fit_audit_model(..., method="svi")``. Prints δ
(log-odds, relative to Retailer A) with 95 % intervals next to NUTS: the numbers
published in docs/audit.md (2 chains × 300 draws, 12 min 45 s) for the full example, or
a NUTS run of this script (``--nuts``) for a smaller one.

    python benchmarks/studies/audit_svi.py [--items 2000] [--steps 2000] [--lr 0.08] [--nuts]

The SVI settings are the audit's defaults (``AUDIT_SVI``) with the steps and rate given.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from oscar_jax.audit import RETAILER_EXAMPLE, fit_audit_model, simulate_audit_data  # noqa: E402
from oscar_jax.audit.bayes_svi import AUDIT_SVI  # noqa: E402

# docs/audit.md, worked example (2,000 items), NUTS 2 × (300 + 300): mean, 95 % interval
NUTS_2000 = {"Original": (0.67, 0.56, 0.79), "Retailer B": (-0.38, -0.48, -0.28),
             "Retailer C": (-0.45, -0.55, -0.35), "Retailer D": (-0.48, -0.58, -0.38),
             "Retailer E": (-0.62, -0.72, -0.51), "Retailer F": (-0.50, -0.60, -0.40),
             "others (mean)": (-0.49, -0.56, -0.41)}
OTHERS = ["Retailer B", "Retailer C", "Retailer D", "Retailer E", "Retailer F"]


def table(svi, nuts: dict) -> tuple[str, bool]:
    lines = [f"| condition | SVI mean | SVI 95% interval | NUTS mean | NUTS 95% interval | width ratio SVI/NUTS | "
             "SVI mean in NUTS interval |", "|---|---|---|---|---|---|---|"]
    inside = []
    for _, r in svi.summary.dropna(subset=["estimate"]).iterrows():
        m, lo, hi = nuts[r["condition"]]
        inside.append(lo <= r["estimate"] <= hi)
        lines.append(f"| {r['condition']} | {r['estimate']:+.3f} | [{r['lo']:+.3f}, {r['hi']:+.3f}] | {m:+.3f} | "
                     f"[{lo:+.3f}, {hi:+.3f}] | {(r['hi'] - r['lo']) / (hi - lo):.2f} | {inside[-1]} |")
    return "\n".join(lines), all(inside)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--guide", default="normal", choices=["normal", "lowrank"])
    parser.add_argument("--steps", type=int, default=AUDIT_SVI.steps)
    parser.add_argument("--lr", type=float, default=AUDIT_SVI.learning_rate)
    parser.add_argument("--nuts", action="store_true", help="also run NUTS (2 chains × (300 + 300), sequential)")
    args = parser.parse_args(argv)
    ex = RETAILER_EXAMPLE
    data = simulate_audit_data(0, args.items, 10, ex["params"], conditions=ex["conditions"])
    settings = replace(AUDIT_SVI, guide=args.guide, steps=args.steps, learning_rate=args.lr)
    t0 = time.perf_counter()
    svi = fit_audit_model(data, "Retailer A", others=OTHERS, method="svi", svi=settings, warn=False)
    t_svi = time.perf_counter() - t0
    d = svi.diagnostics
    print(f"SVI {args.guide}, {args.steps} steps, lr {args.lr}, {args.items} items: {t_svi:.1f} s wall; ELBO "
          f"plateau {d['plateau']} (last-window change {d['decrease_last_window']:.3g}, noise {d['noise_se']:.3g}, "
          f"ELBO still to gain {d.get('gain_left', float('nan')):.3g}); "
          f"hyper {({k: np.round(v['mean'], 3).tolist() for k, v in svi.hyper.items()})}")
    if args.nuts:
        t0 = time.perf_counter()
        nuts_fit = fit_audit_model(data, "Retailer A", others=OTHERS, num_warmup=300, num_samples=300, num_chains=2,
                                   chain_method="sequential", progress_bar=False)
        print(f"NUTS 2 × (300 + 300): {time.perf_counter() - t0:.1f} s wall; max R-hat "
              f"{nuts_fit.diagnostics['max_r_hat']:.3f}, {nuts_fit.diagnostics['divergences']} divergences; "
              f"hyper {({k: np.round(v['mean'], 3).tolist() for k, v in nuts_fit.hyper.items()})}")
        nuts = {r["condition"]: (r["estimate"], r["lo"], r["hi"])
                for _, r in nuts_fit.summary.dropna(subset=["estimate"]).iterrows()}
    elif args.items == 2000:
        nuts = NUTS_2000
    else:
        print("no NUTS reference for this size (pass --nuts)")
        return 0
    text, ok = table(svi, nuts)
    print(text)
    print(f"all SVI means inside the NUTS intervals: {ok}")
    return 0


if __name__ == "__main__":
    main()
