"""The audit's worked example (docs/audit.md) with the ordinal model fitted by SVI.

Same data (``RETAILER_EXAMPLE``, seed 0, 2,000 items × 7 conditions × 10 runs), the same
NumPyro model (``oscar_jax.audit.bayes.ordinal_model``, item effects and item × condition
interactions) and the same sufficient statistics as ``oscar audit``; the guide is
AutoNormal or the low-rank one, optimized with the optax schedule of
``oscar_jax.bayes._svi`` (``optimizer``). Prints δ (log-odds, relative to Retailer A) with
95 % intervals next to the NUTS numbers published in docs/audit.md (2 chains × 300 draws,
12 min 45 s).

    python benchmarks/studies/audit_svi.py [--guide normal|lowrank] [--steps 3000]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import oscar_jax  # noqa: F401,E402
from numpyro.infer import SVI, Trace_ELBO  # noqa: E402
from numpyro.infer.autoguide import AutoLowRankMultivariateNormal, AutoNormal  # noqa: E402
from numpyro.optim import optax_to_numpyro  # noqa: E402
from oscar_jax.audit import RETAILER_EXAMPLE, simulate_audit_data  # noqa: E402
from oscar_jax.audit.bayes import _insert_ref, ordinal_model, sufficient_stats  # noqa: E402
from oscar_jax.bayes._svi import SviSettings, elbo_plateau, optimizer  # noqa: E402

# docs/audit.md, worked example, NUTS 2 × (300 + 300): mean, 95 % interval
NUTS = {"Original": (0.67, 0.56, 0.79), "Retailer B": (-0.38, -0.48, -0.28), "Retailer C": (-0.45, -0.55, -0.35),
        "Retailer D": (-0.48, -0.58, -0.38), "Retailer E": (-0.62, -0.72, -0.51), "Retailer F": (-0.50, -0.60, -0.40),
        "others (mean)": (-0.49, -0.56, -0.41)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--guide", default="normal", choices=["normal", "lowrank"])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    ex = RETAILER_EXAMPLE
    data = simulate_audit_data(0, 2000, 10, ex["params"], conditions=ex["conditions"])
    names = list(data.conditions)
    ref = names.index("Retailer A")
    stats = sufficient_stats(jnp.asarray(data.values), jnp.asarray(data.mask), kind=data.kind,
                             n_labels=max(data.n_labels, 2))
    model = partial(ordinal_model, ref=ref, interaction=True)
    settings = SviSettings(guide=args.guide, steps=args.steps, learning_rate=args.lr)
    guide = AutoNormal(model) if args.guide == "normal" else AutoLowRankMultivariateNormal(model)
    svi = SVI(model, guide, optax_to_numpyro(optimizer(settings)), Trace_ELBO())
    t_data = time.perf_counter() - t0

    @jax.jit
    def run(key):
        k1, k2 = jax.random.split(key)
        state = svi.init(k1, *stats)

        def step(s, _):
            return svi.update(s, *stats)

        state, losses = jax.lax.scan(step, state, None, length=settings.steps)
        draws = guide.sample_posterior(k2, svi.get_params(state), *stats, sample_shape=(4000,))
        return losses, draws["delta_free"]

    t1 = time.perf_counter()
    losses, delta_free = jax.block_until_ready(run(jax.random.PRNGKey(0)))
    t_svi = time.perf_counter() - t1
    delta = np.asarray(_insert_ref(jnp.asarray(delta_free), ref))        # (draws, C)
    # the focal contrast of the worked example (--original Original): Retailers B–F
    others = [c for c in range(len(names)) if c not in (ref, names.index("Original"))]
    cols = {n: delta[:, i] for i, n in enumerate(names) if i != ref}
    cols["others (mean)"] = delta[:, others].mean(-1)
    print(f"SVI {args.guide}, {settings.steps} steps: data {t_data:.1f} s, SVI (incl. compile) {t_svi:.1f} s; "
          f"ELBO plateau {elbo_plateau(np.asarray(losses))['plateau']}")
    print(f"{'condition':15s} {'SVI mean':>9s} {'SVI 95% interval':>18s}   {'NUTS':>6s} {'NUTS interval':>16s}  "
          "SVI mean in NUTS interval")
    inside = []
    for name, x in cols.items():
        lo, hi = np.quantile(x, [0.025, 0.975])
        m, nlo, nhi = NUTS[name]
        inside.append(nlo <= x.mean() <= nhi)
        print(f"{name:15s} {x.mean():+9.2f} [{lo:+.2f}, {hi:+.2f}]     {m:+6.2f} [{nlo:+.2f}, {nhi:+.2f}]  {inside[-1]}")
    print(f"all SVI means inside the NUTS intervals: {all(inside)}; total wall {time.perf_counter() - t0:.1f} s, "
          f"CPU {time.process_time():.1f} s")
    return 0


if __name__ == "__main__":
    main()
