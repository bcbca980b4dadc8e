"""Spread of Table 1's held-out log losses over fold seeds: the measured basis of its tolerances.

The paper's 3-fold prompt partition is unpublished, so our Table 1 values differ from the
paper's by fold randomness at least. This study runs ``oscar_jax.compare`` (the seven
Table 1 models, 3 folds) for fold seeds 0..S-1 on every available dataset (MT-Bench with
its response lengths) and writes ``fold_seed_spread.json`` next to this file: per dataset,
the SD over seeds of each model's loss and of the model differences Table 1 compares
(J+P − J, J+F − J, J+L − J, OSCAR − J+P, BT+PLF − J+P, Davidson+PLF − J+P).
``table1_heldout.py`` reads it; rerun this after changing the fit or the data
(``python paper_repro/fold_seed_spread.py --seeds 10``; about 15 CPU-minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import repro_common as rc

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "fold_seed_spread.json"
DIFFERENCES = (("J+P", "J"), ("J+L", "J"), ("J+F", "J"), ("OSCAR", "J+P"), ("BT+PLF", "J+P"), ("Davidson+PLF", "J+P"))


def summarise(losses: dict) -> dict:
    """{model: [loss per seed]} → SDs of each model and of each difference (ddof 1)."""
    out = {"models": {}, "differences": {}}
    for m, v in losses.items():
        v = np.asarray(v, float)
        out["models"][m] = {"mean": float(v.mean()), "sd": float(v.std(ddof=1)), "n_seeds": int(v.size)}
    for a, b in DIFFERENCES:
        if a in losses and b in losses:
            d = np.asarray(losses[a], float) - np.asarray(losses[b], float)
            out["differences"][f"{a} − {b}"] = {"mean": float(d.mean()), "sd": float(d.std(ddof=1)),
                                                 "n_seeds": int(d.size)}
    return out


def main(argv=None) -> int:
    import oscar_jax as oj
    from oscar_jax.compare import DEFAULT_MODELS

    parser = rc.add_common_arguments(argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0]))
    parser.add_argument("--seeds", type=int, default=10, help="fold seeds 0..S-1 (default 10)")
    args = parser.parse_args(argv)
    ctx = rc.context_from_args(args)
    result = {"seeds": list(range(args.seeds)), "folds": 3, "commit": rc.git_commit(),
              "oscar_jax": oj.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "datasets": {}}
    for key in ctx.available(rc.XU_DATASETS):
        design = ctx.design(key)
        losses: dict[str, list[float]] = {}
        for seed in range(args.seeds):
            cr = oj.compare(design, models=list(DEFAULT_MODELS), folds=3, seed=seed, show_progress=False)
            for name, value in cr.log_loss.items():
                losses.setdefault(name, []).append(float(value))
            print(f"{key} seed {seed}: " + ", ".join(f"{m} {v[-1]:.4f}" for m, v in losses.items()),
                  file=sys.stderr, flush=True)
        result["datasets"][rc.label(key)] = {"has_length": bool(design.has_length), **summarise(losses),
                                             "per_seed": losses}
        OUT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
