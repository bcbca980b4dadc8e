"""Plain Bradley–Terry agrees with evalica and choix up to their conventions.

Mapping (fractional ties, i.e. a tie counts half a win each way):

* oscar_jax ``bt`` with ridge λ → 0 gives sum-zero log-strengths s (Helmert
  parametrization, so the MLE exists on connected data without pinning a candidate).
* evalica ``bradley_terry(xs, ys, winners, tie_weight=0.5)`` returns positive strengths
  π; s = log π − mean(log π).
* choix ``opt_pairwise(n, [(winner, loser), ...])`` has no ties; splitting a tie into
  one win each way (choix issue #17) weights it twice, so every decisive record is also
  given twice. That doubles our objective, which leaves the minimiser unchanged; choix's
  params are already centred, so s = params.
* Elo (FastChat's "Arena Score") = 1000 + (400 / ln 10) · s.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import oscar_jax as oj
from oscar_jax.io.data import load_judgments
from oscar_jax.report.leaderboard import arena_leaderboard

from helpers import ARENA_EXAMPLE, shared_data

evalica = pytest.importorskip("evalica")
choix = pytest.importorskip("choix")

DATA = Path(__file__).resolve().parent / "data"
RIDGE = 1e-8  # λ → 0; its pull on s is ~λ‖s‖/(smallest Hessian eigenvalue) < 1e-9 here
# evalica iterates until the change of its strengths is below tolerance=1e-6 (default);
# measured on the Arena data: 4.7e-9 in log-strength.
EVALICA_ATOL = 1e-6
# choix's default Newton-CG xtol is 1e-5 on the parameters; measured: 5.7e-7.
CHOIX_ATOL = 1e-5


def reference_scores(frame, names):
    winners = {1.0: evalica.Winner.X, 0.0: evalica.Winner.Y, 0.5: evalica.Winner.Draw}
    res = evalica.bradley_terry(frame.candidate_a.tolist(), frame.candidate_b.tolist(),
                                [winners[y] for y in frame.outcome], tie_weight=0.5)
    log_pi = np.log(res.scores.reindex(names).to_numpy(dtype=float))
    index = {n: i for i, n in enumerate(names)}
    data = []
    for a, b, y in zip(frame.candidate_a, frame.candidate_b, frame.outcome):
        i, j = index[a], index[b]
        data += [(i, j), (i, j)] if y == 1.0 else [(j, i), (j, i)] if y == 0.0 else [(i, j), (j, i)]
    params = choix.opt_pairwise(len(names), data, alpha=RIDGE)
    return log_pi - log_pi.mean(), params - params.mean()


def check_parity(source):
    frame, _ = load_judgments(source)
    assert set(frame.outcome.unique()) <= {0.0, 0.5, 1.0}
    result = oj.fit(frame, "bt", ridge=RIDGE)
    assert result.checks()["all_ok"]
    names = list(result.design.candidates)
    ev, ch = reference_scores(frame, names)
    s = result.scores
    assert np.max(np.abs(s - ev)) < EVALICA_ATOL
    assert np.max(np.abs(s - ch)) < CHOIX_ATOL
    board = arena_leaderboard(result, scale="elo").set_index("candidate")
    elo_evalica = 1000.0 + 400.0 / math.log(10.0) * ev
    assert np.max(np.abs(board.loc[names, "score"].to_numpy() - elo_evalica)) < 400.0 / math.log(10.0) * EVALICA_ATOL
    return np.max(np.abs(s - ev)), np.max(np.abs(s - ch))


def test_parity_on_small_arena_file():
    check_parity(ARENA_EXAMPLE)


@pytest.mark.data
def test_parity_on_shared_chatbot_arena():
    check_parity(shared_data("chatbot_arena"))
