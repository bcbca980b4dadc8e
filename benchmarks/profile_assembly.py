"""Where one Newton iteration spends its time when every record is its own cell (issue 16, item 2).

With continuous lengths no two records share a cell, so the derivative assembly of
``derivatives._assemble`` runs over all N records each iteration. This script times, at
each N (C = 50, K = 20, OSCAR, compiled, median of repeats), the whole fit, one
``value_grad_hess`` (one iteration's derivatives), the elementwise per-record part
(``model.column_derivatives``) alone, and each segment sum of the assembly by itself,
next to two alternatives for the same sums: sorted contiguous segment sums and dense
one-hot matmuls. The segment-sum alternatives are checked to agree with the scatter to
1e-10 relative before they are timed.

Usage: python benchmarks/profile_assembly.py [--n 10000,100000] [--out results/scaling_profile.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _time(fn, repeats):
    import jax

    jax.block_until_ready(fn())
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def profile(n: int, c: int = 50, k: int = 20, repeats: int = 5, seed: int = 0) -> list[tuple[str, float, str]]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from benchmarks.bench_scaling import sim_params
    from oscar_jax.infer.fit_core import fit_core_jit
    from oscar_jax.infer.derivatives import _columns, value_grad_hess
    from oscar_jax.infer.starts import start_points
    from oscar_jax.model.likelihood import column_derivatives
    from oscar_jax.model.params import Layout
    from oscar_jax.simulate import simulate_jit
    from oscar_jax.model.spec import parse_model

    g = n // k
    spec = parse_model("oscar")
    layout = Layout(c, k, 0, 0, spec.structure())
    sim = jax.block_until_ready(simulate_jit(jax.random.PRNGKey(seed), g, sim_params(c, k, seed)))
    arr = sim.arrays
    starts = start_points(layout, 2, jax.random.PRNGKey(seed + 1))
    omega = jnp.ones(g)
    kw = dict(layout=layout, n_clusters=g, max_iter=100, ridge=spec.ridge, v_bound=spec.v_bound)
    def fit():
        return fit_core_jit(arr, omega, starts, **kw)

    core = fit()
    theta = core.theta
    rows = [("whole fit (2 starts, B.3 checks)", _time(fit, repeats), f"{int(core.n_iter)} iterations")]
    vgh = jax.jit(lambda th: value_grad_hess(th, arr, arr.stats, layout))
    rows.append(("one value_grad_hess (derivatives of one iteration)", _time(lambda: vgh(theta), repeats), ""))
    cols = jax.jit(lambda th: column_derivatives(_columns(th, arr, layout), arr.z.T, arr.stats.T, layout))
    rows.append(("  elementwise per-record derivatives alone", _time(lambda: cols(theta), repeats), ""))

    a, b, kk = arr.a, arr.b, arr.k
    n_rec = a.shape[0]
    m = 6  # statistics summed side by side per key (gradient + Hessian entries), as in _assemble
    vals = jax.random.normal(jax.random.PRNGKey(1), (n_rec, m))
    seg = jax.ops.segment_sum
    order = jnp.argsort(kk)
    k_sorted, vals_sorted = kk[order], vals[order]
    ab = a * c + b
    ab_order = jnp.argsort(ab)
    # Every input is an argument: closed-over arrays would be constants that XLA folds.
    oh = jax.nn.one_hot
    variants = {
        "by judge (K)": {
            "scatter (segment_sum)": (lambda v, i: seg(v, i, num_segments=k), (vals, kk)),
            "sorted contiguous segment_sum": (lambda v, i: seg(v, i, num_segments=k, indices_are_sorted=True),
                                              (vals_sorted, k_sorted)),
            "one-hot matmul": (lambda v, i: oh(i, k, dtype=v.dtype).T @ v, (vals, kk)),
        },
        "by candidate (C)": {
            "scatter (segment_sum)": (lambda v, i: seg(v, i, num_segments=c), (vals, a)),
            "one-hot matmul": (lambda v, i: oh(i, c, dtype=v.dtype).T @ v, (vals, a)),
        },
        "by pair (C²)": {
            "scatter (segment_sum)": (lambda v, i: seg(v, i, num_segments=c * c), (vals[:, 0], ab)),
            "sorted contiguous segment_sum": (lambda v, i: seg(v, i, num_segments=c * c, indices_are_sorted=True),
                                              (vals[ab_order, 0], ab[ab_order])),
        },
        "by (candidate, judge) (C·K)": {
            "scatter (segment_sum)": (lambda v, i, j: seg(v, i * k + j, num_segments=c * k), (vals, a, kk)),
            "one-hot einsum": (lambda v, i, j: jnp.einsum("nc,nk,nm->ckm", oh(i, c, dtype=v.dtype),
                                                          oh(j, k, dtype=v.dtype), v).reshape(c * k, m), (vals, a, kk)),
        },
    }
    for key, fns in variants.items():
        compiled = {name: (jax.jit(f), args) for name, (f, args) in fns.items()}
        ref = None
        for name, (f, args) in compiled.items():
            got = np.asarray(f(*args))
            ref = got if ref is None else ref
            ok = np.allclose(got, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
            rows.append((f"  sum {key}: {name}", _time(lambda: f(*args), repeats), "agrees" if ok else "DISAGREES"))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scaling_profile.md")
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    sections = []
    for n in [int(x) for x in args.n.split(",") if x]:
        rows = profile(n, repeats=args.repeats)
        lines = [f"### N = {n:,} records (C = 50, K = 20, OSCAR, continuous lengths)", "",
                 "| step | ms | ns per record | note |", "|---|---|---|---|"]
        for name, s, note in rows:
            lines.append(f"| {name} | {1e3 * s:.2f} | {1e9 * s / n:.0f} | {note} |")
        sections.append("\n".join(lines))
    load1 = os.getloadavg()[0]
    text = (f"# Derivative assembly with one cell per record (profile_assembly.py)\n\n"
            f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} logical cores; **load average "
            f"(1 min) {load0:.1f} at start, {load1:.1f} at end** (absolute times scale with load; compare rows "
            "within a table).\n\n" + "\n\n".join(sections) + "\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return {"text": text}


if __name__ == "__main__":
    main()
