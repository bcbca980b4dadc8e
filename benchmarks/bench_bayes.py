"""Wall time of Bayesian OSCAR on MT-Bench next to the point fit; writes a Markdown table.

NUTS, 4 chains (one after another) × (1000 warm-up + 1000 draws) at the defaults, on the shared
MT-Bench release (9,706 records → 300 cells). Compile time and steady-state sampling are
reported separately (a second run with another seed reuses the compiled program), with
the bulk ESS per second of steady-state sampling and the diagnostics reached.

    python benchmarks/bench_bayes.py                 # full benchmark (needs shared data)
    python benchmarks/bench_bayes.py --quick         # tiny simulated smoke run
    python benchmarks/bench_bayes.py --prompt-effect # also time the prompt-effect model
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import jax

import oscar_jax as oj
from oscar_jax.bayes import BayesWarning, NutsSettings, fit_bayes
from oscar_jax.io.data import shared_data_dir
from oscar_jax.model.problem import as_design

RESULTS = Path(__file__).resolve().parent / "results"
REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"


def _time(fn):
    start = time.perf_counter()
    out = fn()
    jax.block_until_ready(getattr(out, "theta", 0.0))
    return out, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--prompt-effect", action="store_true")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.quick:
        design, name = oj.simulate_design(seed=0, n_prompts=60), "simulated (quick)"
        # bench_svi.py --quick samples this design with these settings too: one compiled sampler
        args.chains, args.warmup, args.draws = 2, 100, 100
    else:
        design = as_design(shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json",
                           reference_judge=REFERENCE_JUDGE)
        name = "MT-Bench"
    _, t_fit_first = _time(lambda: oj.fit(design, "oscar", warn=False))
    _, t_fit = _time(lambda: oj.fit(design, "oscar", warn=False))
    rows = [("point fit (damped Newton + sandwich)", t_fit_first, t_fit, None, None)]
    variants = [(False, "Bayesian OSCAR")] + ([(True, "Bayesian OSCAR + prompt effect")] if args.prompt_effect else [])
    kwargs = dict(chains=args.chains, warmup=args.warmup, draws=args.draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)  # the table reports the diagnostics
        for pe, label in variants:
            first, t_first = _time(lambda: fit_bayes(design, "oscar", prompt_effect=pe, seed=0, **kwargs))
            second, t_second = _time(lambda: fit_bayes(design, "oscar", prompt_effect=pe, seed=1, **kwargs))
            rows.append((label, t_first, t_second, second.diagnostics, second.diagnostics["min_ess"] / t_second))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"# Bayesian OSCAR benchmark — {name}: {design.n_records:,} records, {design.n_cells} cells, "
             f"{design.n_clusters} prompts",
             "",
             f"{args.chains} chains (one after another) × ({args.warmup} warm-up + {args.draws} draws), default priors and "
             f"target_accept {NutsSettings().target_accept}; min ESS = the smaller of bulk and tail ESS over the "
             f"sampled parameters. Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared; 1-min load "
             f"average at the end {load:.1f}), jax {jax.__version__}. 'first' includes compilation; 'steady' is a "
             "second run with another seed reusing the compiled program.",
             "",
             "| estimator | first call (s) | steady (s) | min ESS | ESS/s (steady) | max R-hat | divergences |",
             "|---|---|---|---|---|---|---|"]
    for label, t1, t2, diag, ess_s in rows:
        if diag is None:
            lines.append(f"| {label} | {t1:.2f} | {t2:.3f} | – | – | – | – |")
        else:
            lines.append(f"| {label} | {t1:.1f} | {t2:.1f} | {diag['min_ess']:.0f} | {ess_s:.1f} | "
                         f"{diag['max_rhat']:.4f} | {diag['divergences']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "bayes_bench.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
