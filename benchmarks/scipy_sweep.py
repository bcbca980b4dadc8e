"""What a user without oscar_jax would run for a Section 7 sweep: a numpy/scipy script.

The end-to-end comparison point of ``bench_cli.py`` for ``oscar simulate --n 1000,2500
--reps 20 --methods j,oscar`` (issue 36: "≥ 0.5× the scipy loop end to end"), and with
``--controls --methods j,j+p,j+l,j+f,oscar`` for the full main + controls study
(``oscar simulate --controls``: "≥ 1× cold and ≥ 3× warm"). One process, written the way a
careful, speed-aware user would:

* the Appendix G generator of :mod:`oscar_jax.simulate` for Table G1 (two candidates per
  prompt, every judge on every prompt; c = 1, ρ = 0.6, and the Table G2 controls at
  N = 2500 for J and OSCAR with ``--controls``) in numpy: candidates drawn
  uniformly, swapped towards the more verbose one with probability 0.7, a length contrast
  with noise, verdicts Y = 1{Φ(√ρ ε_g + √(1−ρ) ε_t) < σ(η*)} (Φ from ``math.erfc``: no
  ``scipy.special`` import);
* per replicate and method (J, J+P, J+L, J+F; OSCAR = J + position, length, family), the fair baseline's
  fit (:func:`benchmarks.baseline_scipy.fit_cells`: the same cells, objective, B.2 column
  selection and analytic gradient, L-BFGS-B from zero, stopped by the B.3 gradient test);
* the error of κ̂_k = γ̂_k RMS(ŝ) against κ*, averaged per (N, method).

It draws other random numbers than oscar_jax (numpy's generator, not JAX's threefry), and it
fits only: no sandwich covariances, no intervals, no coverage, no q_ij, no checks — it does
less than ``oscar simulate``, so the comparison flatters it. Imports no JAX.

Usage: python benchmarks/scipy_sweep.py [--n 1000,2500] [--reps 20] [--methods j,oscar] [--controls] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.baseline_scipy import CellObjective, fit_cells  # noqa: E402

# Table G1 (oscar_jax.simulate.SimParams defaults)
S = np.linspace(-0.85, 0.85, 8)
LOG_GAMMA = np.array([0.0, 0.2, -0.3, 0.35, -0.15])
BETA_POS = np.array([0.90, -0.70, 0.50, 1.00, -0.40])
BETA_LEN = np.array([0.30, 0.50, 0.40, 0.35, 0.55])
BETA_FAM = np.array([0.18, -0.12, 0.22, 0.10, -0.15])
JUDGE_FAMILY = np.array([0, 1, 2, 0, 1])
CAND_FAMILY = np.arange(8) % 3
VERBOSITY = np.where(np.arange(8) % 2 == 0, 0.8, -0.8) + 0.25 * S
SWAP_PROB, LENGTH_SD, LENGTH_DIVISOR = 0.7, 0.8, 1.5
TERMS = {"j": (), "j+p": ("pos",), "j+l": ("len",), "j+f": ("fam",), "oscar": ("pos", "len", "fam")}
CONTROLS = ((0.0, 0.6), (1.0, 0.0), (0.0, 0.0))  # Table G2's (c, ρ), at N = 2500, for J and OSCAR
_phi = np.vectorize(lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0)), otypes=[float])


def simulate(rng: np.random.Generator, n_prompts: int, c_bias: float = 1.0, rho: float = 0.6):
    """(a, b, k, L, F, y) of one replicate: every judge on every prompt."""
    m, n_j, g = len(S), len(LOG_GAMMA), n_prompts
    a = rng.integers(0, m, g)
    b = rng.integers(0, m - 1, g)
    b = b + (b >= a)
    swap = (VERBOSITY[a] < VERBOSITY[b]) & (rng.random(g) < SWAP_PROB)
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    length = (VERBOSITY[a] - VERBOSITY[b] + LENGTH_SD * rng.standard_normal(g)) / LENGTH_DIVISOR
    k = np.tile(np.arange(n_j), g)
    prompt = np.repeat(np.arange(g), n_j)
    ra, rb, rl = a[prompt], b[prompt], length[prompt]
    fam = (CAND_FAMILY[ra] == JUDGE_FAMILY[k]).astype(float) - (CAND_FAMILY[rb] == JUDGE_FAMILY[k]).astype(float)
    eta = np.exp(LOG_GAMMA)[k] * (S[ra] - S[rb]) + c_bias * (BETA_POS[k] + BETA_LEN[k] * rl + BETA_FAM[k] * fam)
    prob = 0.5 * (1.0 + np.tanh(0.5 * eta))
    u = _phi(math.sqrt(rho) * rng.standard_normal(g)[prompt] + math.sqrt(1.0 - rho) * rng.standard_normal(len(k)))
    return ra, rb, k, rl, fam, (u < prob).astype(float)


def fit(method: str, a, b, k, L, F, y) -> np.ndarray:
    """κ̂ of one replicate: without the length, records collapse to (a, b, k, F) cells; with it,
    every record is a cell."""
    n_c, n_j = len(S), len(LOG_GAMMA)
    if "len" not in TERMS[method]:
        keys, cell = np.unique(np.column_stack([a, b, k, F]), axis=0, return_inverse=True)
        cell = cell.ravel()
        w = np.bincount(cell, minlength=len(keys)).astype(float)
        wy = np.bincount(cell, y, len(keys))
        a, b, k, F = keys[:, 0].astype(int), keys[:, 1].astype(int), keys[:, 2].astype(int), keys[:, 3]
        L = np.zeros(len(keys))
    else:
        w, wy = np.ones_like(y), y
    obj = CellObjective(a, b, k, L, F, w, wy, n_c, n_j, ref=0, terms=TERMS[method])
    res = fit_cells(obj)
    s, v, _ = obj.unpack(res.x)
    return np.exp(v) * np.sqrt(np.mean(s ** 2))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1000,2500")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--methods", default="j,oscar")
    parser.add_argument("--controls", action="store_true", help="also Table G2's controls at N = 2500 (J, OSCAR)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    kappa_true = np.exp(LOG_GAMMA) * np.sqrt(np.mean((S - S.mean()) ** 2))
    rng = np.random.default_rng(args.seed)
    methods = args.methods.split(",")
    settings = [(int(x), 1.0, 0.6, methods) for x in args.n.split(",")]
    if args.controls:
        settings += [(2500, c, rho, [m for m in methods if m in ("j", "oscar")]) for c, rho in CONTROLS]
    out = {}
    for n, c_bias, rho, todo in settings:
        data = [simulate(rng, n // len(LOG_GAMMA), c_bias, rho) for _ in range(args.reps)]
        for method in todo:
            errors = np.array([fit(method, *d) - kappa_true for d in data])
            out[f"N={n} c={c_bias} rho={rho} {method}"] = {"kappa_bias": errors.mean(axis=0).tolist(),
                                                          "kappa_rmse": np.sqrt((errors ** 2).mean(axis=0)).tolist()}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
