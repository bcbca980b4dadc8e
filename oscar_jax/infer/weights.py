"""Prompt-cluster weights: every resampling scheme as a (B, G) matrix ω (method §5; E.2, E.3).

A prompt-bootstrap replicate is a vector of multinomial counts (how often each prompt
was drawn), a fold is a 0/1 mask, and the paired refit bootstrap of Appendix E.3
resamples within fixed folds. Every generator takes an explicit PRNG key or int seed.
"""

from __future__ import annotations

import numpy as np

from ..model.design import Design
from ..runtime.jit import persistent_jit
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError, check_positive_int

__all__ = ["bootstrap_indices", "bootstrap_weights", "fold_masks", "prompt_folds", "replicate_key",
           "within_fold_weights"]


def _key(key_or_seed):
    if isinstance(key_or_seed, (int, np.integer)):
        return jax.random.PRNGKey(int(key_or_seed))
    return key_or_seed


def bootstrap_indices(key, n_clusters: int, replicates: int) -> jax.Array:
    """(B, G) int32: prompt clusters drawn with replacement, G draws per replicate.

    ``key`` is a PRNG key or an int seed. ``bootstrap_weights`` is the count matrix of these
    draws, so refitting with those weights equals refitting the explicitly resampled records.
    """
    return jax.random.randint(_key(key), (replicates, n_clusters), 0, n_clusters, dtype=jnp.int32)


def _counts(idx, n_clusters: int):
    return jax.vmap(lambda i: jnp.zeros(n_clusters, jnp.float64).at[i].add(1.0))(idx)


def _bootstrap_weights(key, n_clusters: int, replicates: int):
    return _counts(bootstrap_indices(key, n_clusters, replicates), n_clusters)


# One compiled program (eagerly, the vmapped scatter alone compiled a dozen), stored
# across processes: a plain jit re-traced and re-lowered threefry's randint in every
# new process (≈ 0.2–0.35 s of a warm `oscar bootstrap`).
_bootstrap_weights_jit = persistent_jit(_bootstrap_weights, static_argnames=("n_clusters", "replicates"))


def bootstrap_weights(key, n_clusters: int, replicates: int) -> jax.Array:
    """(B, G) float64 multinomial prompt counts: a prompt bootstrap (method §5).

    Each row sums to G. Deterministic for a given key (or int seed).
    """
    return _bootstrap_weights_jit(_key(key), int(n_clusters), int(replicates))


def within_fold_weights(key, folds, replicates: int) -> jax.Array:
    """(B, G) counts from resampling clusters with replacement *within* each fold (E.3).

    ``folds`` (G,) int fold (or split) id of each cluster. Fold f keeps exactly its own
    size G_f: its G_f draws come from its own clusters only, so train/test membership of
    every record is unchanged and the folds stay fixed across replicates.
    """
    folds = np.asarray(folds)
    if folds.ndim != 1 or folds.size == 0 or not np.issubdtype(folds.dtype, np.integer) or folds.min() < 0:
        raise OscarInputError("folds must be a non-empty 1-D array of non-negative integer fold ids (one per cluster)")
    g = folds.size
    order = np.argsort(folds, kind="stable")
    sizes = np.bincount(folds)
    offsets = np.cumsum(sizes) - sizes
    slot_fold = folds[order]  # slots sorted by fold: fold f owns exactly sizes[f] slots
    draws = jax.random.randint(_key(key), (replicates, g), 0, jnp.asarray(sizes[slot_fold])[None, :], dtype=jnp.int32)
    picked = jnp.asarray(order, jnp.int32)[jnp.asarray(offsets[slot_fold], jnp.int32)[None, :] + draws]
    return _counts(picked, g)


def _permutation(seed, g: int):
    return jax.random.permutation(jax.random.PRNGKey(seed), g)


def _replicate_key(seed, stream: int):
    return jax.random.fold_in(jax.random.PRNGKey(seed), stream)


# Seeded draws as one stored program each (eager, every step is its own XLA compilation).
_permutation_jit = persistent_jit(_permutation, static_argnames=("g",))
_replicate_key_jit = persistent_jit(_replicate_key, static_argnames=("stream",))


def replicate_key(seed: int, stream: int):
    """``fold_in(PRNGKey(seed), stream)``: one seed, independent random streams (compiled once)."""
    return _replicate_key_jit(np.int64(seed), int(stream))


def prompt_folds(design_or_n: Design | int, n_folds: int = 3, seed: int = 0) -> np.ndarray:
    """(G,) int fold id of every prompt cluster: a random, balanced partition (E.2).

    Clusters are permuted with ``jax.random.PRNGKey(seed)`` and dealt round-robin, so fold
    sizes differ by at most one and every record of a prompt lands in the same fold. The
    same (G, n_folds, seed) always gives the same folds, for every model.
    """
    g = design_or_n.n_clusters if isinstance(design_or_n, Design) else int(design_or_n)
    n_folds = check_positive_int("n_folds", n_folds, minimum=2)
    if n_folds > g:
        raise OscarInputError(f"n_folds = {n_folds} exceeds the number of prompt clusters ({g}); use at most {g} folds")
    perm = np.asarray(_permutation_jit(np.int64(seed), g))
    folds = np.empty(g, dtype=np.int64)
    folds[perm] = np.arange(g) % n_folds
    return folds


def fold_masks(folds) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) 0/1 cluster weights, each (F, G): row f trains without fold f."""
    folds = np.asarray(folds)
    test = (folds[None, :] == np.arange(folds.max() + 1)[:, None]).astype(np.float64)
    return 1.0 - test, test
