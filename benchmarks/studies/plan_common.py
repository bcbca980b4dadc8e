"""Shared by the plan studies (issue 40): fits on padded design arrays, Markdown tables."""

from __future__ import annotations

import numpy as np
import pandas as pd


def fit_arrays(arrays, omega, layout, n_prompts: int):
    """OSCAR-family fit (zero start, λ = 0.05, as in Appendix G) and its covariances, host numpy."""
    import jax

    from oscar_jax.infer.fit_core import fit_core_seeded_jit
    from oscar_jax.infer.sandwich import covariances_jit

    core = fit_core_seeded_jit(arrays, omega, np.int64(0), n_starts=1, layout=layout, n_clusters=n_prompts,
                               ridge=0.05, v_bound=15.0, max_iter=100, stats=arrays.stats)
    core = type(core)(*jax.device_get(tuple(core)))
    cov = None
    if bool(core.curvature_ok):
        cov = jax.device_get(covariances_jit(core.theta, core.mask, core.hess, core.info, arrays, omega,
                                             layout=layout, n_clusters=n_prompts, ridge=0.05))
    return core, cov


def md(frame: pd.DataFrame, fmt: str = ".3f") -> str:
    """A pipe table without the optional ``tabulate`` dependency."""
    def cell(v):
        return format(v, fmt) if isinstance(v, (float, np.floating)) else str(v)

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rows = ["| " + " | ".join(cell(v) for v in r) + " |" for r in frame.itertuples(index=False)]
    return "\n".join([head, "|" + "---|" * len(frame.columns)] + rows)
