"""A board on a scale: every result's scores as average-judge logits, Elo or win rates, with intervals.

The score of candidate i is its strength on the *average-judge logit scale*

    x_i = γ̄ s_i,        so that σ(x_i − x_j) = q_ij  (Eq. 3, bias terms at zero),

which is invariant to the choice of reference judge (rescaling γ by c and s by 1/c leaves
x unchanged). For models with γ ≡ 1 (``bt``, ``bt+plf``, ``davidson+plf``) x = s exactly,
the plain Bradley–Terry log-strength. Scales:

* ``logit`` (default): x_i (sum zero), or x_i − x_anchor + value when anchored;
* ``elo``: 1000 + (400 / ln 10) · x_i ≈ 1000 + 173.72 x_i (FastChat's "Arena Score";
  a gap of 400 points is odds 10:1), or value + (400 / ln 10)(x_i − x_anchor);
* ``winrate``: arena-hard-auto's win rate against a baseline (the anchor),
  100·σ(x_i − x_baseline) %, with the interval of the contrast mapped through σ.

Anchoring pins one candidate at a value. It is a change of *contrast*, not a shift: the
other candidates' scores become x_i − x_anchor, whose variance is
var(x_i) + var(x_anchor) − 2 cov(x_i, x_anchor), so the anchor's uncertainty moves onto
everyone else (the anchor's own interval has zero width). Sandwich and model-based
intervals are therefore recomputed by the delta method for the anchored contrast (the
Jacobian of θ ↦ x(θ) − x_anchor(θ) is that of x less the anchor's row, in host numpy:
:func:`oscar_jax.infer.sandwich.host_target_jacobians`), never shifted; bootstrap and
posterior intervals are taken over the draws of the same contrast.
The point estimate is the full-data fit where the result has one (a fit, a bootstrap),
never a bootstrap median; a posterior's is the mean of its draws.

``rank_ub`` = 1 + the number of candidates whose lower bound exceeds this candidate's
upper bound, computed on the intervals shown (FastChat's rule; tied candidates share a
rank). Because anchoring widens the non-anchor intervals, it can change it; rank on an
unanchored board when the ranking itself matters.

Every result's ``leaderboard(scale=…, anchor=…)`` takes its score columns from
:func:`score_board`; a result that carries draws hands them over through
``result.theta_draws()`` (:class:`~oscar_jax.results.intervals.Draws`), and its point
estimate is ``result.point_fit`` (None: the draws' mean).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from ..infer.sandwich import host_quadratic_se, host_target_jacobians, targets_batch_jit
from ..model.links import sigmoid
from ..runtime.lazy_jax import jax
from ..runtime.validate import OscarInputError, check_choice, check_ci_prob, resolve_name
from .intervals import SCORE_SCALES, Draws, draw_interval

__all__ = ["ELO_BASE", "ELO_SLOPE", "SCALES", "SCORE_MEANING", "as_draws", "memo_board", "parse_anchor", "rank_ub",
           "scale_note", "score_board"]

ELO_BASE = 1000.0
ELO_SLOPE = 400.0 / math.log(10.0)  # Elo points per logit: odds 10:1 at a 400-point gap
SCALES = SCORE_SCALES  # (the CLI builds its parsers from intervals.py, which loads no JAX)
# What a board's score is on each scale (the JSON's scale.score).
SCORE_MEANING = {"logit": "average-judge logit x = γ̄·s (independent of the reference judge; = s when γ ≡ 1)",
                 "elo": "Elo = 1000 + (400/ln 10)·x", "winrate": "win rate % against {baseline}: 100·σ(x − x_baseline)"}


def parse_anchor(text: str | None) -> tuple[str, float | None] | None:
    """Parse ``NAME`` or ``NAME=VALUE`` (the CLI's ``--anchor``); None stays None.

    The value is on the scale of the board (Elo points or logits); without one the anchor
    sits at 1000 on the Elo scale and 0 on the logit scale.
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


def _resolve_anchor(names, anchor, scale: str) -> tuple[int | None, str | None, float]:
    """(index, name, value on the chosen scale) of the anchor; index None when unanchored.

    On the ``winrate`` scale the anchor is the baseline, at 50% whatever value it carries.
    """
    if anchor is None:
        if scale == "winrate":
            raise OscarInputError("--scale winrate needs a baseline: the candidate to compare with, e.g. "
                                  "--anchor gpt-4-0314 (arena-hard files: --baseline gpt-4-0314)")
        return None, None, ELO_BASE if scale == "elo" else 0.0
    if isinstance(anchor, str):
        anchor = parse_anchor(anchor)
    name, value = anchor
    names = list(names)
    name = resolve_name("anchor candidate", str(name), names)
    if value is None or scale == "winrate":
        value = ELO_BASE if scale == "elo" else 0.0
    return names.index(name), name, float(value)


def _anchored(x, index: int | None):
    """Scores x (…, C) less the anchor's, exactly 0 at the anchor."""
    if index is None:
        return x
    x = x - x[..., index:index + 1]
    x[..., index] = 0.0
    return x


def _scores_and_se(fit, cov, weights, layout, index: int):
    """An anchored board's scores x − x_anchor and their delta-method SEs, in host numpy: the
    Jacobian of x − x_anchor is that of x less the anchor's row (:func:`host_target_jacobians`)."""
    x = _anchored(np.array(fit.targets.x, np.float64), index)
    jac = host_target_jacobians(fit.theta, layout, weights).x
    return x, host_quadratic_se(_anchored(jac.swapaxes(-1, -2), index).swapaxes(-1, -2), cov)


def rank_ub(lo, hi) -> np.ndarray:
    """Rank (UB): 1 + #{j : lo_j > hi_i} for every i (ties share a rank)."""
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def as_draws(draws, layout, source: str = "bootstrap", weights=None) -> Draws:
    """:class:`Draws` from a result that carries draws (``theta_draws()``), a Draws, or a (B, P) θ array
    (``weights``: the point fit's γ̄ judges, :attr:`FitResult.gbar_weights`)."""
    if hasattr(draws, "theta_draws"):
        draws = draws.theta_draws()
    if not isinstance(draws, Draws):
        theta = np.asarray(draws, dtype=float)
        if theta.ndim != 2 or theta.shape[1] != layout.n_theta:
            raise OscarInputError(f"draws must have shape (B, {layout.n_theta}), got {theta.shape}")
        t = jax.tree_util.tree_map(np.asarray, targets_batch_jit(theta, layout, weights))
        draws = Draws(theta=theta, targets=t, kind="percentile", source=source)
    elif weights is not None and not np.all(np.asarray(weights) == 1.0) and draws.theta.shape[1] == layout.n_theta:
        # Draws made elsewhere (a posterior) average every judge; on a point fit's board
        # γ̄ is the fit's average over the judges whose γ the data determine.
        draws = draws._replace(targets=jax.tree_util.tree_map(
            np.asarray, targets_batch_jit(np.asarray(draws.theta), layout, weights)))
    if draws.theta.shape[1] != layout.n_theta:
        raise OscarInputError(f"--ci {draws.source}: the draws have {draws.theta.shape[1]} coordinates but the "
                              f"fit's θ has {layout.n_theta}; the draws must use the full-data fit's parametrization")
    if draws.theta.shape[0] == 0:
        raise OscarInputError(f"{draws.source} draws: none passed its checks; intervals cannot be formed")
    return draws


def _on_scale(scale: str, index, value: float):
    """The map from the (anchored) logit contrast to the board's scale."""
    if scale == "elo":
        base = value if index is not None else ELO_BASE
        return lambda v: base + ELO_SLOPE * v
    if scale == "winrate":
        return lambda v: 100.0 * sigmoid(v)
    offset = value if index is not None else 0.0
    return lambda v: v + offset


def score_board(result, *, ci: str | None = None, ci_prob: float | None = None, scale: str = "logit", anchor=None,
                draws=None, kind: str | None = None) -> pd.DataFrame:
    """The score columns of ``result``'s leaderboard on ``scale``, in data order.

    Columns ``candidate``, ``score``, ``score_lo``, ``score_hi``, ``rank_ub``, and
    ``se_logit`` (the delta-method SE of the logit contrast) for Wald intervals or
    ``score_sd`` (the draws' sd on the scale) when the point is the draws' mean.
    Intervals: Wald at ``ci`` (``"sandwich"``, the default, or ``"model"``) from the point
    fit's covariance when there are no draws; else over ``draws`` (default
    ``result.theta_draws()``), of ``kind`` (default the draws' own). ``frame.attrs``:
    scale, ci, ci_prob, anchor, anchor_value, baseline, n_draws, n_failed_draws.
    """
    check_choice("scale", scale, SCALES)
    ci_prob = check_ci_prob(result.ci_prob if ci_prob is None else ci_prob)
    names = list(result.design.candidates)
    layout = result.layout
    index, name, value = _resolve_anchor(names, anchor, scale)
    fit = result.point_fit
    weights = None if fit is None else fit.gbar_weights
    draws = result.theta_draws() if draws is None else draws
    if draws is not None:
        draws = as_draws(draws, layout, ci or "bootstrap", weights)
    if draws is None:
        ci = ci or "sandwich"
        if index is None:
            x, se = fit.targets.x, fit.target_se(ci).x
        else:
            x, se = _scores_and_se(fit, fit.covariance(ci), weights, layout, index)
        z = NormalDist().inv_cdf(0.5 + ci_prob / 2.0)
        lo, hi = x - z * se, x + z * se
        source = ci
    else:
        xs = _anchored(np.array(draws.targets.x, np.float64), index)
        if fit is None:
            x = xs.mean(axis=0)
        else:
            x = _anchored(np.array(fit.targets.x, np.float64), index)
        # A percentile interval need not contain the full-data estimate.
        kind = kind or draws.kind
        lo, hi = draw_interval(xs, ci_prob, kind)
        source = "hdi" if kind == "hdi" else draws.source
    f = _on_scale(scale, index, value)
    frame = pd.DataFrame({"candidate": names, "score": f(x), "score_lo": f(lo), "score_hi": f(hi)})
    if draws is None:
        frame["se_logit"] = se
    elif fit is None:
        frame["score_sd"] = f(xs).std(axis=0)
    frame["rank_ub"] = rank_ub(frame["score_lo"], frame["score_hi"])
    frame.attrs.update({"scale": scale, "ci": source, "ci_prob": ci_prob, "anchor": name,
                        "anchor_value": value if index is not None else None,
                        "baseline": name if scale == "winrate" else None,
                        "n_draws": None if draws is None else int(draws.theta.shape[0]),
                        "n_failed_draws": 0 if draws is None else int(draws.n_failed)})
    return frame


def memo_board(result, key, make):
    """``make()``'s board, made once per ``key`` (interval, level, scale, anchor) on ``result``
    (immutable), a copy returned each time: ``oscar fit`` shows one board as its table, its
    JSON and its advice (0.014 s each on UltraFeedback)."""
    if not isinstance(key[3], (str, type(None))):
        key = (*key[:3], tuple(key[3]))
    boards = result.__dict__.setdefault("_boards", {})
    if key not in boards:
        boards[key] = make()
    frame = boards[key].copy()
    frame.attrs = dict(boards[key].attrs)
    return frame


def scale_note(attrs: dict) -> dict:
    """The JSON's ``scale``: what ``score`` is on a board (its ``attrs``), the anchor, how ``rank_ub`` reads, the draws."""
    return {"scale": attrs["scale"], "score": SCORE_MEANING[attrs["scale"]].format(baseline=attrs.get("baseline")),
            "s": "per-candidate parameter s on the reference judge's scale (changes with --reference-judge)",
            "elo_base": ELO_BASE, "elo_slope": ELO_SLOPE, "anchor": attrs.get("anchor"),
            "anchor_value": attrs.get("anchor_value"),
            "rank_ub": "1 + number of candidates whose lower bound exceeds this one's upper bound",
            "n_draws": attrs.get("n_draws"), "n_failed_draws": attrs.get("n_failed_draws", 0)}
