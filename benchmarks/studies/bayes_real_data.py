"""Bayesian interval widths on real data against the prompt-cluster sandwich and the prompt bootstrap.

For each xu2026 dataset (MT-Bench, UltraFeedback, Chatbot Arena) fits the point model
(sandwich and model-based intervals), the prompt bootstrap, and the Bayesian model at the
defaults with the prompt × candidate effect and without any prompt effect, then records,
per candidate, the width of the 95% interval for q against the field under each method,
P(best), the upper end of the rank interval, and the sampler's diagnostics. Rows are
appended to a CSV as each dataset finishes; the Markdown summary goes next to it.

    python benchmarks/studies/bayes_real_data.py --data-dir ../shared/data
    python benchmarks/studies/bayes_real_data.py --datasets mtbench --bayes prompt
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
import pandas as pd

from arviz_stats.base import array_stats

import oscar_jax as oj
from oscar_jax.bayes import fit_bayes
from oscar_jax.model.problem import as_design
from oscar_jax.results.intervals import draw_ranks

RESULTS = Path(__file__).resolve().parents[1] / "results"
DATASETS = {"mtbench": "MT-Bench", "ultrafeedback": "UltraFeedback", "chatbot_arena": "Chatbot Arena"}
BAYES = {"prompt": "candidate", "plain": False, "slot": "slot"}


def _rank_ub(draw_scores: np.ndarray, prob: float = 0.95) -> np.ndarray:
    order = np.argsort(-draw_scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    ranks[np.arange(len(order))[:, None], order] = np.arange(1, draw_scores.shape[1] + 1)[None, :]
    return np.quantile(ranks, (1 + prob) / 2, axis=0, method="inverted_cdf")


def p_best_mc_se(post) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(C,) P(best), its Monte Carlo SE and the effective sample size of the best-indicator.

    The draws are autocorrelated, so the SE is √(p(1 − p)/ESS) with ESS of the 0/1
    indicator "candidate i is best in this draw" (ArviZ's ESS of the mean), not of the
    number of draws. A candidate never (or always) best has SE 0.
    """
    s = post.draws("s")                                  # (chains, draws, C)
    best = (draw_ranks(s.reshape(-1, s.shape[-1])) == 1).reshape(s.shape).astype(float)
    p = best.mean(axis=(0, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(array_stats.ess(best, method="mean", chain_axis=0, draw_axis=1))
        se = np.where((p > 0) & (p < 1), np.sqrt(p * (1 - p) / ess), 0.0)
    return p, se, ess


def run_dataset(key: str, path: Path, bayes: list[str], replicates: int, seed: int, warmup: int = 1000,
                draws: int = 1000, chains: int = 4) -> tuple[pd.DataFrame, dict]:
    design = as_design(path)
    point = oj.fit(design, seed=seed, warn=False)
    names = list(point.design.candidates)
    sw = point.leaderboard("sandwich").set_index("candidate")
    md = point.leaderboard("model").set_index("candidate")
    t0 = time.perf_counter()
    boot = oj.bootstrap(design, replicates=replicates, seed=seed, full=point, warn=False, show_progress=False)
    boot_s = time.perf_counter() - t0
    bl = boot.leaderboard().set_index("candidate")
    frame = pd.DataFrame({"dataset": key, "candidate": names,
                          "records": point.design.n_records, "prompts": point.design.n_clusters,
                          "q_point": sw.loc[names, "q_field"].to_numpy(),
                          "w_sandwich": (sw.q_field_hi - sw.q_field_lo).loc[names].to_numpy(),
                          "w_model": (md.q_field_hi - md.q_field_lo).loc[names].to_numpy(),
                          "w_boot": (bl.q_field_hi - bl.q_field_lo).loc[names].to_numpy(),
                          "p_best_boot": bl.p_best.loc[names].to_numpy(),
                          # replicates are independent: binomial MC SE over the successful ones
                          "p_best_boot_se": np.sqrt(bl.p_best.loc[names].to_numpy() * (1 - bl.p_best.loc[names].to_numpy())
                                                    / max(replicates - int(boot.failed), 1)),
                          "rank_ub_boot": bl.rank_hi.loc[names].to_numpy()})
    meta = {"dataset": key, "bootstrap_s": boot_s, "bootstrap_failed": int(boot.failed)}
    for b in bayes:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = fit_bayes(design, prompt_effect=BAYES[b], seed=seed, chains=chains, warmup=warmup, draws=draws,
                             warn=False)
        lb = post.leaderboard().set_index("candidate")
        s = post._flat("s")
        frame[f"q_{b}"] = lb.q_field.loc[names].to_numpy()
        frame[f"w_{b}"] = (lb.q_field_hi - lb.q_field_lo).loc[names].to_numpy()   # equal-tailed (the default)
        hdi = post.leaderboard("hdi").set_index("candidate")
        frame[f"w_{b}_hdi"] = (hdi.q_field_hi - hdi.q_field_lo).loc[names].to_numpy()
        p, se, ess = p_best_mc_se(post)
        frame[f"p_best_{b}"] = p
        frame[f"p_best_{b}_se"] = se
        frame[f"p_best_{b}_ess"] = ess
        frame[f"rank_ub_{b}"] = _rank_ub(s)
        d = post.diagnostics
        sig = post.sigma_prompt()
        meta[b] = {"seconds": time.perf_counter() - t0, "max_rhat": d["max_rhat"], "worst_rhat": d["worst_rhat"],
                   "min_ess": d["min_ess"], "divergences": d["divergences"], "tree_depth_hits": d["tree_depth_hits"],
                   "mean_leapfrog_steps": d["mean_leapfrog_steps"], "min_bfmi": d["min_bfmi"],
                   "sigma_u": None if sig is None else sig["mean"]}
    return frame, meta


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("OSCAR_DATA_DIR", str(Path(__file__).resolve().parents[3] / "shared" / "data")))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--bayes", default="prompt,plain", help="Bayesian models: prompt (× candidate), plain, slot")
    parser.add_argument("--replicates", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    parser.add_argument("--warmup", type=int, default=1000, help="NUTS warm-up per chain (default 1000)")
    parser.add_argument("--draws", type=int, default=1000, help="NUTS draws per chain (default 1000)")
    parser.add_argument("--out", default=str(RESULTS / "bayes_real_data.csv"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    bayes = [b.strip() for b in args.bayes.split(",") if b.strip()]
    frames, metas = [], []
    for key in [k.strip() for k in args.datasets.split(",") if k.strip()]:
        path = Path(args.data_dir) / "xu2026" / f"judge_results_10k_{key}.json"
        if not path.exists():
            print(f"skip {key}: {path} not found", file=sys.stderr)
            continue
        frame, meta = run_dataset(key, path, bayes, args.replicates, args.seed, args.warmup, args.draws,
                                  args.chains)
        frames.append(frame)
        metas.append(meta)
        pd.concat(frames).to_csv(out, index=False)
        out.with_suffix(".json").write_text(json.dumps(metas, indent=1, default=float) + "\n")
        print(json.dumps(meta, default=float), flush=True)
    write_markdown(pd.concat(frames), metas, bayes, out.with_suffix(".md"), os.getloadavg()[0], args)
    return 0


def _markdown(frame: pd.DataFrame) -> str:
    """A pipe table (3 decimals) without the optional ``tabulate`` dependency."""
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in frame.itertuples(index=False)]
    head = "| " + " | ".join(frame.columns) + " |"
    return "\n".join([head, "|" + "---|" * len(frame.columns)] + ["| " + " | ".join(r) + " |" for r in cells])


def write_markdown(frame: pd.DataFrame, metas: list[dict], bayes: list[str], path: Path, load: float, args) -> Path:
    lines = ["# Bayesian 95% intervals for q against the field on real data", "",
             "Width ratios per candidate (Bayesian equal-tailed interval's width / other interval's width), median and range over "
             "candidates. prompt = prompt × candidate effect (default), plain = no prompt effect. "
             f"NUTS {args.chains} × "
             f"({args.warmup} + {args.draws}), seed {args.seed}; prompt bootstrap {args.replicates} replicates. "
             f"Load average at the end: {load:.1f} ({os.cpu_count()} cores).", "",
             "| dataset | records/prompt | Bayes model | width / sandwich | width / bootstrap | max R-hat | min ESS | "
             "divergences | σ_u | seconds |", "|---|---|---|---|---|---|---|---|---|---|"]
    for meta in metas:
        sub = frame[frame.dataset == meta["dataset"]]
        rpp = sub.records.iloc[0] / sub.prompts.iloc[0]
        for b in bayes:
            r1, r2 = sub[f"w_{b}"] / sub.w_sandwich, sub[f"w_{b}"] / sub.w_boot
            m = meta[b]
            lines.append(f"| {DATASETS.get(meta['dataset'], meta['dataset'])} | {rpp:.2f} | {b} | "
                         f"{r1.median():.2f} ({r1.min():.2f}–{r1.max():.2f}) | {r2.median():.2f} ({r2.min():.2f}–{r2.max():.2f}) | "
                         f"{m['max_rhat']:.4f} | {m['min_ess']:.0f} | {m['divergences']} | "
                         f"{'' if m['sigma_u'] is None else f'{m['sigma_u']:.3f}'} | {m['seconds']:.0f} |")
    lines += ["", "Per candidate: P(best) with its Monte Carlo SE (bootstrap: binomial over replicates; Bayesian: "
              "√(p(1 − p)/ESS) with the ESS of the best-indicator), and the 97.5% rank quantile (Rank UB), "
              "bootstrap vs Bayesian.", ""]
    for meta in metas:
        sub = frame[frame.dataset == meta["dataset"]].sort_values("q_point", ascending=False)
        cols = ["candidate", "q_point", "w_sandwich", "w_boot"] + [c for b in bayes for c in (f"w_{b}",)]
        cols += ["p_best_boot", "p_best_boot_se"] + [c for b in bayes for c in (f"p_best_{b}", f"p_best_{b}_se")] + ["rank_ub_boot"] + [f"rank_ub_{b}" for b in bayes]
        lines += [f"## {DATASETS.get(meta['dataset'], meta['dataset'])}", "",
                  _markdown(sub[cols]), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return path


if __name__ == "__main__":
    sys.exit(main())
