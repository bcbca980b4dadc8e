"""CPU and wall time of the default ``oscar bayes`` on MT-Bench, with its diagnostics and posterior.

One run per process, as a user meets it: compilation included, the prompt × candidate
model that the default rule picks on MT-Bench, the default model (OSCAR; no response
file, so the length term is dropped as in ``oscar bayes judgments.json``). Records CPU
seconds of the process (all threads), wall seconds, the load average, the diagnostics
(max R-hat, min bulk and tail ESS, divergences) and posterior summaries (mean, sd and
bulk ESS of x = γ̄·s, q against the field and κ, P(best) with its Monte Carlo SE), so
that two runs (before / after a sampler change) can be compared within Monte Carlo error:

    python benchmarks/bench_bayes_mtbench.py --label after --out /tmp/after.json [fit_bayes options]
    python benchmarks/bench_bayes_mtbench.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

import numpy as np

REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _ess(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS over (chains, draws, n) draws, one per n."""
    from arviz_stats.base import array_stats

    return np.atleast_1d(np.asarray(array_stats.ess(np.asarray(draws, float), chain_axis=0, draw_axis=1,
                                                    method="bulk")))


def _summary(draws: np.ndarray, names) -> dict:
    """Per name: posterior mean, sd and bulk ESS of (chains, draws, n) draws."""
    ess = _ess(draws)
    flat = draws.reshape(-1, draws.shape[-1])
    return {str(n): {"mean": float(flat[:, i].mean()), "sd": float(flat[:, i].std()), "ess": float(ess[i])}
            for i, n in enumerate(names)}


def run(args) -> dict:
    load0, t0, c0 = os.getloadavg(), time.perf_counter(), _cpu()
    from oscar_jax.io.data import shared_data_dir
    from oscar_jax.model.problem import as_design
    from oscar_jax.runtime.x64 import one_thread_cpu_backend

    path = Path(args.data) if args.data else shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json"
    # as `oscar bayes` does: the backend starts with one intra-op thread (--cpu-threads all: XLA's pool)
    with one_thread_cpu_backend() if args.cpu_threads == "one" else nullcontext():
        design = as_design(path, reference_judge=REFERENCE_JUDGE)
    from oscar_jax.bayes import BayesWarning, fit_bayes

    kwargs = {k: v for k, v in (("chains", args.chains), ("warmup", args.warmup), ("draws", args.draws),
                                ("init", args.init), ("target_accept", args.target_accept)) if v is not None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)  # the record holds the diagnostics
        t1, c1 = time.perf_counter(), _cpu()
        post = fit_bayes(design, "oscar", seed=args.seed, show_progress=False, **kwargs)
        wall_fit, cpu_fit = time.perf_counter() - t1, _cpu() - c1
    d = post.diagnostics
    x, qf, kappa = post.population("x"), post.draws("q_field"), post.population("kappa")
    best = np.argmax(x, axis=-1)                         # (chains, draws) index of the best candidate
    cands = list(design.candidates)
    pbest = {}
    for i, c in enumerate(cands):
        ind = (best == i).astype(float)
        p = float(ind.mean())
        ess = float(_ess(ind[..., None])[0]) if 0 < p < 1 else float(ind.size)
        pbest[c] = {"p": p, "mcse": float(np.sqrt(p * (1 - p) / max(ess, 1.0)))}
    judges = list(design.judges)
    return {
        "label": args.label, "settings": {**kwargs, "seed": args.seed, "cpu_threads": args.cpu_threads},
        "attrs": dict(post.idata.posterior.attrs) if hasattr(post.idata.posterior, "attrs") else {},
        "cpu_s_total": _cpu() - c0, "wall_s_total": time.perf_counter() - t0,
        "cpu_s_fit_bayes": cpu_fit, "wall_s_fit_bayes": wall_fit,
        "load_start": list(load0), "load_end": list(os.getloadavg()), "cores": os.cpu_count(),
        "diagnostics": {k: (float(v) if isinstance(v, (int, float, np.floating, np.integer)) else v)
                        for k, v in d.items() if k in ("max_rhat", "worst_rhat", "min_ess", "min_ess_bulk",
                                                        "worst_ess_bulk", "min_ess_tail", "worst_ess_tail",
                                                        "divergences", "tree_depth_hits")},
        "timing": {k: float(v) for k, v in post.timing.items()},
        "x": _summary(x, cands), "q_field": _summary(qf, cands), "kappa": _summary(kappa, judges),
        "p_best": pbest,
        "sigma_prompt": _summary(np.asarray(post.idata.posterior["sigma_prompt"].values)[..., None], ["sigma_u"])
        if "sigma_prompt" in post.idata.posterior.data_vars else None,
    }


def compare(a: dict, b: dict) -> str:
    """Largest |z| of the posterior differences: Δmean / √(sd_a²/ESS_a + sd_b²/ESS_b)."""
    lines = [f"{a['label']} → {b['label']}: CPU {a['cpu_s_total']:.0f} → {b['cpu_s_total']:.0f} s, wall "
             f"{a['wall_s_total']:.0f} → {b['wall_s_total']:.0f} s"]
    worst = (0.0, "")
    for block in ("x", "q_field", "kappa", "sigma_prompt"):
        if not a.get(block) or not b.get(block):
            continue
        for name, ra in a[block].items():
            rb = b[block][name]
            se = np.sqrt(ra["sd"] ** 2 / ra["ess"] + rb["sd"] ** 2 / rb["ess"])
            z = (rb["mean"] - ra["mean"]) / se if se > 0 else 0.0
            if abs(z) > abs(worst[0]):
                worst = (z, f"{block}[{name}]")
    for c, pa in a["p_best"].items():
        pb = b["p_best"][c]
        se = np.hypot(pa["mcse"], pb["mcse"])
        z = (pb["p"] - pa["p"]) / se if se > 0 else 0.0
        if abs(z) > abs(worst[0]):
            worst = (z, f"p_best[{c}]")
    lines.append(f"largest |z| over x, q_field, κ, σ_u and P(best): {worst[0]:+.2f} ({worst[1]})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--label", default="run")
    parser.add_argument("--out", type=Path, default=None, help="JSON record of the run")
    parser.add_argument("--data", default=None, help="judgments file (default: the shared MT-Bench release)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--init", default=None, help="fit_bayes init= (default: fit_bayes's default)")
    parser.add_argument("--target-accept", type=float, default=None, help="fit_bayes target_accept=")
    parser.add_argument("--cpu-threads", choices=["one", "all"], default="one",
                        help="XLA's CPU intra-op pool: one thread as `oscar bayes` starts it (default), or all CPUs")
    parser.add_argument("--compare", nargs=2, type=Path, default=None, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        print(compare(a, b))
        return 0
    record = run(args)
    text = json.dumps(record, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    d = record["diagnostics"]
    print(f"{record['label']}: CPU {record['cpu_s_total']:.1f} s, wall {record['wall_s_total']:.1f} s (fit_bayes "
          f"{record['cpu_s_fit_bayes']:.1f} CPU-s), load {record['load_start'][0]:.1f}→{record['load_end'][0]:.1f}; "
          f"R-hat {d['max_rhat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f}, min tail ESS {d['min_ess_tail']:.0f}, "
          f"divergences {d['divergences']:.0f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
