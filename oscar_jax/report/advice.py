"""Plain-language advice when the data are too small for the model asked for.

A default OSCAR fit estimates a position, length and own-family coefficient per judge. On
a few hundred judgments those per-judge terms are barely determined, and their
uncertainty flows into every candidate's interval: the board then ranks every model 1
and "checks: all passed" reads as if all were well. These notes say so in words and
name the smaller model to try, measured rather than guessed: the smaller model is
fitted on the same data and the interval widths are compared.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RECORDS_PER_PARAMETER", "small_data_advice", "strong_weight_note"]

RECORDS_PER_PARAMETER = 50  # below this many judgments per free parameter, compare with the smaller model
WIDER = 1.5  # intervals this many times as wide as the smaller model's are worth a note


def small_data_advice(result, *, ci: str = "sandwich", ridge=None, seed: int = 0) -> list[str]:
    """Notes for a user: terms the data cannot support, and candidates the data cannot order."""
    from ..fit import fit
    from .leaderboard import arena_leaderboard

    notes = []
    d = result.design
    eff = result.effective_spec
    board = arena_leaderboard(result, ci=ci, scale="logit")
    n_free = max(int(result.core.n_free), 1)
    extra = [t for t in eff.terms if t != "pos"]
    if extra and d.n_records / n_free < RECORDS_PER_PARAMETER and ci in ("sandwich", "model"):
        smaller = "j+p" if "pos" in eff.terms else "j"
        alt = fit(d, smaller, ridge=ridge, seed=seed, ci_prob=result.ci_prob, warn=False)
        alt_board = arena_leaderboard(alt, ci=ci, scale="logit").set_index("candidate").loc[board.candidate]
        ratio = float(np.median((board.hi - board.lo).to_numpy() / (alt_board.hi - alt_board.lo).to_numpy()))
        if np.isfinite(ratio) and ratio > WIDER:
            names = {"len": "length", "fam": "own-family", "cov": "covariate", "pos": "position"}
            terms = ", ".join(names.get(t, t) for t in extra)
            notes.append(
                f"small data for this model: {d.n_records:,} judgments for {n_free} parameters; the per-judge "
                f"{terms} terms are barely determined and make the intervals {ratio:.1f}× as wide as under "
                f"--model {smaller}. Try --model {smaller}.")
    if len(board) > 1 and (board.rank_ub == 1).all():
        pct = f"{100 * result.ci_prob:g}%"
        notes.append(f"no candidate is separated from another at {pct}: every Rank (UB) is 1. The order of the "
                     "point estimates is not established by these data.")
    return notes


def strong_weight_note(weight) -> str | None:
    """Why ``--strong-weight 3`` widens prompt-cluster intervals instead of narrowing them."""
    if weight is None or float(weight) == 1.0:
        return None
    return (f"--strong-weight {float(weight):g} counts each strong verdict (A>>B) as {float(weight):g} verdicts, but "
            "they are one judgment of one prompt: the prompt-cluster intervals keep the number of prompts and see "
            "more unequal weights, so they widen (fewer effective judgments). arena-hard's bootstrap treats the "
            "copies as independent, which narrows its intervals without new information.")
