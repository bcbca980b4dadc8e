"""What a user without oscar_jax would run: import numpy/scipy, load an Xu et al. file, fit J+P.

The comparison point of ``bench_cli.py`` for the whole process a user waits for. It is
deliberately a plain script (no oscar_jax, no JAX): per-record arrays, the penalized
J+P objective (γ_k (s_a − s_b) + β_pos,k, Helmert-coded scores summing to zero, ridge
0.05 on the summed loss, ties ½, the reference judge with most records at γ = 1) with
its analytic gradient, L-BFGS-B from zero. It prints the objective, which ``bench_cli``
compares with ``oscar fit --model j+p`` (same data, same objective).

Usage: python benchmarks/scipy_script.py FILE.json
"""

from __future__ import annotations

import json
import sys

import numpy as np
from scipy.optimize import minimize


def main(path: str) -> float:
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    verdict = {"a": 1.0, "b": 0.0, "c": 0.5, "tie": 0.5}
    rows = [r for r in rows if str(r.get("judge_preferred_model", "")).lower() in verdict]
    cands = sorted({r["model_a"] for r in rows} | {r["model_b"] for r in rows})
    judges = sorted({r["judge_model"] for r in rows})
    ci = {c: i for i, c in enumerate(cands)}
    ji = {j: i for i, j in enumerate(judges)}
    a = np.array([ci[r["model_a"]] for r in rows])
    b = np.array([ci[r["model_b"]] for r in rows])
    k = np.array([ji[r["judge_model"]] for r in rows])
    y = np.array([verdict[str(r["judge_preferred_model"]).lower()] for r in rows])
    c, n_j = len(cands), len(judges)
    ref = int(np.argmax(np.bincount(k, minlength=n_j)))
    # Helmert contrasts: columns orthonormal and orthogonal to 1, so s = H u sums to zero.
    helm = np.zeros((c, c - 1))
    for j in range(1, c):
        helm[:j, j - 1] = 1.0
        helm[j, j - 1] = -j
        helm[:, j - 1] /= np.sqrt(j * (j + 1))
    free = np.array([q for q in range(n_j) if q != ref])
    nu, nv = c - 1, n_j - 1
    ridge = 0.05

    def unpack(theta):
        s = helm @ theta[:nu]
        v = np.zeros(n_j)
        v[free] = theta[nu:nu + nv]
        return s, v, theta[nu + nv:]

    def loss_grad(theta):
        s, v, beta = unpack(theta)
        g = np.exp(v)
        d = s[a] - s[b]
        eta = g[k] * d + beta[k]
        p = 1.0 / (1.0 + np.exp(-eta))
        loss = np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * ridge * theta @ theta
        r = p - y
        gs = np.bincount(a, r * g[k], c) - np.bincount(b, r * g[k], c)
        gv = np.bincount(k, r * g[k] * d, n_j)
        gb = np.bincount(k, r, n_j)
        grad = np.concatenate([helm.T @ gs, gv[free], gb]) + ridge * theta
        return loss, grad

    theta0 = np.zeros(nu + nv + n_j)
    bounds = [(None, None)] * nu + [(-15.0, 15.0)] * nv + [(None, None)] * n_j
    res = minimize(loss_grad, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-14})
    print(f"objective {res.fun:.6f} ({len(rows)} records, {c} candidates, {n_j} judges, {res.nit} iterations)")
    return float(res.fun)


if __name__ == "__main__":
    main(sys.argv[1])
