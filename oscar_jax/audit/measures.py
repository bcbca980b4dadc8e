"""The paper's audit measures as pure functions of masked (I, C, R) arrays.

Shapes: I items, C conditions, R repetitions (runs), M labels. Label codes run from 0
(least favourable, e.g. bad) to M−1 (most favourable); ``mask`` marks the judgments
that exist. Ad-relevance paper, Section 4.1:

* Bad DR  = share of judgments with the least favourable label;
* Fair DR = share with one of the two least favourable labels (bad or fair);
* mean label distribution; mean pRel (probability outputs);
* consistency of condition c with an anchor condition a in run r = share of the items
  judged in both whose labels agree.

Per-run values are means over the items judged in that run; the paper's table entries
are their means over runs. Nothing here branches on values, so everything vmaps over
simulated audits.
"""

from __future__ import annotations

from ..runtime.lazy_jax import jax, jnp


__all__ = [
    "agreement",
    "item_means",
    "label_distribution",
    "label_indicators",
    "masked_mean",
    "run_rates",
]


def masked_mean(x: jax.Array, mask: jax.Array, axis) -> jax.Array:
    """Mean of ``x`` over ``axis`` counting only ``mask``; NaN where nothing is observed."""
    m = mask.astype(jnp.float64)
    num = jnp.sum(jnp.where(mask, x, 0.0) * m, axis=axis)
    den = jnp.sum(m, axis=axis)
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.nan)


def label_indicators(codes: jax.Array, n_labels: int) -> dict[str, jax.Array]:
    """0/1 indicators (float64, same shape as ``codes``) behind Bad DR and Fair DR.

    ``bad`` = code 0; ``fair`` = code ≤ 1 ("bad or fair"); with only two labels Fair DR
    would be identically 1 and is not returned.
    """
    out = {"bad": (codes == 0).astype(jnp.float64)}
    if n_labels >= 3:
        out["fair"] = (codes <= 1).astype(jnp.float64)
    return out


def run_rates(x: jax.Array, mask: jax.Array) -> jax.Array:
    """(C, R) per-run means over items of an (I, C, R) indicator or probability."""
    return masked_mean(x, mask, axis=0)


def label_distribution(codes: jax.Array, mask: jax.Array, n_labels: int) -> jax.Array:
    """(C, M) mean over runs of the per-run share of each label code (0 = least favourable)."""
    onehot = jax.nn.one_hot(codes, n_labels, dtype=jnp.float64)          # (I, C, R, M)
    per_run = masked_mean(onehot, jnp.broadcast_to(mask[..., None], onehot.shape), axis=0)  # (C, R, M)
    return jnp.nanmean(per_run, axis=1)


def agreement(codes: jax.Array, mask: jax.Array, cond: int, anchor: int) -> tuple[jax.Array, jax.Array]:
    """Per (item, run) agreement of condition ``cond`` with ``anchor`` in the same run.

    Returns ``agree`` (I, R) float 0/1 and ``both`` (I, R) bool (judged in both). When
    the anchor has a single run, every run of ``cond`` is compared with that run.
    """
    a_codes, a_mask = codes[:, anchor, :], mask[:, anchor, :]
    one_run = jnp.sum(jnp.any(a_mask, axis=0)) == 1
    first = jnp.argmax(jnp.any(a_mask, axis=0))
    a_codes = jnp.where(one_run, a_codes[:, first][:, None], a_codes)
    a_mask = jnp.where(one_run, a_mask[:, first][:, None], a_mask)
    both = mask[:, cond, :] & a_mask
    agree = (codes[:, cond, :] == a_codes).astype(jnp.float64)
    return agree, both


def item_means(x: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Item-level means over runs: (I, C) means and (I, C) observed flags."""
    return masked_mean(x, mask, axis=2), jnp.any(mask, axis=2)
