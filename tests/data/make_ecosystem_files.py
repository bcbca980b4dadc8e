"""Regenerate the small ecosystem-format test files in this folder (seeded, synthetic).

One set of 240 synthetic judgments (20 prompts × 3 models vs the baseline × 2 judges ×
2 position-swapped games) is written in every input convention oscar_jax reads, so the
tests can check that each convention gives the same fit as our own schema:

* ``eco_oscar.csv``        oscar schema (prompt, candidate_a, candidate_b, judge, outcome, verdict)
* ``oscar_jax/io/examples/arena_battles.csv``  Chatbot Arena battles (model_a, model_b, winner,
  question_id, judge); shipped with the package as its example (``oscar_jax.example_path()``)
* ``eco_evalica.csv``      evalica CLI (left, right, winner, question_id, judge)
* ``eco_alpacaeval.json``  AlpacaEval annotations (instruction, generator_1/2, preference, annotator)
* ``eco_arenahard.jsonl``  arena-hard judgments (question_id, model, baseline, judge, games[].score)
* ``eco_noties_oscar.csv`` / ``eco_crowdkit.csv``  the same records with every tie resolved
  (crowd-kit's format has no ties), oscar schema and crowd-kit (worker, left, right, label, task)

Nothing here comes from the shared datasets. Run ``python tests/data/make_ecosystem_files.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
BASELINE = "gpt-4-0314"
MODELS = ("claude-3-haiku", "llama-3-8b-instruct", "mixtral-8x7b-instruct")
JUDGES = ("gpt-4-turbo", "claude-3-opus")
SCORE = {BASELINE: 0.0, "claude-3-haiku": 0.6, "llama-3-8b-instruct": -0.5, "mixtral-8x7b-instruct": 0.2}
GAMMA = {"gpt-4-turbo": 1.0, "claude-3-opus": 0.7}
POSITION = {"gpt-4-turbo": 0.5, "claude-3-opus": -0.3}
N_PROMPTS = 20


def records(seed: int = 9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(N_PROMPTS):
        for model in MODELS:
            for judge in JUDGES:
                # arena-hard game 1 shows the baseline first, game 2 the model first.
                for a, b in ((BASELINE, model), (model, BASELINE)):
                    eta = GAMMA[judge] * (SCORE[a] - SCORE[b]) + POSITION[judge]
                    p = 1.0 / (1.0 + np.exp(-eta))
                    u, v = rng.uniform(), rng.uniform()
                    if v < 0.15:
                        verdict = "A=B"
                    elif u < p:
                        verdict = "A>>B" if u < 0.35 * p else "A>B"
                    else:
                        verdict = "B>>A" if u > 1 - 0.35 * (1 - p) else "B>A"
                    rows.append({"q": q, "model": model, "judge": judge, "a": a, "b": b, "verdict": verdict})
    frame = pd.DataFrame(rows)
    # Every third tie is an Arena "tie (bothbad)" (kept apart, scored ½ like a tie).
    ties = np.flatnonzero(frame.verdict == "A=B")
    frame["bothbad"] = False
    frame.loc[ties[::3], "bothbad"] = True
    return frame


def main():
    t = records()
    y = t.verdict.map({"A>>B": 1.0, "A>B": 1.0, "A=B": 0.5, "B>A": 0.0, "B>>A": 0.0})
    qid = [f"q{q:02d}" for q in t.q]
    oscar_outcome = np.where(t.bothbad, "tie (bothbad)", y.map({1.0: "A", 0.0: "B", 0.5: "tie"}))
    pd.DataFrame({"prompt": qid, "candidate_a": t.a, "candidate_b": t.b, "judge": t.judge,
                  "outcome": oscar_outcome, "verdict": t.verdict}).to_csv(HERE / "eco_oscar.csv", index=False)
    winner = np.where(t.bothbad, "tie (bothbad)", y.map({1.0: "model_a", 0.0: "model_b", 0.5: "tie"}))
    pd.DataFrame({"question_id": qid, "model_a": t.a, "model_b": t.b, "winner": winner,
                  "judge": t.judge}).to_csv(HERE.parents[1] / "oscar_jax" / "io" / "examples" / "arena_battles.csv", index=False)
    pd.DataFrame({"left": t.a, "right": t.b, "winner": y.map({1.0: "left", 0.0: "right", 0.5: "tie"}),
                  "question_id": qid, "judge": t.judge}).to_csv(HERE / "eco_evalica.csv", index=False)
    pref = y.map({1.0: 1.0, 0.0: 2.0, 0.5: 1.5}).to_numpy().copy()
    # A few draws use AlpacaEval's legacy 0 code.
    legacy = np.flatnonzero(pref == 1.5)[1::4]
    pref[legacy] = 0.0
    alpaca = [{"instruction": f"Question {q + 1}: explain topic {q + 1}.", "generator_1": a, "generator_2": b,
               "preference": float(p), "annotator": j, "dataset": "synthetic"}
              for q, a, b, p, j in zip(t.q, t.a, t.b, pref, t.judge)]
    (HERE / "eco_alpacaeval.json").write_text(json.dumps(alpaca, indent=1) + "\n", encoding="utf-8")
    with open(HERE / "eco_arenahard.jsonl", "w", encoding="utf-8") as f:
        for (q, model, judge), g in t.groupby(["q", "model", "judge"], sort=False):
            games = [{"user_prompt": "…", "judgment": "…", "score": s} for s in g.verdict]
            f.write(json.dumps({"question_id": f"q{q:02d}", "model": model, "baseline": BASELINE,
                                "judge": judge, "games": games}) + "\n")
    # Resolve ties for crowd-kit (no ties in that format): the first-shown response wins.
    decisive = np.where(y == 0.5, 1.0, y)
    pd.DataFrame({"prompt": qid, "candidate_a": t.a, "candidate_b": t.b, "judge": t.judge,
                  "outcome": np.where(decisive == 1.0, "A", "B")}).to_csv(HERE / "eco_noties_oscar.csv", index=False)
    pd.DataFrame({"worker": t.judge, "left": t.a, "right": t.b, "label": np.where(decisive == 1.0, t.a, t.b),
                  "task": qid}).to_csv(HERE / "eco_crowdkit.csv", index=False)


if __name__ == "__main__":
    main()
