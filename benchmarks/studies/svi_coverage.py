"""Coverage of SVI 95% intervals for q_ij on the Appendix G datasets of ``bayes_coverage.py``.

The same datasets (seed 20260 + rep, Table G1, c = 1, ρ = 0.6, N = 5 × prompts) and the
same q* as the NUTS study; SVI (AutoNormal, 3000 Adam steps, 4000 draws, started at the
point fit) on the plain model and with the prompt effect. Prints one line per replicate
and a summary next to NUTS' published 79.9% / 93.4%.

    python benchmarks/studies/svi_coverage.py --reps 50 --out benchmarks/results/svi_coverage.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from arviz_stats.base import array_stats

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import oscar_jax  # noqa: F401,E402
from oscar_jax.bayes import Priors, SviSettings, model_data, targets_of_draws, unconstrained_from_theta  # noqa: E402
from oscar_jax.bayes._svi import elbo_plateau, run_svi_jit  # noqa: E402
from oscar_jax.infer.fit_core import fit_core_jit  # noqa: E402
from oscar_jax.infer.selection import column_mask  # noqa: E402
from oscar_jax.model.params import Layout  # noqa: E402
from oscar_jax.simulate import TABLE_G1, simulate_jit  # noqa: E402
from oscar_jax.model.spec import parse_model  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--n-prompts", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20260)
    parser.add_argument("--guide", default="normal")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    params = TABLE_G1
    spec = parse_model("oscar")
    layout = Layout(params.n_cand, params.n_judge, 0, 0, spec.structure())
    priors = Priors().resolved(spec.ridge)
    settings = SviSettings(guide=args.guide)
    iu = np.triu_indices(params.n_cand, 1)
    rows = []
    for rep in range(args.reps):
        seed = args.seed + rep
        k_data, k_plain, k_prompt = jax.random.split(jax.random.PRNGKey(seed), 3)
        sim = simulate_jit(k_data, args.n_prompts, params)
        q_true = np.asarray(sim.truth.q)[iu]
        omega = jnp.ones(args.n_prompts)
        core = fit_core_jit(sim.arrays, omega, jnp.zeros((1, layout.n_theta)), layout=layout,
                            n_clusters=args.n_prompts, ridge=spec.ridge, v_bound=15.0, max_iter=100)
        mask = np.asarray(column_mask(sim.arrays, sim.arrays.stats, layout))
        free = np.flatnonzero(mask)
        for name, pe, key in (("svi_plain", False, k_plain), ("svi_prompt", True, k_prompt)):
            start = time.perf_counter()
            data = model_data(sim.arrays, mask, priors, layout, prompt_effect=pe)
            w0 = unconstrained_from_theta(jnp.asarray(np.asarray(core.theta)[free]), data.is_log_gamma)
            losses, draws, _ = run_svi_jit(key, data, w0, layout=layout, n_clusters=args.n_prompts if pe else None,
                                           settings=settings, batch=None)
            t = targets_of_draws(draws.theta, draws.sigma, jnp.asarray(free, jnp.int32), layout)
            q = np.asarray(t.q)[..., iu[0], iu[1]]
            hdi = np.asarray(array_stats.hdi(q, 0.95, axis=(0, 1)))
            rows.append({"rep": rep, "seed": seed, "method": name,
                         "coverage": float(np.mean((hdi[:, 0] <= q_true) & (q_true <= hdi[:, 1]))),
                         "mean_width": float(np.mean(hdi[:, 1] - hdi[:, 0])),
                         "plateau": elbo_plateau(np.asarray(losses))["plateau"],
                         "seconds": time.perf_counter() - start})
        print(f"rep {rep}: " + " ".join(f"{r['method']}={r['coverage']:.3f}" for r in rows[-2:]), flush=True)
    frame = pd.DataFrame(rows)
    if args.out:
        frame.to_csv(args.out, index=False)
    summary = frame.groupby("method").agg(coverage=("coverage", "mean"), sd=("coverage", "std"),
                                          width=("mean_width", "mean"), plateau=("plateau", "mean"),
                                          seconds=("seconds", "mean"), reps=("rep", "nunique"))
    summary["mc_se"] = summary["sd"] / np.sqrt(summary["reps"])
    print(summary.to_string())
    return 0


if __name__ == "__main__":
    main()
