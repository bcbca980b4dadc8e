"""A prompt bootstrap at Chatbot-Arena scale with continuous lengths (issue 16, part 2).

Simulated data as in ``bench_scaling.py`` (Appendix G generator, C candidates, K judges, one
cell per record), built into a design once, fitted, then B prompt-bootstrap replicates
with ``oscar_jax.bootstrap.bootstrap`` (one-step starts, compiled chunks), and a subset
started at θ̂ for comparison. Prints one Markdown block (wall and process CPU seconds).

    python benchmarks/bench_bootstrap_scale.py --records 1000000 --replicates 200 --theta-hat 20
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.bench_bootstrap import timed  # noqa: E402
from benchmarks.bench_scaling import _peak_mb, machine_line, sim_params  # noqa: E402
from oscar_jax.fit import fit  # noqa: E402
from oscar_jax.model.problem import as_design  # noqa: E402
from oscar_jax.bootstrap import bootstrap, fit_batch  # noqa: E402
from oscar_jax.model.problem import prepare  # noqa: E402
from oscar_jax.simulate import family_map_of, simulate_frame  # noqa: E402


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--candidates", type=int, default=50)
    p.add_argument("--judges", type=int, default=20)
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--theta-hat", type=int, default=20, help="replicates also run from θ̂ (0: none)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    params = sim_params(args.candidates, args.judges, args.seed)
    frame, t_sim, _ = timed(lambda: simulate_frame(seed=args.seed, n_prompts=args.records // args.judges,
                                                   params=params))
    design, t_design, _ = timed(lambda: as_design(frame, family_map=family_map_of(params)))
    full, t_fit_first, _ = timed(lambda: fit(design, "oscar", warn=False))
    full, t_fit, c_fit = timed(lambda: fit(design, "oscar", warn=False))
    boot, t_boot, c_boot = timed(lambda: bootstrap(design, "oscar", replicates=args.replicates, seed=args.seed,
                                                   full=full, show_progress=False))
    rows = [f"| one-step starts (default) | {args.replicates} | {t_boot:.1f} | {c_boot:.1f} | "
            f"{boot.batch.core.n_iter.mean():.2f} | {int(boot.batch.valid.sum())} |"]
    if args.theta_hat:
        r = min(args.theta_hat, args.replicates)
        problem = prepare(design, "oscar")
        at, t_at, c_at = timed(lambda: fit_batch(problem, omega=boot.batch.omega[:r], starts=full.theta,
                                                 show_progress=False))
        d = np.max(np.abs(at.theta - boot.batch.theta[:r])[at.valid & boot.batch.valid[:r]])
        rows.append(f"| θ̂ starts (before), first {r} replicates (incl. compiling its chunk shape) | {r} | {t_at:.1f} | "
                    f"{c_at:.1f} | {at.core.n_iter.mean():.2f} | {int(at.valid.sum())} (max |Δθ| vs one-step {d:.1e}) |")
    text = "\n".join([
        f"### Bootstrap at {args.records:,} records (C = {args.candidates}, K = {args.judges}, continuous lengths)", "",
        f"Machine: {machine_line()}; load average {os.getloadavg()[0]:.1f} at end.",
        f"Simulate {t_sim:.1f} s, design {t_design:.1f} s ({design.n_cells:,} cells, {design.n_clusters:,} prompts), "
        f"fit {t_fit_first:.1f} s first (compiling) / {t_fit:.1f} s ({c_fit:.1f} CPU-s) after; peak RSS {_peak_mb():.0f} MB.",
        "", "| starts | replicates | wall s | CPU s | evaluations per replicate | valid |", "|---|---|---|---|---|---|",
        *rows, ""])
    print(text)
    return text


if __name__ == "__main__":
    main()
