"""What a user without oscar_jax would run: load an Xu et al. file and fit the same OSCAR model.

The comparison point of ``bench_cli.py`` for the whole process a user waits for (issue 36:
the same model as the timed ``oscar fit --model oscar``, not a smaller one). A plain
numpy/scipy script, written the way a careful user would:

* the model: η = γ_k (s_a − s_b) + β_pos,k + β_fam,k F, F = 1{fam(a)=fam(k)} − 1{fam(b)=fam(k)},
  Helmert-coded scores summing to zero, γ_k = exp(v_k) with the judge of most records at 1
  and |v_k| ≤ 15, ties ½, ridge 0.05 on the summed loss; a judge's β_fam is dropped when its
  F is constant (the B.2 column selection; these files carry no lengths, so no length term);
* the same data form as oscar_jax: records that share (a, b, k, F) collapse into weighted
  cells (the loss is linear in the outcome, so this is exact);
* the analytic gradient, L-BFGS-B from zero, stopped by the B.3 gradient test
  (‖projected ∇‖∞ ≤ 1e-7·N; ``ftol`` 0 so that the gradient decides);
* the family of a name from ``oscar_jax.io.families.family_of`` (a table of regular
  expressions in pure Python: the user of this method needs one, and importing it loads
  no numeric package).

It prints JSON: the objective, the scores by candidate, γ by judge, the iterations. It
computes no intervals and runs no checks, so it does less than ``oscar fit`` (which also
computes cluster-sandwich intervals, q_ij and the B.3 checks): the comparison flatters it.

Usage: python benchmarks/scipy_script.py FILE.json
"""

from __future__ import annotations

import json
import sys

import numpy as np
from scipy.optimize import minimize

from oscar_jax.io.families import family_of

RIDGE, V_BOUND, B3_GTOL = 0.05, 15.0, 1e-7


def helmert(c: int) -> np.ndarray:
    """(c, c − 1) orthonormal columns orthogonal to 1: s = H u sums to zero."""
    helm = np.zeros((c, c - 1))
    for j in range(1, c):
        helm[:j, j - 1] = 1.0
        helm[j, j - 1] = -j
        helm[:, j - 1] /= np.sqrt(j * (j + 1))
    return helm


def main(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    verdict = {"a": 1.0, "b": 0.0, "c": 0.5}
    rows = [r for r in rows if str(r.get("judge_preferred_model", "")).strip().lower() in verdict]
    cands = sorted({r["model_a"] for r in rows} | {r["model_b"] for r in rows})
    judges = sorted({r["judge_model"] for r in rows})
    ci = {c: i for i, c in enumerate(cands)}
    ji = {j: i for i, j in enumerate(judges)}
    fam_c = [family_of(c) for c in cands]
    fam_j = [family_of(j) for j in judges]
    a = np.array([ci[r["model_a"]] for r in rows])
    b = np.array([ci[r["model_b"]] for r in rows])
    k = np.array([ji[r["judge_model"]] for r in rows])
    y = np.array([verdict[str(r["judge_preferred_model"]).strip().lower()] for r in rows])
    same = np.array([[fc == fj for fj in fam_j] for fc in fam_c], dtype=float)  # (C, K)
    f = same[a, k] - same[b, k]
    # Cells: records sharing (a, b, k, F) have the same η.
    keys, cell = np.unique(np.column_stack([a, b, k, f]), axis=0, return_inverse=True)
    cell = cell.ravel()
    n_cell = len(keys)
    w = np.bincount(cell, minlength=n_cell).astype(float)
    wy = np.bincount(cell, y, n_cell)
    a, b, k, f = keys[:, 0].astype(int), keys[:, 1].astype(int), keys[:, 2].astype(int), keys[:, 3]
    c, n_j = len(cands), len(judges)
    ref = int(np.argmax(np.bincount(k, w, n_j)))
    helm = helmert(c)
    free = np.array([q for q in range(n_j) if q != ref])
    # B.2: β_fam,k only where judge k's F varies (a constant F is the position column again)
    fam_judges = np.array([q for q in range(n_j) if np.ptp(f[k == q]) > 0], dtype=int)
    nu, nv, npos, nfam = c - 1, n_j - 1, n_j, len(fam_judges)

    def unpack(theta):
        s = helm @ theta[:nu]
        v = np.zeros(n_j)
        v[free] = theta[nu:nu + nv]
        beta_pos = theta[nu + nv:nu + nv + npos]
        beta_fam = np.zeros(n_j)
        beta_fam[fam_judges] = theta[nu + nv + npos:]
        return s, v, beta_pos, beta_fam

    def loss_grad(theta):
        s, v, beta_pos, beta_fam = unpack(theta)
        g = np.exp(v)[k]
        d = s[a] - s[b]
        eta = g * d + beta_pos[k] + beta_fam[k] * f
        p = 0.5 * (1.0 + np.tanh(0.5 * eta))  # σ(η) without overflow
        loss = np.dot(w, np.logaddexp(0.0, eta)) - np.dot(wy, eta) + 0.5 * RIDGE * theta @ theta
        r = w * p - wy
        gs = np.bincount(a, r * g, c) - np.bincount(b, r * g, c)
        gv = np.bincount(k, r * g * d, n_j)
        gp = np.bincount(k, r, n_j)
        gf = np.bincount(k, r * f, n_j)
        grad = np.concatenate([helm.T @ gs, gv[free], gp, gf[fam_judges]]) + RIDGE * theta
        return loss, grad

    n_theta = nu + nv + npos + nfam
    bounds = [(None, None)] * nu + [(-V_BOUND, V_BOUND)] * nv + [(None, None)] * (npos + nfam)
    res = minimize(loss_grad, np.zeros(n_theta), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 20000, "maxfun": 40000, "ftol": 0.0, "gtol": B3_GTOL * w.sum()})
    s, v, _, _ = unpack(res.x)
    out = {"objective": float(res.fun), "records": len(rows), "cells": n_cell, "dim_theta": n_theta,
           "iterations": int(res.nit), "converged": bool(res.success),
           "scores": dict(zip(cands, s.tolist())), "gamma": dict(zip(judges, np.exp(v).tolist()))}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main(sys.argv[1])
