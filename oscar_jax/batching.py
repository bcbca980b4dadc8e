"""How a batch of independent replicates runs inside one compiled call.

A bootstrap, a set of folds or a simulation sweep is one pure per-replicate function
over a leading replicate axis. It can run *vectorised* (``jax.vmap``: every replicate
advances in lockstep, and a batch of solver loops keeps iterating until its slowest
replicate has converged) or *in sequence* (``jax.lax.map``: a compiled loop over
replicates, each stopping at its own convergence). ``lax.map(..., batch_size=w)`` mixes
the two: vmapped groups of ``w``.

On a CPU, XLA does not vectorise the solver's per-cell work across replicates, so a
vmapped batch costs B single solves per iteration *and* runs every replicate for as
many iterations as the slowest one (bootstrap replicates on MT-Bench: mean 13, max 18);
the sequential map is faster and gives bit-for-bit the single-replicate arithmetic. On a
GPU/TPU the vmapped batch fills the device. :func:`default_vmap_width` picks by backend;
every batched entry point takes ``vmap_width`` to override it.
"""

from __future__ import annotations

from typing import Callable

import jax

__all__ = ["default_vmap_width", "map_replicates"]


def default_vmap_width() -> int | None:
    """Replicates advanced side by side: 1 on CPU (sequential), all of them (None) otherwise."""
    return 1 if jax.default_backend() == "cpu" else None


def map_replicates(fn: Callable, xs, vmap_width: int | None):
    """``fn`` over the leading axis of the pytree ``xs``: vmapped groups of ``vmap_width``.

    ``vmap_width=None`` (or ≥ the batch size) is a plain ``jax.vmap``; 1 is a sequential
    ``lax.map``. Pure: jit it, shard it, vmap it further.
    """
    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    if vmap_width is None or int(vmap_width) >= n:
        return jax.vmap(fn)(xs)
    width = int(vmap_width)
    if width < 1:
        raise ValueError(f"vmap_width must be a positive integer or None, got {vmap_width!r}")
    return jax.lax.map(fn, xs, batch_size=width if width > 1 else None)
