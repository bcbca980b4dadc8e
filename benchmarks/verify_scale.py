"""Issue 37's rule: the fast fit's final estimates equal the code it replaces to 1e-10.

Runs the same fits under two checkouts — this one and a baseline (``--baseline``: a
folder holding another checkout's ``oscar_jax``, e.g. ``git archive main | tar -x -C DIR``
of the commit before the grouped pass) — each in its own interpreter, and compares θ̂:

* every real dataset in ``$OSCAR_DATA_DIR/xu2026`` (MT-Bench, UltraFeedback, Chatbot
  Arena) under bt, j, j+p and oscar with the package's default settings; MT-Bench also with
  response lengths (``mtbench_answers/``) under oscar;
* where this checkout has the grouped pass, the same real-data fits again with the records
  grouped by (a, b, judge) (``with_groups(force=True)``: its float32 early Newton steps and
  the adaptive second start; the real datasets are too small to be grouped by default);
* simulated Arena-style data at ``--records`` (default 10⁶; C = 50, K = 20, a continuous
  length: one cell per record, grouped by default in this checkout), model oscar.

Writes ``benchmarks/results/verify_scale.md``. Exit status 1 when any |Δθ| exceeds 1e-10.

Usage: python benchmarks/verify_scale.py --baseline DIR [--records 1e6] [--skip-synthetic]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TOL = 1e-10
MODELS = ("bt", "j", "j+p", "oscar")
DATASETS = {"MT-Bench": "judge_results_10k_mtbench.json", "UltraFeedback": "judge_results_10k_ultrafeedback.json",
            "Chatbot Arena": "judge_results_10k_chatbot_arena.json"}
REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"


def _cases(data_dir: Path):
    """(label, path, model, setup keywords) of every real-data fit."""
    for name, file in DATASETS.items():
        path = data_dir / "xu2026" / file
        if not path.exists():
            continue
        for model in MODELS:
            yield f"{name} {model}", path, model, {}
        answers = data_dir / "mtbench_answers"
        if name == "MT-Bench" and answers.exists():
            yield f"{name} oscar (lengths)", path, "oscar", {"responses": str(answers)}


def worker(job: dict) -> dict:
    """Fits in this interpreter (whichever ``oscar_jax`` is first on sys.path)."""
    import dataclasses

    import numpy as np

    import oscar_jax as oj
    from oscar_jax.model.problem import prepare

    try:
        from oscar_jax.model.design import with_groups
    except ImportError:  # the baseline: no grouped pass
        with_groups = None
    out = {"package": str(Path(oj.__file__).resolve().parent), "fits": {}}
    for label, path, model, setup in _cases(Path(job["data_dir"])):
        problem = prepare(str(path), model, reference_judge=REFERENCE_JUDGE, **setup)
        res = oj.fit(problem, warn=False)
        out["fits"][label] = {"theta": np.asarray(res.theta).tolist(), "ok": bool(res.core.ok)}
        if with_groups is not None and model != "bt":
            d = problem.design
            grouped = dataclasses.replace(d, arrays=with_groups(d.arrays, d.n_cand, d.n_judge, force=True))
            res = oj.fit(prepare(grouped, model), warn=False)
            out["fits"][label + " [grouped]"] = {"theta": np.asarray(res.theta).tolist(), "ok": bool(res.core.ok)}
    if job["records"]:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_scaling import raw_columns

        n = job["records"]
        cols = raw_columns(50, 20, n, 0)
        design = _design(cols, 50, 20, with_groups)
        t0 = time.process_time()
        res = oj.fit(prepare(design, "oscar"), warn=False)
        out["fits"][f"simulated {n:,} records oscar"] = {
            "theta": np.asarray(res.theta).tolist(), "ok": bool(res.core.ok), "cpu_s": time.process_time() - t0,
            "grouped": design.arrays._asdict().get("group_cell") is not None}
    return out


def _design(cols, n_cand, n_judge, with_groups):
    """One cell per record (what ``build_design`` makes of a continuous length), in either checkout."""
    import jax
    import numpy as np

    from oscar_jax.model.design import Design
    from oscar_jax.simulate import record_arrays

    n = len(cols["y"])
    put = jax.device_put
    stats = np.column_stack([np.ones(n), cols["y"], np.zeros(n)])
    arrays = record_arrays(put(cols["a"]), put(cols["b"]), put(cols["k"]),
                           put(np.column_stack([cols["L"], cols["F"]])), put(stats), put(cols["prompt"]))
    if with_groups is not None:
        arrays = with_groups(arrays, n_cand, n_judge)
    names = tuple(f"cand{i}" for i in range(n_cand))
    judges = tuple(f"judge{k}" for k in range(n_judge))
    return Design(arrays=arrays, candidates=names, judges=judges, prompts=tuple(range(int(cols["prompt"].max()) + 1)),
                  reference=0, covariates=(), has_length=True, length_scale=1.0, candidate_family=names,
                  judge_family=judges, n_records=n, record_cell=np.arange(n), record_cluster=cols["prompt"],
                  family_nonzero=True)


def run_in(tree: Path, job: dict) -> dict:
    """:func:`worker` in a fresh interpreter whose ``oscar_jax`` comes from ``tree``."""
    env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{ROOT}")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("WORKER ")]
    if proc.returncode or not lines:
        raise SystemExit(f"worker in {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("WORKER "):])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", type=Path, help="folder of the baseline checkout")
    parser.add_argument("--records", type=float, default=1e6)
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "verify_scale.md")
    args = parser.parse_args(argv)
    if args.worker:
        print("WORKER " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0
    import numpy as np

    data_dir = os.environ.get("OSCAR_DATA_DIR", str(ROOT / "data"))
    job = {"data_dir": data_dir, "records": 0 if args.skip_synthetic else int(args.records)}
    ours, base = run_in(ROOT, job), run_in(args.baseline.resolve(), job)
    lines = ["# verify_scale: final estimates of this checkout against a baseline checkout (issue 37's rule)", "",
             f"This checkout: `{ours['package']}`; baseline: `{base['package']}`. Default settings of `oj.fit` in "
             "each; `[grouped]`: the same data with the records grouped by (a, b, judge) in this checkout (float32 "
             "early Newton steps, float64 last ones, the adaptive second start), against the baseline's per-cell fit.",
             "", "| fit | dim θ | max |Δθ| | B.3 ours / baseline | within 1e-10 |", "|---|---|---|---|---|"]
    worst = 0.0
    for label, mine in ours["fits"].items():
        ref = base["fits"].get(label.replace(" [grouped]", ""))
        if ref is None:
            continue
        d = float(np.max(np.abs(np.asarray(mine["theta"]) - np.asarray(ref["theta"]))))
        worst = max(worst, d)
        lines.append(f"| {label} | {len(ref['theta'])} | {d:.1e} | {'pass' if mine['ok'] else 'FAIL'} / "
                     f"{'pass' if ref['ok'] else 'FAIL'} | {'yes' if d <= TOL else '**NO**'} |")
    lines += ["", f"Largest |Δθ|: {worst:.1e} (tolerance {TOL:g})."]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0 if worst <= TOL else 1


if __name__ == "__main__":
    sys.exit(main())
