"""Human-vote agreement (oscar_jax.human, ``oscar human``): Appendix F on small fixtures."""

import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq, minimize

from oscar_jax.cli.main import main
from oscar_jax.io.data import shared_data_dir
from oscar_jax.human import calibrate, heldout_log_loss, human_agreement, human_reference, load_votes
from oscar_jax.runtime.validate import OscarInputError


def _logloss(y, p):
    return -(y * np.log(p) + (1 - y) * np.log1p(-p))


def test_calibration_matches_an_independent_optimiser():
    rng = np.random.default_rng(1)
    x = rng.normal(size=300)
    y = rng.choice([0.0, 0.5, 1.0], size=300, p=[0.4, 0.2, 0.4])
    w = rng.integers(0, 4, size=300).astype(float)
    ridge = 0.3

    def objective(a):
        p = 1 / (1 + np.exp(-(a[0] + a[1] * x)))
        return np.sum(w * _logloss(y, p)) + 0.5 * ridge * a @ a

    ref = minimize(objective, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(calibrate(x, y, w, ridge=ridge), ref, atol=1e-6)
    # Broadcasting over a leading axis solves each row on its own.
    both = calibrate(np.stack([x, 2 * x]), y, w, ridge=ridge)
    np.testing.assert_allclose(both[0], ref, atol=1e-6)


def test_calibration_closed_form_two_score_differences():
    # x takes two values: with a negligible ridge the logistic fit is saturated, so
    # σ(α₀ + α₁x) equals the weighted mean vote at each x (ties counted ½).
    x = np.array([-1.0] * 5 + [2.0] * 6)
    y = np.array([0, 0, 1, 0.5, 0, 1, 1, 0.5, 1, 0, 1.0])
    w = np.array([1, 2, 1, 1, 1, 1, 3, 1, 1, 1, 1.0])
    a0, a1 = calibrate(x, y, w)
    for value in (-1.0, 2.0):
        sel = x == value
        mean = np.sum(w[sel] * y[sel]) / np.sum(w[sel])
        assert 1 / (1 + np.exp(-(a0 + a1 * value))) == pytest.approx(mean, abs=1e-6)


def test_heldout_loss_is_the_pooled_leave_one_group_out_loss():
    rng = np.random.default_rng(2)
    n = 200
    x, groups = rng.normal(size=n), rng.integers(0, 5, size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-0.3 - 1.2 * x))).astype(float)
    w = rng.integers(1, 3, size=n).astype(float)
    loss, alphas = heldout_log_loss(x, y, w, groups)
    total = 0.0
    for g in range(5):
        a = calibrate(x, y, w * (groups != g))
        assert np.allclose(alphas[g], a)
        p = 1 / (1 + np.exp(-(a[0] + a[1] * x[groups == g])))
        total += np.sum(w[groups == g] * _logloss(y[groups == g], p))
    assert float(loss) == pytest.approx(total / w.sum(), rel=1e-12)
    # Integer vote weights equal duplicated votes (the bootstrap weights, never resamples).
    rep = np.repeat(np.arange(n), w.astype(int))
    dup, _ = heldout_log_loss(x[rep], y[rep], np.ones(rep.size), groups[rep])
    assert float(dup) == pytest.approx(float(loss), rel=1e-10)


def test_human_reference_two_candidates_closed_form():
    # a beats b 7 times, loses 2, ties 3 (½ each): n = 8.5 wins of 12. With s_a = −s_b = d/2
    # and ridge ½λ(s_a² + s_b²) = λd²/4, the optimum solves 12 σ(d) − 8.5 + λd/2 = 0.
    votes = ([{"question_id": i, "model_a": "a", "model_b": "b", "winner": "model_a", "judge": f"r{i % 3}"}
              for i in range(7)]
             + [{"question_id": 10 + i, "model_a": "b", "model_b": "a", "winner": "model_a", "judge": "r1"}
                for i in range(2)]
             + [{"question_id": 20 + i, "model_a": "a", "model_b": "b", "winner": "tie", "judge": "r2"}
                for i in range(3)])
    d = brentq(lambda t: 12 / (1 + np.exp(-t)) - 8.5 + 0.05 * t / 2, -10, 10, xtol=1e-14)
    res = human_reference(load_votes(votes))
    s = dict(zip(res.design.candidates, res.scores))
    assert s["a"] - s["b"] == pytest.approx(d, abs=1e-8)
    assert s["a"] + s["b"] == pytest.approx(0.0, abs=1e-12)


def _fixture(tmp_path, seed=0, n_prompts=25):
    """LLM judgments with a position bias on one judge, and human votes, on the same prompts."""
    rng = np.random.default_rng(seed)
    cands = ["c0", "c1", "c2", "c3"]
    skill = dict(zip(cands, [1.0, 0.4, -0.3, -1.1]))
    recs, votes = [], []
    for q in range(n_prompts):
        for i in range(4):
            for j in range(i + 1, 4):
                for judge, gamma, pos in (("j1", 1.0, 0.0), ("j2", 0.7, 1.0)):
                    for a, b in ((cands[i], cands[j]), (cands[j], cands[i])):
                        p = 1 / (1 + np.exp(-(gamma * (skill[a] - skill[b]) + pos)))
                        recs.append({"question_id": str(q), "model_a": a, "model_b": b, "judge_model": judge,
                                     "judge_preferred_model": "a" if rng.random() < p else "b"})
                a, b = (cands[i], cands[j]) if rng.random() < 0.5 else (cands[j], cands[i])
                u = rng.random()
                p = 1 / (1 + np.exp(-(skill[a] - skill[b])))
                votes.append({"question_id": q, "model_a": a, "model_b": b, "judge": f"h{q % 4}",
                              "winner": "tie" if u > 0.9 else ("model_a" if u < 0.9 * p else "model_b")})
    data, vfile = tmp_path / "llm.json", tmp_path / "votes.jsonl"
    data.write_text(json.dumps(recs))
    pd.DataFrame(votes).to_json(vfile, orient="records", lines=True)
    return data, vfile


def test_human_agreement_end_to_end(tmp_path):
    data, vfile = _fixture(tmp_path)
    res = human_agreement(data, vfile, ("j", "j+p"), replicates=30, seed=3, show_progress=False)
    assert list(res.human.candidate) == ["c0", "c1", "c2", "c3"]
    assert res.spearman == {"j": pytest.approx(1.0), "j+p": pytest.approx(1.0)}
    assert res.n_votes == 25 * 6 and res.n_prompts == 25 and res.failed == {"j": 0, "j+p": 0}
    for m in ("j", "j+p"):
        lo, hi = res.intervals[m]
        assert lo < res.log_loss[m] < hi and 0.3 < res.log_loss[m] < 0.69
    gain, lo, hi = res.gains["j+p over j"]
    assert gain == pytest.approx(res.log_loss["j"] - res.log_loss["j+p"]) and lo <= hi
    # Deterministic per seed.
    again = human_agreement(data, vfile, ("j", "j+p"), replicates=30, seed=3, show_progress=False)
    assert again.intervals == res.intervals


def test_votes_must_share_candidates_and_prompts(tmp_path):
    data, vfile = _fixture(tmp_path, n_prompts=6)
    bad = pd.read_json(vfile, lines=True)
    with pytest.raises(OscarInputError, match=r"candidate\(s\) \['zz'\] absent"):
        human_agreement(data, bad.assign(model_a="zz"), ("j",), replicates=0)
    with pytest.raises(OscarInputError, match="prompt '99' has no LLM judgments"):
        human_agreement(data, bad.assign(question_id=99), ("j",), replicates=0)


def test_cli_human_json(tmp_path, capsys):
    # The data and replicates of test_human_agreement_end_to_end: the same shapes, so the
    # programs it compiled serve here (this test checks the command, not the fits).
    data, vfile = _fixture(tmp_path)
    assert main(["human", str(data), "--votes", str(vfile), "--models", "j,j+p", "--replicates", "30",
                 "--seed", "3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in out["models"]] == ["j", "j+p"] and out["replicates"] == 30
    assert out["gains"][0]["contrast"] == "j+p over j" and len(out["human_ranking"]) == 4
    assert main(["human", str(data), "--votes", str(vfile), "--models", "j", "--replicates", "0"]) == 0
    assert "held-out human-vote log loss" in capsys.readouterr().out


def test_mtbench_human_votes():
    root = shared_data_dir()
    paths = (root / "xu2026" / "judge_results_10k_mtbench.json", root / "mtbench_human" / "human_judgments.jsonl",
             root / "mtbench_answers")
    if not all(p.exists() for p in paths):
        message = f"shared data {[str(p) for p in paths]} absent (set OSCAR_DATA_DIR to run this test)"
        if os.environ.get("OSCAR_REQUIRE_DATA") == "1":
            pytest.fail(message)
        pytest.skip(message)
    res = human_agreement(paths[0], paths[1], responses=paths[2], replicates=0)
    # Section 6.4 / Appendix F.2: 1,689 votes; the human order; J swaps the top two (1 − 12/210).
    assert res.n_votes == 1689 and res.n_prompts == 80
    assert list(res.human.candidate) == ["gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b-v1.2",
                                         "alpaca-13b", "llama-13b"]
    assert res.spearman["j"] == pytest.approx(1 - 12 / 210) and res.spearman["j+p"] == pytest.approx(1.0)
    assert res.spearman["oscar"] == pytest.approx(1.0)
    # Table F1 point values (0.5687, 0.5604, 0.5606) within a fraction of their bootstrap
    # spread (~0.017 SD); the J+P gain is positive as published (0.0083).
    for m, pub in (("j", 0.5687), ("j+p", 0.5604), ("oscar", 0.5606)):
        assert res.log_loss[m] == pytest.approx(pub, abs=0.006)
    assert 0.004 < res.gains["j+p over j"][0] < 0.013
