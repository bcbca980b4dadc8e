"""Issue 40, replay on real data: let ``oscar plan`` choose which hidden judgments to reveal.

For each Xu et al. (2026) release (MT-Bench, UltraFeedback, Chatbot Arena), the full data
are fitted once (OSCAR; the length term is not estimable there) for the reference: the
ranking of the average-judge logits x and the top pair (leader, runner-up). Then, per
seed, a random ``--start`` share of the judgments is revealed and the rest hidden; each
arm reveals hidden judgments in batches up to each share of ``--grid``:

* ``random``       uniformly among the hidden judgments;
* ``oscar:TARGET`` the plan's allocation (``oscar_jax.plan.allocate``) over the hidden
                   judgments (a judgment pool: each (pair, order, judge) at most as often as
                   it is hidden), placed on their least used prompts (``place_judgments``).

At each share the revealed judgments are fitted (OSCAR, cluster sandwich) and compared
with the full data: the 95% interval width of q(leader beats runner-up) and its
coverage of the full-data value, Kendall τ_b between the logits and the full-data ones,
and whether the leader agrees. The fits reuse the full design's cells with the hidden
judgments' weights at zero (static shapes: one compiled fit per dataset).

    nice python benchmarks/studies/plan_replay.py --seeds 5    # writes benchmarks/results/plan_replay*.{md,csv}
    python benchmarks/studies/plan_replay.py --quick
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks.studies.plan_common import fit_arrays, md  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
FILES = {"mtbench": "judge_results_10k_mtbench.json", "ultrafeedback": "judge_results_10k_ultrafeedback.json",
         "chatbot_arena": "judge_results_10k_chatbot_arena.json"}
ARMS = ("random", "oscar:top1", "oscar:ranking")


class Replay:
    """One dataset: its design, every record's statistics, cell and pair, and the full-data reference."""

    def __init__(self, path):
        import oscar_jax as oj
        from oscar_jax.io.data import load_judgments
        from oscar_jax.model.design import build_design
        from oscar_jax.model.problem import prepare

        frame, report = load_judgments(path)
        self.design = build_design(frame, report=report)
        problem = prepare(self.design, "oscar")
        self.layout, self.terms = problem.layout, problem.effective_spec.terms
        y = frame["outcome"].to_numpy(float)
        w = frame["weight"].to_numpy(float)
        tie = frame["tie_kind"].isin(["tie", "bothbad"]).to_numpy() | (y == 0.5)
        self.stats = np.stack([w, w * y, w * tie], axis=1)
        d = self.design
        self.cell, self.prompt = d.record_cell, d.record_cluster
        arr = d.arrays
        keys = np.asarray(arr.pair_g, np.int64) * d.n_cells + np.asarray(arr.pair_cell)
        self.pair = np.searchsorted(keys, self.prompt.astype(np.int64) * d.n_cells + self.cell)
        full = oj.fit(d, "oscar", warn=False)
        self.x_full = np.asarray(full.targets.x)
        order = np.argsort(-self.x_full)
        self.top = (int(order[0]), int(order[1]))
        self.q_top_full = float(full.win_prob[self.top])
        self.n = len(y)

    def arrays(self, revealed: np.ndarray):
        """Design arrays of the revealed records (same shapes as the full design) and cluster indicator."""
        d = self.design
        st = self.stats * revealed[:, None]
        cell_stats = np.stack([np.bincount(self.cell, st[:, j], d.n_cells) for j in range(3)], axis=1)
        pair_stats = np.stack([np.bincount(self.pair, st[:, j], len(d.arrays.pair_g)) for j in range(3)], axis=1)
        arrays = d.arrays._replace(stats=cell_stats, pair_stats=pair_stats)
        omega = (np.bincount(self.prompt, revealed.astype(float), d.n_clusters) > 0).astype(float)
        return arrays, omega


def evaluate(rep: Replay, core, cov) -> dict:
    from oscar_jax.infer.judgment_info import plan_targets_jit
    from oscar_jax.model.links import sigmoid
    from oscar_jax.sweep import kendall_tau_b

    values, grads = plan_targets_jit(np.asarray(core.theta), rep.layout)
    x, h = np.asarray(values.x), np.asarray(values.h)
    i, j = rep.top
    out = {"ok": bool(core.point_ok), "tau": float(kendall_tau_b(x, rep.x_full)),
           "top1": float(np.argmax(x) == np.argmax(rep.x_full))}
    if cov is None:
        return out | {"width_top": np.nan, "cover_top": np.nan, "se_top": np.nan}
    g = np.asarray(grads.h)[i, j]
    se = float(np.sqrt(max(g @ np.asarray(cov.cluster) @ g, 0.0)))
    lo, hi = sigmoid(h[i, j] - 1.96 * se), sigmoid(h[i, j] + 1.96 * se)
    return out | {"width_top": float(hi - lo), "cover_top": float(lo <= rep.q_top_full <= hi), "se_top": se}


def run_seed(rep: Replay, name: str, seed: int, args) -> list[dict]:
    from oscar_jax.model.plan_request import Target
    from oscar_jax.plan import allocate, candidate_judgments, place_judgments

    d = rep.design
    grid = [int(round(f * rep.n)) for f in args.grid]
    start = np.random.default_rng([seed, 0]).permutation(rep.n)[: grid[0]]
    cell_a, cell_b, cell_k = (np.asarray(x) for x in (d.arrays.a, d.arrays.b, d.arrays.k))
    rows = []
    for arm in args.arms:
        rng = np.random.default_rng([seed, 1, ARMS.index(arm)])
        revealed = np.zeros(rep.n, bool)
        revealed[start] = True
        predicted = np.nan
        for t in range(len(grid)):
            t0 = time.perf_counter()
            arrays, omega = rep.arrays(revealed)
            core, cov = fit_arrays(arrays, omega, rep.layout, d.n_clusters)
            row = {"data": name, "seed": seed, "arm": arm, "n": int(revealed.sum()), "share": args.grid[t],
                   **evaluate(rep, core, cov), "predicted_se_top": predicted}
            predicted = np.nan
            if t + 1 < len(grid):
                step = grid[t + 1] - int(revealed.sum())
                hidden = np.flatnonzero(~revealed)
                if arm == "random" or cov is None:
                    take = rng.choice(hidden, size=step, replace=False)
                else:
                    counts = np.bincount(rep.cell[hidden], minlength=d.n_cells).astype(float)
                    cand = candidate_judgments(dataclasses.replace(d, arrays=arrays), rep.layout, rep.terms,
                                               np.ones(d.n_judge), (cell_a, cell_b, cell_k, counts))
                    alloc, _, _, (_, grads) = allocate(core.theta, core.mask, core.hess, cov.cluster, rep.layout, cand,
                                                       Target(arm.split(":")[1]), (), float(step), seed)
                    order = alloc.sequence
                    usage = dict(zip(*np.unique(rep.prompt[revealed], return_counts=True)))
                    take = hidden[place_judgments(order, rep.cell[hidden], rep.prompt[hidden], usage, rng)]
                    g = np.asarray(grads.h)[rep.top]
                    predicted = row["se_top"] * float(np.sqrt((g @ alloc.cov_after @ g) / (g @ alloc.cov_before @ g)))
                    row["judges_used"] = int(np.count_nonzero(np.bincount(cell_k[rep.cell[take]], minlength=d.n_judge)))
                revealed[take] = True
            rows.append(row | {"seconds": time.perf_counter() - t0})
    return rows


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    metrics = ["width_top", "cover_top", "tau", "top1", "ok"]
    g = rows.groupby(["data", "arm", "share"], sort=False)
    out = g[metrics].mean()
    se = g[metrics].std(ddof=1) / np.sqrt(g.size().to_numpy()[:, None])
    out = out.join(se.add_suffix("_mcse")).reset_index()
    out.insert(3, "n", g["n"].mean().round().astype(int).to_numpy())
    out.insert(4, "seeds", g.size().to_numpy())
    return out


def paired(rows: pd.DataFrame) -> pd.DataFrame:
    """Plan − random at each share, paired by seed: mean difference and Monte Carlo SE."""
    out = []
    base = rows[rows.arm == "random"].set_index(["data", "seed", "share"])
    for arm in rows.arm.unique():
        if arm == "random":
            continue
        mine = rows[rows.arm == arm].set_index(["data", "seed", "share"])
        diff = (mine[["width_top", "tau", "top1"]] - base[["width_top", "tau", "top1"]]).reset_index()
        g = diff.groupby(["data", "share"], sort=False)
        mean, se = g.mean(numeric_only=True), g.std(ddof=1, numeric_only=True) / np.sqrt(g.size().to_numpy()[:, None])
        table = mean.drop(columns="seed").join(se.drop(columns="seed").add_suffix("_mcse")).reset_index()
        table.insert(0, "arm", arm)
        width_ratio = (mine["width_top"] / base["width_top"]).groupby(level=["data", "share"], sort=False).mean()
        table["width_ratio"] = width_ratio.to_numpy()
        out.append(table)
    return pd.concat(out, ignore_index=True)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=",".join(FILES), help="datasets (mtbench, ultrafeedback, chatbot_arena)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--grid", default="0.1,0.15,0.2,0.3,0.4", help="shares of the judgments revealed")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--rows", default=None, help="also write the per-seed rows here (not committed)")
    parser.add_argument("--out", default=str(RESULTS / "plan_replay"), help="output stem (.md, .csv, _paired.csv)")
    parser.add_argument("--quick", action="store_true", help="MT-Bench, 1 seed, two steps (smoke test)")
    args = parser.parse_args(argv)
    args.grid = [float(x) for x in args.grid.split(",")]
    args.arms = [a for a in args.arms.split(",") if a]
    names = [x for x in args.data.split(",") if x]
    if args.quick:
        names, args.seeds, args.grid = ["mtbench"], 1, [0.1, 0.12]
    from oscar_jax.io.data import shared_data_dir

    rows, t0 = [], time.perf_counter()
    for name in names:
        path = shared_data_dir() / "xu2026" / FILES[name]
        if not path.exists():
            print(f"skipping {name}: {path} is absent (set OSCAR_DATA_DIR)", flush=True)
            continue
        rep = Replay(path)
        for seed in range(args.seeds):
            rows += run_seed(rep, name, seed, args)
            if args.rows:
                pd.DataFrame(rows).to_csv(args.rows, index=False)
            print(f"{name} seed {seed} done, {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.1f}",
                  flush=True)
    rows = pd.DataFrame(rows)
    table, diffs = summary(rows), paired(rows)
    settings = {"data": names, "seeds": args.seeds, "grid": args.grid, "arms": args.arms,
                "wall_s": round(time.perf_counter() - t0, 1), "load": [round(x, 1) for x in os.getloadavg()]}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(f"{out}.csv", index=False)
    diffs.to_csv(f"{out}_paired.csv", index=False)
    plan_rows = rows[rows.arm != "random"]
    flat = (plan_rows.se_top / plan_rows.predicted_se_top).to_numpy(float)
    text = ["# oscar plan: replay on real data (issue 40)", "", f"Settings: {settings}. Generated by "
            "`benchmarks/studies/plan_replay.py`.", "", "## Plan − random at equal budgets (paired by seed)", "",
            md(diffs), "", "## Curves", "", md(table), "",
            "## Expected vs realized standard error of the full-data top pair after each planned batch", "",
            f"realized / expected: median {np.nanmedian(flat):.3f}, mean {np.nanmean(flat):.3f} over "
            f"{int(np.isfinite(flat).sum())} batches", ""]
    Path(f"{out}.md").write_text("\n".join(text), encoding="utf-8")
    return {"rows": rows, "summary": table, "paired": diffs, "settings": settings}


if __name__ == "__main__":
    main()
