"""SVI against NUTS: calibration on MT-Bench and Appendix G datasets, speed at 10⁵/10⁶ records.

For each dataset both methods fit the same model (OSCAR, default priors). Per target
(q_ij, κ_k, D_k) we report max |mean_SVI − mean_NUTS| / sd_NUTS, the ratio of 95 %
interval widths (SVI / NUTS, median) and the interval-coverage ratio: the share of the
NUTS 95 % HDI that the SVI 95 % HDI covers (1 = SVI covers it all; < 1 = too narrow or
shifted), averaged over the targets. Speed rows time ``fit_bayes`` as a user calls it
(point-fit initialisation, compilation and SVI; the design is built beforehand).

    python benchmarks/bench_svi.py --out benchmarks/results/svi.md
    python benchmarks/bench_svi.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import oscar_jax as oj  # noqa: E402
from oscar_jax.bayes import BayesWarning, SviSettings, VariationalWarning, fit_bayes  # noqa: E402
from oscar_jax.io.data import shared_data_dir  # noqa: E402
from oscar_jax.model.problem import as_design  # noqa: E402

REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"
TARGETS = ("q", "kappa", "D")


def _flat(result, name):
    da = result.idata.posterior[name]
    return da.values.reshape(-1, *da.shape[2:])


def _hdi(x, prob=0.95):
    """Shortest interval per column (draws × targets)."""
    s = np.sort(x, axis=0)
    n = s.shape[0]
    m = int(np.floor(prob * n))
    widths = s[m:] - s[: n - m]
    i = np.argmin(widths, axis=0)
    cols = np.arange(s.shape[1])
    return s[i, cols], s[i + m, cols]


def compare(nuts, svi) -> dict:
    out = {}
    for name in TARGETS:
        a, b = _flat(nuts, name), _flat(svi, name)
        if a.ndim == 1:
            a, b = a[:, None], b[:, None]
        sd = a.std(0)
        keep = sd > 1e-12  # the reference judge's D or fixed columns are constants
        a, b, sd = a[:, keep], b[:, keep], sd[keep]
        lo_a, hi_a = _hdi(a)
        lo_b, hi_b = _hdi(b)
        overlap = np.clip(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b), 0, None)
        out[name] = {"max_dmean_over_sd": float(np.max(np.abs(b.mean(0) - a.mean(0)) / sd)),
                     "width_ratio": float(np.median((hi_b - lo_b) / (hi_a - lo_a))),
                     "coverage_ratio": float(np.mean(overlap / (hi_a - lo_a)))}
    return out


def agreement(ref, other) -> dict:
    """Two NUTS posteriors of one model: per target, max |Δ mean| / sd and max |Δ mean| / MC error.

    The MC error of the difference is √(mcse_ref² + mcse_other²), each from the bulk ESS;
    over some 50 targets a max |z| below about 3.3 is what two runs of the same posterior give.
    """
    import arviz_stats

    out = {}
    for name in TARGETS:
        a, b = _flat(ref, name), _flat(other, name)
        if a.ndim == 1:
            a, b = a[:, None], b[:, None]
        se = [np.atleast_1d(arviz_stats.mcse(r.idata, var_names=[name])[name].values).reshape(-1)
              for r in (ref, other)]
        sd = a.std(0)
        keep = sd > 1e-12
        d = np.abs(b.mean(0) - a.mean(0))[keep]
        out[name] = {"max_dmean_over_sd": float(np.max(d / sd[keep])),
                     "max_z": float(np.max(d / np.hypot(se[0][keep], se[1][keep])))}
    return out


NUTS_INITS = (("uniform", {}), ("svi, same warm-up", {"init": "svi"}),
              ("svi, warm-up 300", {"init": "svi", "warmup": 300}))


def nuts_init(designs, configs=NUTS_INITS):
    """Default NUTS against NUTS started from SVI; ``designs`` holds (name, design, prompt_effect)."""
    rows = []
    for name, design, effect in designs:
        ref = None
        for label, kw in configs:
            cpu = time.process_time()
            r, t = _fit(design, "nuts", prompt_effect=effect, show_progress=False, **kw)
            d = r.diagnostics
            row = {"dataset": name, "start": label, "warmup": kw.get("warmup", 1000), "s": t,
                   "cpu_s": time.process_time() - cpu,
                   "svi_s": r.timing.get("svi_start_s", 0.0), "max_rhat": d["max_rhat"], "min_ess": d["min_ess"],
                   "divergences": d.get("divergences"), "ok": d["ok"], "prompt_effect": str(r.prompt_effect)}
            if ref is None:
                ref = r
            else:
                row["vs_uniform"] = agreement(ref, r)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _fit(design, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (VariationalWarning, BayesWarning))
        t0 = time.perf_counter()
        # the plain model, as in the calibration tables of docs/bayes.md (the default would turn
        # the prompt × candidate effect on where prompts carry several records)
        r = fit_bayes(design, "oscar", method=method, warn=False, prompt_effect=kw.pop("prompt_effect", False), **kw)
        return r, time.perf_counter() - t0


def calibration(designs, guides, svi_steps, warmup=1000, draws=1000):
    rows = []
    for name, design in designs:
        nuts, t_nuts = _fit(design, "nuts", warmup=warmup, draws=draws)
        ess = nuts.diagnostics["min_ess"]
        row = {"dataset": name, "nuts_s": t_nuts, "nuts_min_ess": ess, "nuts_ess_per_s": ess / t_nuts,
               "nuts_ok": nuts.diagnostics["ok"]}
        for guide in guides:
            svi, t_svi = _fit(design, "svi", svi=SviSettings(guide=guide, steps=svi_steps))
            row[guide] = {"s": t_svi, "plateau": svi.diagnostics["plateau"], **compare(nuts, svi)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def large(n_records, n_cand=50, n_judge=20, seed=0):
    from benchmarks.bench_scaling import sim_params

    params = sim_params(n_cand, n_judge, seed)
    t0 = time.perf_counter()
    design = oj.simulate_design(seed=seed, n_prompts=n_records // n_judge, params=params)
    build = time.perf_counter() - t0
    svi, t_svi = _fit(design, "svi")
    return {"n_records": n_records, "cells": int(design.arrays.stats.shape[0]), "build_s": build, "svi_s": t_svi,
            "timing": svi.timing, "plateau": svi.diagnostics["plateau"], "batch": svi.diagnostics["batch_size"]}


STATS = (("max_dmean_over_sd", "max Δmean/sd"), ("width_ratio", "width ratio"),
         ("coverage_ratio", "coverage ratio"))


def summary(cal, guides) -> list[str]:
    """Per guide and quantity: MT-Bench, and median [min, max] over the simulated datasets."""
    sims = [r for r in cal if r["dataset"] != "MT-Bench"]
    mt = [r for r in cal if r["dataset"] == "MT-Bench"]
    lines = [f"Summary over {len(sims)} Appendix G datasets (median [min, max]) and on MT-Bench:", "",
             "| guide | quantity | " + " | ".join(f"{label} (Appendix G)" for _, label in STATS)
             + (" | " + " | ".join(f"{label} (MT-Bench)" for _, label in STATS) if mt else "") + " |",
             "|---|---|" + "---|" * (len(STATS) * (2 if mt else 1))]
    for guide in guides:
        for t, label in zip(TARGETS, ("q", "κ", "D")):
            cells = []
            for key, _ in STATS:
                v = np.array([r[guide][t][key] for r in sims])
                cells.append(f"{np.median(v):.2f} [{v.min():.2f}, {v.max():.2f}]" if v.size else "–")
            if mt:
                cells += [f"{mt[0][guide][t][key]:.2f}" for key, _ in STATS]
            lines.append(f"| {guide} | {label} | " + " | ".join(cells) + " |")
    return lines


def markdown(cal, big, load, guides=("normal", "lowrank"), chains="4 × (1000 + 1000)") -> str:
    lines = ["# SVI against NUTS (`benchmarks/bench_svi.py`)", "",
             f"Machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} at start / end.", "",
             f"Calibration: OSCAR, default priors, plain model; NUTS {chains}; SVI 3000 Adam steps, 4000 draws. "
             "Δ = max |mean_SVI − mean_NUTS| / sd_NUTS; width = median 95 % HDI width ratio SVI/NUTS; "
             "cover = mean share of the NUTS HDI covered by the SVI HDI.", "",
             "| dataset | NUTS s | NUTS ESS/s | guide | SVI s | plateau | Δq | Δκ | ΔD | width q | width κ | width D "
             "| cover q | cover κ | cover D |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in cal:
        for guide in guides:
            if guide not in r:
                continue
            g = r[guide]
            lines.append(f"| {r['dataset']} | {r['nuts_s']:.1f} | {r['nuts_ess_per_s']:.0f} | {guide} | {g['s']:.1f} | "
                         f"{g['plateau']} | " + " | ".join(f"{g[t]['max_dmean_over_sd']:.2f}" for t in TARGETS) + " | "
                         + " | ".join(f"{g[t]['width_ratio']:.2f}" for t in TARGETS) + " | "
                         + " | ".join(f"{g[t]['coverage_ratio']:.2f}" for t in TARGETS) + " |")
    if cal:
        lines += [""] + summary(cal, guides)
    if not big:
        return "\n".join(lines) + "\n"
    lines += ["", "Speed (C = 50, K = 20, non-collapsing records; `fit_bayes(method='svi')` wall time including "
              "the point-fit start and compilation; building the Design is listed separately):", "",
              "| records | cells | batch | build Design s | point fit s | SVI s (incl. compile) | fit_bayes total s | "
              "plateau |", "|---|---|---|---|---|---|---|---|"]
    for b in big:
        lines.append(f"| {b['n_records']:,} | {b['cells']:,} | {b['batch']:,} | {b['build_s']:.1f} | "
                     f"{b['timing']['point_fit_s']:.1f} | {b['timing']['svi_s_including_compile']:.1f} | "
                     f"{b['svi_s']:.1f} | {b['plateau']} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sim", type=int, default=5, help="Appendix G datasets (N = 2500 each)")
    parser.add_argument("--sim-start", type=int, default=0, help="first Appendix G dataset (seed 100 + this)")
    parser.add_argument("--no-mtbench", action="store_true", help="Appendix G datasets only")
    parser.add_argument("--nuts-init", default=None,
                        help="time NUTS from uniform vs from SVI on these of mtbench,appg (no calibration)")
    parser.add_argument("--starts", default="0,1,2", help="which NUTS_INITS to time (indices)")
    parser.add_argument("--render", nargs="+", default=None,
                        help="write the calibration tables from the JSON rows of earlier runs' logs (no fitting)")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--guides", default="normal,lowrank")
    parser.add_argument("--nuts-warmup", type=int, default=1000)
    parser.add_argument("--nuts-draws", type=int, default=1000)
    parser.add_argument("--no-calibration", action="store_true", help="speed rows only")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    guides = args.guides.split(",")
    if args.quick:
        design = oj.simulate_design(seed=0, n_prompts=60)
        nuts, t_nuts = _fit(design, "nuts", chains=2, warmup=100, draws=100)
        svi, t_svi = _fit(design, "svi", svi=SviSettings(steps=500, draws=400))
        return {"run_all": [{"package": "SVI normal (quick smoke run)", "package_s": t_svi,
                             "alternative": "NUTS 2×(100+100)", "alternative_s": t_nuts}],
                "compare": compare(nuts, svi)}
    if args.nuts_init:
        designs = {"mtbench": lambda: ("MT-Bench", as_design(shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json",
                                                             reference_judge=REFERENCE_JUDGE), None),
                   "appg": lambda: ("Appendix G seed 0 (N=2500), plain model",
                                    oj.simulate_design(seed=100, n_prompts=500), False)}
        starts = [NUTS_INITS[int(i)] for i in args.starts.split(",")]
        rows = nuts_init([designs[k]() for k in args.nuts_init.split(",")], starts)
        return {"nuts_init": rows}
    if args.render:
        rows = [json.loads(line) for log in args.render for line in Path(log).read_text().splitlines()
                if line.startswith('{"dataset"')]
        rows.sort(key=lambda r: (r["dataset"] != "MT-Bench", int(r["dataset"].split()[3]) if "seed" in r["dataset"] else 0))
        text = markdown(rows, [], (load0, os.getloadavg()[0]), guides, f"4 × ({args.nuts_warmup} + {args.nuts_draws})")
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return {"calibration": rows}
    designs = []
    mt = shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json"
    if mt.exists() and not (args.no_calibration or args.no_mtbench):
        designs.append(("MT-Bench", as_design(mt, reference_judge=REFERENCE_JUDGE)))
    designs += [(f"Appendix G seed {s} (N=2500)", oj.simulate_design(seed=100 + s, n_prompts=500))
                for s in range(args.sim_start, args.sim_start + (0 if args.no_calibration else args.sim))]
    cal = calibration(designs, guides, 3000, args.nuts_warmup, args.nuts_draws)
    big = []
    for n in [int(x) for x in args.sizes.split(",") if x]:
        big.append(large(n))
        print(json.dumps(big[-1]), flush=True)
    text = markdown(cal, big, (load0, os.getloadavg()[0]), guides, f"4 × ({args.nuts_warmup} + {args.nuts_draws})")
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    rows = []
    for r in cal:
        if r["dataset"] == "MT-Bench":
            for guide in guides:
                g = r[guide]
                rows.append({"package": f"SVI {guide} on MT-Bench (max |Δmean|/sd q {g['q']['max_dmean_over_sd']:.2f}, "
                                        f"κ {g['kappa']['max_dmean_over_sd']:.2f}, D {g['D']['max_dmean_over_sd']:.2f})",
                             "package_s": g["s"], "alternative": "NUTS 4×(1000+1000)", "alternative_s": r["nuts_s"],
                             "note": f"NUTS ESS/s {r['nuts_ess_per_s']:.0f}"})
    for b in big:
        rows.append({"package": f"SVI at {b['n_records']:,} records (C=50, K=20)", "package_s": b["svi_s"],
                     "note": f"goal at 10^6: < 120 s; build Design {b['build_s']:.0f} s not included"})
    return {"run_all": rows, "calibration": cal, "large": big}


if __name__ == "__main__":
    main()
