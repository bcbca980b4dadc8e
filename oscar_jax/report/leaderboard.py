"""Arena-style leaderboards: Elo scale, optional anchoring, Rank (UB), ``+x/−y`` intervals.

The leaderboard score of candidate i is its strength on the *average-judge logit scale*

    x_i = γ̄ s_i,        so that σ(x_i − x_j) = q_ij  (Eq. 3, bias terms at zero),

which is invariant to the choice of reference judge (rescaling γ by c and s by 1/c leaves
x unchanged). For models with γ ≡ 1 (``bt``, ``bt+plf``, ``davidson+plf``) x = s exactly,
the plain Bradley–Terry log-strength. Scales:

* ``logit``: x_i (sum zero), or x_i − x_anchor + value when anchored;
* ``elo``: 1000 + (400 / ln 10) · x_i ≈ 1000 + 173.72 x_i (FastChat's "Arena Score";
  a gap of 400 points is odds 10:1), or value + (400 / ln 10)(x_i − x_anchor).

Anchoring pins one candidate at a value. It is a change of *contrast*, not a shift: the
other candidates' scores become x_i − x_anchor, whose variance is
var(x_i) + var(x_anchor) − 2 cov(x_i, x_anchor), so the anchor's uncertainty moves onto
everyone else (the anchor's own interval has zero width). Sandwich and model-based
intervals are therefore recomputed by the delta method for the anchored contrast
(:func:`oscar_jax.infer.sandwich.delta_se` on the function θ ↦ x(θ) − x_anchor(θ)), never
shifted; bootstrap and posterior intervals are percentiles of the same contrast over the
draws. The point estimate is always the full-data fit, never a bootstrap median.

``Rank (UB)`` = 1 + the number of candidates whose lower bound exceeds this candidate's
upper bound, computed on the intervals shown (FastChat's rule; tied candidates share a
rank). Because anchoring widens the non-anchor intervals, it can change Rank (UB); rank
on an unanchored board when the ranking itself matters.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pandas as pd
from statistics import NormalDist

from ..results.intervals import CI_SOURCES, percentiles
from ..runtime.jit import RUN_ONCE, persistent_jit
from .render import render_table, shorten
from ..results.fit import FitResult
from ..infer.sandwich import INDEPENDENCE_NOTE, delta_se, targets
from ..runtime.validate import OscarInputError, check_choice, check_ci_prob, resolve_name

__all__ = [
    "CI_SOURCES",
    "CI_LABELS",
    "ELO_BASE",
    "ELO_SLOPE",
    "SCALES",
    "arena_leaderboard",
    "arena_text",
    "fmt_pm",
    "judge_intervals",
    "parse_anchor",
    "rank_ub",
    "score_function",
]

ELO_BASE = 1000.0
ELO_SLOPE = 400.0 / math.log(10.0)  # Elo points per logit: odds 10:1 at a 400-point gap
SCALES = ("logit", "elo")
# Said wherever model-based intervals are shown (one wording: oscar_jax.bayes.INDEPENDENCE_LABEL).
CI_LABELS = {"sandwich": "prompt-cluster sandwich", "model": f"model-based: {INDEPENDENCE_NOTE}",
             "bootstrap": "prompt bootstrap, percentile", "bayes": "posterior, equal-tailed"}


# ---------------------------------------------------------------------------------------
# Anchors and scales
# ---------------------------------------------------------------------------------------

def parse_anchor(text: str | None) -> tuple[str, float | None] | None:
    """Parse ``NAME`` or ``NAME=VALUE`` (the CLI's ``--anchor``); None stays None.

    The value is on the scale of the leaderboard (Elo points or logits); without one the
    anchor sits at 1000 on the Elo scale and 0 on the logit scale.
    """
    if text is None:
        return None
    text = str(text).strip()
    name, sep, value = text.rpartition("=")
    if not sep:
        name, value = text, ""
    name = name.strip()
    if not name:
        raise OscarInputError(f"--anchor {text!r}: expected NAME or NAME=VALUE, e.g. mixtral-8x7b-instruct-v0.1=1114")
    if value.strip() == "":
        if sep:
            raise OscarInputError(f"--anchor {text!r}: the value after '=' is empty; give a number or drop '='")
        return name, None
    try:
        number = float(value)
    except ValueError:
        raise OscarInputError(f"--anchor {text!r}: {value!r} is not a number; e.g. {name}=1114") from None
    if not math.isfinite(number):
        raise OscarInputError(f"--anchor {text!r}: the anchor value must be finite")
    return name, number


def _resolve_anchor(result: FitResult, anchor, scale: str) -> tuple[int | None, str | None, float]:
    """(index, name, value on the chosen scale) of the anchor; index None when unanchored."""
    if anchor is None:
        return None, None, ELO_BASE if scale == "elo" else 0.0
    if isinstance(anchor, str):
        anchor = parse_anchor(anchor)
    name, value = anchor
    names = list(result.design.candidates)
    name = resolve_name("anchor candidate", str(name), names)
    if value is None:
        value = ELO_BASE if scale == "elo" else 0.0
    return names.index(name), name, float(value)


def score_function(layout, anchor_index: int | None = None):
    """θ ↦ x(θ) (C,): average-judge logit scores γ̄ s, minus the anchor's when anchored.

    Reuses :func:`oscar_jax.infer.sandwich.targets`, so it differentiates (delta method) and
    vmaps (over bootstrap or posterior draws of θ).
    """
    def fn(theta):
        x = targets(theta, layout).x
        if anchor_index is not None:
            # Exactly 0 at the anchor: compiled, γ̄·s_i − γ̄·s_a may fuse into one FMA that
            # leaves the rounding error of γ̄·s_a (~1e-18) where the contrast is identically 0.
            x = (x - x[anchor_index]).at[anchor_index].set(0.0)
        return x

    return fn


def _scores_and_se(theta, cov, layout, anchor_index):
    fn = score_function(layout, anchor_index)
    return fn(theta), delta_se(fn, theta, cov)


def _draw_scores(draws, layout, anchor_index):
    return jax.vmap(score_function(layout, anchor_index))(draws)


# One compiled program per (layout, anchor) each: run eagerly, the delta method's
# jacfwd and the einsum were ~40 separate XLA compilations in every new process.
_scores_and_se_jit = persistent_jit(_scores_and_se, static_argnames=("layout", "anchor_index"),
                                    compiler_options=RUN_ONCE)
_draw_scores_jit = persistent_jit(_draw_scores, static_argnames=("layout", "anchor_index"))


def prepare_board_program(layout, anchor_index: int | None = None) -> None:
    """Compile ahead (:func:`~oscar_jax.runtime.batching.compile_ahead`) the board's scores and SEs."""
    p = layout.n_theta
    _scores_and_se_jit.prepare(jax.ShapeDtypeStruct((p,), np.float64), jax.ShapeDtypeStruct((p, p), np.float64),
                               layout=layout, anchor_index=anchor_index)


def rank_ub(lo, hi) -> np.ndarray:
    """Rank (UB): 1 + #{j : lo_j > hi_i} for every i (ties share a rank)."""
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def fmt_pm(point: float, lo: float, hi: float, digits: int = 1) -> str:
    """``+x/−y`` with x = hi − point, y = point − lo (Arena's way of printing a CI)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "–"
    up = max(hi - point, 0.0)
    down = max(point - lo, 0.0)
    return f"+{up:.{digits}f}/−{down:.{digits}f}"


# ---------------------------------------------------------------------------------------
# The leaderboard table
# ---------------------------------------------------------------------------------------

def arena_leaderboard(result: FitResult, *, ci: str = "sandwich", scale: str = "elo", anchor=None,
                      draws=None, ci_prob: float | None = None) -> pd.DataFrame:
    """Arena-style leaderboard of a fit.

    Parameters
    ----------
    result
        The full-data fit (its θ̂ gives every point estimate).
    ci
        ``"sandwich"`` (prompt-cluster, default) or ``"model"``: delta-method intervals
        from ``result.covariance(ci)``; ``"bootstrap"`` or ``"bayes"``: percentile
        intervals over ``draws``.
    scale
        ``"elo"`` (1000 + 400/ln 10 · x) or ``"logit"`` (x = γ̄ s).
    anchor
        None, ``"NAME"``, ``"NAME=VALUE"`` or ``(name, value)``: pin that candidate at
        ``value`` (default 1000 Elo / 0 logit); intervals are recomputed for the
        anchored contrast.
    draws
        (B, P) θ draws (bootstrap replicates or posterior draws) for draw-based ``ci``.
    ci_prob
        Interval level (default: the fit's).

    Returns
    -------
    DataFrame
        One row per candidate, best first: ``rank_ub``, ``rank``, ``candidate``, ``score``,
        ``lo``, ``hi`` (on ``scale``), ``plus``, ``minus`` (hi − score, score − lo),
        ``votes``, and both scales in full: ``logit``, ``logit_lo``, ``logit_hi``,
        ``elo``, ``elo_lo``, ``elo_hi``. ``frame.attrs`` holds scale, ci, ci_prob, anchor.

    Examples
    --------
    >>> from oscar_jax import fit, simulate_design
    >>> board = arena_leaderboard(fit(simulate_design(seed=0, n_prompts=400), "j"))
    >>> board.columns[:4].tolist()
    ['rank_ub', 'rank', 'candidate', 'score']
    """
    check_choice("ci", ci, CI_SOURCES)
    check_choice("scale", scale, SCALES)
    ci_prob = check_ci_prob(result.ci_prob if ci_prob is None else ci_prob)
    index, name, value = _resolve_anchor(result, anchor, scale)
    theta = result.theta  # host arrays straight into the jitted programs: no copy programs
    if ci in ("sandwich", "model"):
        if draws is not None:
            raise OscarInputError(f"ci={ci!r} uses the fit's covariance; draws are only for bootstrap or bayes")
        x, se = map(np.asarray, _scores_and_se_jit(theta, result.covariance(ci),
                                                   layout=result.layout, anchor_index=index))
        z = NormalDist().inv_cdf(0.5 + ci_prob / 2.0)
        lo, hi = x - z * se, x + z * se
    else:
        if draws is None:
            raise OscarInputError(f"ci={ci!r} needs draws= (B, P) θ draws; see oscar_jax.report.draw_sources.interval_draws()")
        draws = np.asarray(draws, dtype=float)
        if draws.ndim != 2 or draws.shape[1] != result.layout.n_theta:
            raise OscarInputError(f"draws must have shape (B, {result.layout.n_theta}), got {draws.shape}")
        x = np.asarray(_scores_and_se_jit(theta, np.zeros((theta.shape[0],) * 2), layout=result.layout,
                                          anchor_index=index)[0])
        xs = np.asarray(_draw_scores_jit(draws, layout=result.layout, anchor_index=index))
        lo, hi = percentiles(xs, ci_prob)
        # A percentile interval need not contain the full-data estimate; fmt_pm then
        # prints that side as 0 rather than a negative width.
        se = np.full_like(x, np.nan)
    # The anchor value is on the chosen scale; the other scale's columns put the anchor
    # (or, unanchored, the field mean) at that scale's default, 0 logits / 1000 Elo.
    logit_off = value if (index is not None and scale == "logit") else 0.0
    elo_off = value if (index is not None and scale == "elo") else ELO_BASE
    names = list(result.design.candidates)
    frame = pd.DataFrame({
        "candidate": names,
        "logit": x + logit_off, "logit_lo": lo + logit_off, "logit_hi": hi + logit_off,
        "elo": elo_off + ELO_SLOPE * x, "elo_lo": elo_off + ELO_SLOPE * lo, "elo_hi": elo_off + ELO_SLOPE * hi,
        "se_logit": se,
        "votes": [result.design.counts["candidate_votes"][c] for c in names],
    })
    key = "elo" if scale == "elo" else "logit"
    frame["score"] = frame[key]
    frame["lo"] = frame[f"{key}_lo"]
    frame["hi"] = frame[f"{key}_hi"]
    frame["plus"] = frame["hi"] - frame["score"]
    frame["minus"] = frame["score"] - frame["lo"]
    frame["rank_ub"] = rank_ub(frame["lo"], frame["hi"])
    frame = frame.sort_values(["score", "candidate"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    cols = ["rank_ub", "rank", "candidate", "score", "lo", "hi", "plus", "minus", "votes",
            "logit", "logit_lo", "logit_hi", "elo", "elo_lo", "elo_hi", "se_logit"]
    frame = frame[cols]
    frame.attrs.update({"scale": scale, "ci": ci, "ci_prob": ci_prob, "anchor": name,
                        "anchor_value": value if index is not None else None,
                        "n_draws": None if draws is None else int(np.shape(draws)[0])})
    return frame


def arena_text(table: pd.DataFrame, *, title: str | None = None, width: int | None = None) -> str:
    """Render an :func:`arena_leaderboard` table as ``Rank (UB) | Model | Score | CI | Votes``."""
    attrs = table.attrs
    pct = f"{100 * attrs.get('ci_prob', 0.95):g}%"
    digits = 1 if attrs.get("scale", "elo") in ("elo", "winrate") else 3
    anchor = attrs.get("anchor")
    # attrs["interval_status"] (name → "unbounded" / "not estimable"): flagged candidates
    # (oscar_jax.infer.identification) get a "!" and no interval.
    status = attrs.get("interval_status", {})
    shown = table.assign(ci_text=["(anchor)" if c == anchor else status.get(c) or fmt_pm(s, lo, hi, digits)
                                  for c, s, lo, hi in zip(table.candidate, table.score, table.lo, table.hi)],
                         candidate=[("!" if status.get(c) else "") + c for c in table.candidate])
    score_fmt = {"elo": ".0f", "winrate": ".1f"}.get(attrs.get("scale", "elo"), ".3f")
    cols = [("rank_ub", "Rank (UB)", "d"), ("candidate", "Model", ""), ("score", "Score", score_fmt),
            ("ci_text", f"{pct} CI (+x/−y)", ""), ("votes", "Votes", "d")]
    if title is None:
        scale = attrs.get("scale", "elo")
        what = (f"Elo = {ELO_BASE:g} + {ELO_SLOPE:.2f}·logit" if scale == "elo"
                else f"win rate % against {attrs.get('baseline')}" if scale == "winrate"
                else "average-judge logit γ̄·s")
        source = CI_LABELS.get(attrs.get("ci", "sandwich"), attrs.get("ci", ""))
        if attrs.get("n_draws"):
            source += f", {attrs['n_draws']} draws"
        title = f"Arena-style leaderboard ({pct} CI, {source}; {what})"
        if attrs.get("anchor") and scale != "winrate":
            unit = "" if scale == "elo" else " logit"
            title += (f"\nanchored: {shorten(attrs['anchor'], 40)} = {attrs['anchor_value']:g}{unit} "
                      "(intervals are for the contrast with the anchor)")
    return title + "\n" + render_table(shown, cols, width=width, name_col="candidate")


def judge_intervals(result: FitResult, ci: str = "sandwich") -> pd.DataFrame:
    """``result.judges(ci)`` plus Wald intervals of β_pos, β_len, β_fam (``beta_*_lo/_hi``).

    Coefficients fixed at zero by column selection (or absent from the model) are NaN.
    """
    check_choice("ci", ci, ("sandwich", "model"))
    table = result.judges(ci)
    cov = np.asarray(result.covariance(ci))
    se_theta = np.sqrt(np.maximum(np.diag(cov), 0.0))
    blocks = result.layout.theta_blocks
    z = result.z
    for term in ("pos", "len", "fam"):
        col = f"beta_{term}"
        est = table[col].to_numpy(dtype=float)
        se = se_theta[blocks[term]] if term in blocks else np.full(len(table), np.nan)
        table[f"{col}_lo"] = est - z * se
        table[f"{col}_hi"] = est + z * se
    return table
