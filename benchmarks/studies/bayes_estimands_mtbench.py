"""MT-Bench: the sandwich, the prompt bootstrap and the posteriors with and without the prompt effect, side by side.

Four answers to "how sure is the leaderboard?" on the same data (OSCAR, reference judge
Qwen3-235B-A22B-Instruct-2507, no response file, as ``oscar fit`` / ``oscar bayes``
without ``--responses``):

* the pooled fit with its prompt-cluster sandwich (x = γ̄·ŝ and q against the field),
* the prompt bootstrap of the pooled fit (percentile intervals, share of replicates in
  which each candidate's *estimate* is best, with its binomial Monte Carlo SE),
* the plain posterior (records independent given θ; ``prompt_effect=False``),
* the prompt × candidate posterior (the default on MT-Bench), read from a
  ``bench_bayes_mtbench.py`` record (``--prompt-record``).

Writes ``benchmarks/results/bayes_estimands_mtbench.md``.
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

RESULTS = Path(__file__).resolve().parents[1] / "results"
REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"


def _pbest_mcse(ind: np.ndarray) -> tuple[float, float]:
    from arviz_stats.base import array_stats

    p = float(ind.mean())
    if not 0 < p < 1:
        return p, 0.0
    ess = float(np.atleast_1d(array_stats.ess(ind[..., None].astype(float), chain_axis=0, draw_axis=1,
                                              method="bulk"))[0])
    return p, float(np.sqrt(p * (1 - p) / ess))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--prompt-record", type=Path, required=True,
                        help="JSON of benchmarks/bench_bayes_mtbench.py at the defaults (prompt × candidate posterior)")
    parser.add_argument("--replicates", type=int, default=2000)
    args = parser.parse_args(argv)
    import oscar_jax as oj
    from oscar_jax.bayes import BayesWarning, fit_bayes
    from oscar_jax.model.problem import as_design
    from oscar_jax.io.data import shared_data_dir

    t0 = time.perf_counter()
    design = as_design(shared_data_dir() / "xu2026" / "judge_results_10k_mtbench.json", reference_judge=REFERENCE_JUDGE)
    cands = list(design.candidates)
    fit = oj.fit(design, "oscar", warn=False)
    lb = fit.leaderboard().set_index("candidate")
    boot = oj.bootstrap(design, "oscar", replicates=args.replicates, seed=0, full=fit, show_progress=False)
    blb = boot.leaderboard().set_index("candidate")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)
        plain = fit_bayes(design, "oscar", prompt_effect=False, seed=0, show_progress=False)
    px, pq = plain.draws("x"), plain.draws("q_field")
    best = np.argmax(px, axis=-1)
    prompt = json.loads(args.prompt_record.read_text())
    n_ok = boot.replicates - boot.failed
    rows = []
    for i, c in enumerate(cands):
        pb, pb_se = _pbest_mcse(best == i)
        bp = float(blb.loc[c, "p_best"])
        rows.append({
            "candidate": c,
            "x sandwich": f"{lb.loc[c, 'score']:.3f} [{lb.loc[c, 'score_lo']:.3f}, {lb.loc[c, 'score_hi']:.3f}]",
            "q sandwich": f"{lb.loc[c, 'q_field']:.3f} [{lb.loc[c, 'q_field_lo']:.3f}, {lb.loc[c, 'q_field_hi']:.3f}]",
            "q bootstrap": f"[{blb.loc[c, 'q_field_lo']:.3f}, {blb.loc[c, 'q_field_hi']:.3f}]",
            "P(best) bootstrap": f"{bp:.3f} ± {np.sqrt(bp * (1 - bp) / n_ok):.3f}",
            "x plain posterior": f"{px[..., i].mean():.3f} [{np.quantile(px[..., i], 0.025):.3f}, "
                                 f"{np.quantile(px[..., i], 0.975):.3f}]",
            "q plain posterior": f"{pq[..., i].mean():.3f} [{np.quantile(pq[..., i], 0.025):.3f}, "
                                 f"{np.quantile(pq[..., i], 0.975):.3f}]",
            "P(best) plain": f"{pb:.3f} ± {pb_se:.3f}",
            "x prompt posterior": f"{prompt['x'][c]['mean']:.3f} (sd {prompt['x'][c]['sd']:.3f})",
            "q prompt posterior": f"{prompt['q_field'][c]['mean']:.3f} (sd {prompt['q_field'][c]['sd']:.3f})",
            "P(best) prompt": f"{prompt['p_best'][c]['p']:.3f} ± {prompt['p_best'][c]['mcse']:.3f}",
        })
    top, second = "gpt-4", "claude-v1"
    i, j = cands.index(top), cands.index(second)
    margins = {
        "pooled fit, x": float(lb.loc[top, "score"] - lb.loc[second, "score"]),
        "pooled fit, q against the field": float(lb.loc[top, "q_field"] - lb.loc[second, "q_field"]),
        "plain posterior, x": float((px[..., i] - px[..., j]).mean()),
        "plain posterior, q against the field": float((pq[..., i] - pq[..., j]).mean()),
        "prompt posterior, x": prompt["x"][top]["mean"] - prompt["x"][second]["mean"],
        "prompt posterior, q against the field": prompt["q_field"][top]["mean"] - prompt["q_field"][second]["mean"],
    }
    sig = prompt.get("sigma_prompt") or {}
    head = list(rows[0])
    lines = ["# MT-Bench: sandwich, bootstrap and posteriors side by side", "",
             f"`benchmarks/studies/bayes_estimands_mtbench.py`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"load {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s wall for the fit, {args.replicates} "
             f"bootstrap replicates ({n_ok} valid) and the plain posterior (4 × (1000 + 1000)); the prompt × "
             f"candidate posterior from `{args.prompt_record.name}` ({prompt['label']}, max R-hat "
             f"{prompt['diagnostics']['max_rhat']:.4f}, min bulk ESS {prompt['diagnostics']['min_ess_bulk']:.0f}, "
             f"σ_u {sig.get('sigma_u', {}).get('mean', float('nan')):.3f}). x = γ̄·s, the average-judge logit, "
             "on each model's own scale; q = q against the field (mean over opponents of q_ij); P(best) ± its Monte "
             "Carlo SE (bootstrap: binomial over replicates; posteriors: √(p(1 − p)/ESS) with the ESS of the "
             "best-indicator). Plain posterior diagnostics: max R-hat "
             f"{plain.diagnostics['max_rhat']:.4f}, min ESS {plain.diagnostics['min_ess']:.0f}, "
             f"{plain.diagnostics['divergences']} divergences.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    lines += ["", f"{top} − {second} margin (mean):", ""] + [f"* {k}: {v:.4f}" for k, v in margins.items()]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bayes_estimands_mtbench.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
