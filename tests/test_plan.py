"""``oscar plan`` (issue 40): the expected information, the batch criterion and the command.

What is proved here: the candidates' information factors reproduce the fit's own expected
information (an independent assembly of the same Hessian); the greedy's running rank-one
updates equal the sandwich recomputed from scratch, and its first pick is the best one by
brute force; the preposterior sign probability matches its closed-form limits and a Monte
Carlo; on designed data the plan buys what it should (the one unresolved pair, the
cheaper judge per unit of information, the swapped order of a judge whose D is
confounded), deterministically per seed; its file is input to ``oscar fit``; bad options
exit 2 before the data are read.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.cli.main import main
from oscar_jax.infer.batch_design import (Criterion, greedy_allocation, planning_covariance, sign_probability,
                                         top1_probability)
from oscar_jax.infer.derivatives import expected_information
from oscar_jax.infer.judgment_info import information_factors_jit
from oscar_jax.model.links import sigmoid
from oscar_jax.plan import candidate_judgments

TIGHT = 1e-9   # identities computed two ways in float64 (a few hundred terms)


def judgments(seed: int, scores: dict, judges: dict, per_pair: dict | int, fixed_order=(), prompts_per=1) -> pd.DataFrame:
    """Bradley–Terry judgments with judge sensitivity γ and position bias β: ``judges`` name → (γ, β).

    ``per_pair``: judgments of each unordered pair per judge (an int, or a dict pair → n with a
    default under None); judges in ``fixed_order`` always show the pair's first-named candidate
    in slot A, the others alternate orders. ``prompts_per`` judgments share a prompt id.
    """
    rng = np.random.default_rng(seed)
    names = list(scores)
    rows = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            n = per_pair if isinstance(per_pair, int) else per_pair.get((x, y), per_pair[None])
            for judge, (gamma, beta) in judges.items():
                for t in range(n):
                    a, b = (x, y) if judge in fixed_order or t % 2 == 0 else (y, x)
                    p = sigmoid(gamma * (scores[a] - scores[b]) + beta)
                    rows.append((a, b, judge, "A" if rng.random() < p else "B"))
    frame = pd.DataFrame(rows, columns=["candidate_a", "candidate_b", "judge", "outcome"])
    frame.insert(0, "prompt", [f"q{i // prompts_per}" for i in range(len(frame))])
    return frame


@pytest.fixture(scope="module")
def sim_fit():
    return oj.fit(oj.simulate_design(seed=3, n_prompts=150), "oscar", warn=False)


@pytest.fixture(scope="module")
def close_pair():
    """Four candidates: b and c nearly tied, everything else far apart and well measured."""
    frame = judgments(0, {"a": 2.0, "b": 0.05, "c": 0.0, "d": -2.0}, {"j1": (1.0, 0.3), "j2": (1.0, -0.2)},
                      {("b", "c"): 6, None: 60})
    return frame, oj.fit(frame, "j+p", warn=False)


# ---------------------------------------------------------------------------------- numerics

def test_information_factors_reproduce_the_fits_expected_information(sim_fit):
    r = sim_fit
    arr = r.design.arrays
    u = np.asarray(information_factors_jit(r.theta, arr.a, arr.b, arr.k, arr.z, layout=r.layout))
    w = np.asarray(arr.stats)[:, 0]
    mask = np.asarray(r.core.mask)
    ours = (u.T * w) @ u * np.outer(mask, mask)
    theirs = np.asarray(expected_information(r.theta, arr, arr.stats, r.layout)) * np.outer(mask, mask)
    assert np.max(np.abs(ours - theirs)) < TIGHT * np.max(np.abs(theirs))


def _random_problem(seed, p=7, n=12):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p, p))
    h = a @ a.T + p * np.eye(p)
    m = rng.standard_normal((p, p))
    v = m @ m.T + np.eye(p)
    binv = np.linalg.inv(h)
    return h, v, binv @ v @ binv, rng.standard_normal((n, p)), rng.standard_normal((3, p))


@pytest.mark.parametrize("kind", ["variance", "sign"])
def test_rank_one_updates_equal_the_recomputed_sandwich(kind):
    h, v, cov, u, g = _random_problem(1)
    crit = Criterion(g, kind, np.array([0.1, -0.5, 2.0]), np.ones(3))
    alloc = greedy_allocation(u, np.ones(len(u)), np.full(len(u), np.inf), h, cov, np.ones(7), crit, 40,
                              rng=np.random.default_rng(0), max_steps=20)  # steps of 2 copies
    assert alloc.counts.sum() == 40 and alloc.steps == 20
    np.testing.assert_allclose(alloc.cov_before, planning_covariance(h, cov), rtol=0, atol=TIGHT)
    meat = h @ alloc.cov_before @ h
    added = (u.T * alloc.counts) @ u
    hinv = np.linalg.inv(h + added)
    direct = hinv @ (meat + added) @ hinv   # new judgments = new clusters: bread and meat gain u uᵀ
    assert np.max(np.abs(direct - alloc.cov_after)) < TIGHT * np.max(np.abs(direct))


def test_planning_covariance_is_the_sandwich_raised_to_the_model_based():
    h, v, cov, _, _ = _random_problem(3)
    binv = np.linalg.inv(h)
    # A meat above the bread in every direction is kept: the sandwich itself.
    np.testing.assert_allclose(planning_covariance(h, binv @ (2.0 * h) @ binv), 2.0 * binv, rtol=TIGHT)
    # Otherwise the result is at least B = H⁻¹ and at least the sandwich, in every direction.
    out = planning_covariance(h, cov)
    assert np.linalg.eigvalsh(out - binv).min() > -TIGHT and np.linalg.eigvalsh(out - cov).min() > -TIGHT


def test_first_pick_maximises_the_reduction_per_unit_cost():
    h, v, cov, u, g = _random_problem(2)
    cost = np.linspace(1.0, 3.0, len(u))
    crit = Criterion(g, "variance", np.zeros(3), np.array([1.0, 2.0, 0.5]))
    alloc = greedy_allocation(u, cost, np.full(len(u), np.inf), h, cov, np.ones(7), crit, 3.0,
                              rng=np.random.default_rng(0))  # one judgment per step
    plan, gains = planning_covariance(h, cov), []
    for c in range(len(u)):
        hinv = np.linalg.inv(h + np.outer(u[c], u[c]))
        after = hinv @ (h @ plan @ h + np.outer(u[c], u[c])) @ hinv
        gains.append(np.sum(crit.weights * (np.einsum("jp,pq,jq->j", g, plan - after, g))) / cost[c])
    assert int(alloc.sequence[0]) == int(np.argmax(gains))


def test_sign_probability_closed_forms_and_monte_carlo():
    from scipy.special import ndtr

    m, v0 = 0.4, 1.3
    assert sign_probability(m, v0, v0) == pytest.approx(ndtr(m / np.sqrt(v0)), abs=1e-15)   # no new data
    assert sign_probability(m, v0, 0.0) == pytest.approx(1.0, abs=1e-15)                     # the truth revealed
    rho = np.sqrt(0.6)  # m = 0: the two signs agree with probability ½ + arcsin(ρ)/π
    assert sign_probability(0.0, 1.0, 0.4) == pytest.approx(0.5 + np.arcsin(rho) / np.pi, abs=1e-12)
    rng = np.random.default_rng(0)
    n = 400_000
    est = m + np.sqrt(v0 - 0.5) * rng.standard_normal(n)
    truth = est + np.sqrt(0.5) * rng.standard_normal(n)
    mc = np.mean(np.sign(truth) == np.sign(est))
    assert abs(sign_probability(m, v0, 0.5) - mc) < 4 * np.sqrt(mc * (1 - mc) / n)


def test_top1_probability_of_two_candidates_is_the_sign_probability():
    # x = (m, 0): the gap has variance v0 now (cov diag(v0, 0)) and v1 after.
    m, v0, v1 = 0.3, 0.5, 0.2
    before, after = top1_probability(np.array([m, 0.0]), np.diag([v0, 0.0]), np.diag([v1, 0.0]),
                                     np.random.default_rng(1), draws=200_000)
    from scipy.special import ndtr

    tol = 4 * np.sqrt(0.25 / 200_000)
    assert before == pytest.approx(ndtr(m / np.sqrt(v0)), abs=tol)
    assert after == pytest.approx(float(sign_probability(m, v0, v1)), abs=tol)


# ---------------------------------------------------------------------------------- behaviour

def test_the_unresolved_pair_gets_most_of_the_budget(close_pair):
    _, fit = close_pair
    p = oj.plan(fit, budget=200, target="ranking", explore=0.0)
    pair = p.batch[["candidate_a", "candidate_b"]].apply(lambda r: frozenset(r), axis=1)
    assert np.mean(pair == frozenset({"b", "c"})) > 0.6
    rows = p.summary["rows"]
    bc = rows[(rows.a.isin(["b", "c"])) & (rows.b.isin(["b", "c"]))].iloc[0]
    assert bc.width_after < 0.8 * bc.width
    assert p.summary["kendall_tau"]["after"] > p.summary["kendall_tau"]["before"]


def test_a_pairs_target_buys_what_informs_that_pair(close_pair):
    _, fit = close_pair
    near = oj.plan(fit, budget=100, target="pairs:b,c", explore=0.0)
    pair = near.batch[["candidate_a", "candidate_b"]].apply(lambda r: frozenset(r), axis=1)
    assert np.mean(pair == frozenset({"b", "c"})) > 0.8
    # a and d are four logits apart: a direct judgment is nearly certain (p(1−p) ≈ 0.02), so
    # the gap is learnt through the middle candidates, as their information says.
    far = oj.plan(fit, budget=100, target="pairs:a,d", explore=0.0)
    pair = far.batch[["candidate_a", "candidate_b"]].apply(lambda r: frozenset(r), axis=1)
    assert np.mean(pair == frozenset({"a", "d"})) < 0.2
    assert all(("a" in p) != ("d" in p) for p in pair)


@pytest.fixture(scope="module")
def three_judges():
    """Two equally sensitive judges and one five times as sensitive."""
    frame = judgments(1, {"a": 0.3, "b": 0.1, "c": 0.0, "d": -0.2}, {"cheap": (1.0, 0.0), "dear": (1.0, 0.0),
                                                                      "sharp": (5.0, 0.0)}, 40)
    return oj.fit(frame, "j", warn=False)


def _best_reduction(fit, judge: str, target) -> float:
    """Largest reduction of Var(h) of the target pair by one judgment of ``judge`` (brute force)."""
    cand = candidate_judgments(fit.design, fit.layout, (), np.ones(fit.design.n_judge))
    u = np.asarray(information_factors_jit(fit.theta, cand.a, cand.b, cand.k, cand.z, layout=fit.layout))
    values, grads = oj.infer.judgment_info.plan_targets_jit(fit.theta, fit.layout)
    i, j = (fit.design.candidates.index(n) for n in target)
    g = np.asarray(grads.h)[i, j]
    h = np.asarray(fit.core.hess)
    cov = planning_covariance(h, np.asarray(fit.cov.cluster))
    best = 0.0
    for c in np.flatnonzero(cand.k == fit.design.judges.index(judge)):
        hinv = np.linalg.inv(h + np.outer(u[c], u[c]))
        after = hinv @ (h @ cov @ h + np.outer(u[c], u[c])) @ hinv
        best = max(best, float(g @ (cov - after) @ g))
    return best


def test_a_judge_at_ten_times_the_cost_is_chosen_in_proportion_to_its_information(three_judges):
    fit, pair = three_judges, ("b", "c")
    target = "pairs:b,c"
    # Two judges alike: the one at 10× the cost is never worth buying by the greedy, and gets
    # only its part of the random share (a third of 20 % of the spending, per unit cost).
    greedy = oj.plan(fit, budget=300, target=target, costs={"dear": 10}, explore=0.0)
    spent = greedy.summary["by_judge"].set_index("judge")["spent"]
    assert spent["dear"] == 0
    mixed = oj.plan(fit, budget=300, target=target, costs={"dear": 10})
    spent = mixed.summary["by_judge"].set_index("judge")["spent"]
    assert spent["dear"] <= 0.15 * mixed.summary["spent"]
    # The sharp judge's information per judgment is R times the cheap one's (R ≈ 5 here:
    # less than γ² = 25 since part of it goes to its own γ). Priced at R/2 it is the better
    # buy, at 2R the worse one.
    ratio = _best_reduction(fit, "sharp", pair) / _best_reduction(fit, "cheap", pair)
    assert ratio > 2.0
    share = {}
    for factor in (0.5, 2.0):
        p = oj.plan(fit, budget=300, target=target, costs={"sharp": factor * ratio}, explore=0.0)
        spent = p.summary["by_judge"].set_index("judge")["spent"]
        share[factor] = spent["sharp"] / p.summary["spent"]
    assert share[0.5] > 0.7 and share[2.0] < 0.2


def test_the_random_share_is_spent_uniformly_over_candidates_per_unit_cost():
    h, _, cov, u, g = _random_problem(5)
    cost = np.linspace(1.0, 3.0, len(u))
    crit = Criterion(g, "variance", np.zeros(3), np.ones(3))
    alloc = greedy_allocation(u, cost, np.full(len(u), np.inf), h, cov, np.ones(7), crit, 6000.0,
                              rng=np.random.default_rng(0), explore=0.98)
    spent = alloc.counts * cost
    expected = 0.98 * 6000 / len(u)
    assert np.all(spent >= 0.8 * expected)          # every candidate gets its share (greedy adds on top)
    assert np.sort(spent)[len(u) // 2] < 1.2 * expected


def test_a_judge_with_confounded_position_gets_the_swapped_order():
    # judge "fixed" always showed the first-named (stronger) candidate first: its D is
    # confounded with the gaps it saw. The plan should buy it the other order.
    scores = {"a": 0.6, "b": 0.3, "c": 0.0, "d": -0.3}
    frame = judgments(2, scores, {"fixed": (1.0, 0.8), "even": (1.0, 0.0)}, 30, fixed_order=("fixed",))
    fit = oj.fit(frame, "j+p", warn=False)
    p = oj.plan(fit, budget=200, target="judges", explore=0.0)
    mine = p.batch[p.batch.judge == "fixed"]
    assert len(mine) > 20
    swapped = [scores[a] < scores[b] for a, b in zip(mine.candidate_a, mine.candidate_b)]
    assert np.mean(swapped) > 0.8
    rows = p.summary["rows"]
    d = rows[(rows.quantity == "D") & (rows.a == "fixed")].iloc[0]
    assert d.width_after < 0.8 * d.width


def test_deterministic_per_seed_and_placed_on_the_least_used_prompts(close_pair):
    frame, fit = close_pair
    pool = [f"pool{i}" for i in range(40)] + ["q0"]  # q0 already holds a judgment
    one = oj.plan(fit, budget=60, target="ranking", prompts=pool, seed=5)
    two = oj.plan(fit, budget=60, target="ranking", prompts=pool, seed=5)
    other = oj.plan(fit, budget=60, target="ranking", prompts=pool, seed=6)
    pd.testing.assert_frame_equal(one.batch, two.batch)
    assert one.summary["p_top1"] == two.summary["p_top1"]
    assert not one.batch.prompt.equals(other.batch.prompt)
    counts = one.batch.prompt.value_counts()
    assert set(counts.index) <= set(pool) and counts.min() >= 1 and counts.max() - counts.min() <= 1
    assert "q0" not in set(one.batch.prompt[:40])  # an unused prompt first


def test_a_judgment_pool_limits_the_choice(close_pair):
    _, fit = close_pair
    pool = pd.DataFrame({"prompt": ["x1", "x2", "x3", "x4"], "candidate_a": ["b", "c", "a", "c"],
                         "candidate_b": ["c", "b", "d", "b"], "judge": ["j1", "j2", "j1", "j2"]})
    p = oj.plan(fit, budget=10, target="ranking", prompts=pool)
    assert len(p.batch) <= 4
    taken = set(map(tuple, p.batch[["prompt", "candidate_a", "candidate_b", "judge"]].to_numpy()))
    assert taken <= set(map(tuple, pool.to_numpy()))


def test_numbers_the_data_do_not_determine_are_flagged_in_every_output(capsys):
    frame = judgments(3, {"a": 0.3, "b": 0.0, "c": -0.3}, {"j1": (1.0, 0.0), "j2": (1.0, 0.2)}, 20)
    wins = [(f"w{i}", "z", n, j, "A") for i, (n, j) in enumerate([(n, j) for n in "abc" for j in ("j1", "j2")] * 3)]
    frame = pd.concat([frame, pd.DataFrame(wins, columns=frame.columns)], ignore_index=True)  # z never loses
    p = oj.plan(frame, "j+p", budget=20, target="top1")
    rows = p.summary["rows"]
    assert (rows.flag == "unbounded").all() and rows[["lo", "hi", "width", "width_after"]].isna().all().all()
    assert p.summary["p_top1"]["before"] is None and "z not determined" in p.summary["p_top1"]["flag"]
    payload = json.loads(oj.results.jsonable.to_json(p.to_dict()))
    assert payload["top_pair"]["width"] is None and payload["rows"][0]["width_after"] is None
    assert "not determined" in repr(p)
    from oscar_jax.report.plan_text import plan_text

    text = plan_text(p.summary, p.batch)
    assert "P(correct top-1)         not determined (z not determined by the data)" in text
    assert "0.000" not in text.split("target quantities")[1].split("by judge")[0]


# ---------------------------------------------------------------------------------- the command

def test_the_batch_is_input_to_oscar_fit(close_pair, tmp_path, capsys):
    frame, fit = close_pair
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "next.csv"
    assert main(["plan", str(data), "--model", "j+p", "--budget", "50", "--target", "top1", "--out", str(out),
                 "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["judgments"] == 50 and payload["out"] == str(out)
    assert 0.0 <= payload["p_top1"]["before"] <= payload["p_top1"]["after"] + 0.02
    planned = pd.read_csv(out, keep_default_na=False)
    assert planned.columns.tolist() == ["prompt", "candidate_a", "candidate_b", "judge", "outcome"]
    assert main(["fit", str(out)]) == 2  # outcomes not filled in yet: named, exit 2
    assert "outcome" in capsys.readouterr().err
    planned["outcome"] = np.where(np.arange(len(planned)) % 3 == 0, "B", "A")
    both = tmp_path / "both.csv"
    pd.concat([frame, planned], ignore_index=True).to_csv(both, index=False)
    assert main(["fit", str(both), "--model", "j+p", "--format", "json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["data"]["n_kept"] == len(frame) + 50


def test_the_table_summary(close_pair, tmp_path, capsys):
    frame, _ = close_pair
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    assert main(["plan", str(data), "--model", "j+p", "--budget", "30", "--target", "judges", "--judges", "j1=2"]) == 0
    out = capsys.readouterr().out
    assert "P(correct top-1)" in out and "by judge" in out and "κ j1" in out
    assert "batch (first 5 of" in out


@pytest.mark.parametrize("option, message", [
    (["--budget", "0"], "budget must be a positive"),
    (["--budget", "abc"], "budget must be a positive number"),
    (["--target", "best"], "target 'best' is not one of"),
    (["--target", "pairs:a"], "is not a pair A,B"),
    (["--judges", "j1=0"], "costs must be positive"),
    (["--judges", "j1"], "is not NAME=COST"),
    (["--judges", "j1=cheap"], "not a number"),
    (["--out", "next.txt"], ".csv or .jsonl"),
    (["--seed", "-1"], "is not a seed"),
    (["--explore", "1"], "explore must be a share in [0, 1)"),
    (["--model", "davidson+plf"], "fractional-tie"),
    (["--model", "j+q"], "unknown term letter"),
    (["--prompts", "/nonexistent/pool.jsonl"], "does not exist"),
])
def test_bad_options_exit_2_before_the_data_are_read(option, message, tmp_path, capsys):
    data = tmp_path / "data.csv"
    data.write_text("not,a,judgments\nfile,at,all\n")  # reading it would fail with its own message
    argv = ["plan", str(data), "--budget", "10"] + option
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own type errors (e.g. --seed) exit 2 the same way
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "data.csv" not in err


@pytest.mark.parametrize("option, message", [
    (["--judges", "nobody=2"], "judge 'nobody' is not in the data"),
    (["--target", "pairs:a,zz"], "candidate 'zz' is not in the data"),
    (["--budget", "0.5", "--judges", "j1=1,j2=1"], "below the cheapest"),
])
def test_bad_names_exit_2(close_pair, tmp_path, option, message, capsys):
    frame, _ = close_pair
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    argv = ["plan", str(data), "--budget", "10", "--model", "j+p"] + option
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_set_up_keywords_select_the_data_as_fit_does(close_pair):
    frame, fit = close_pair
    one = oj.plan(frame, "j+p", budget=20, filters={"judge": "j2"}, explore=0.0)
    assert one.fit.design.judges == ("j2",) and set(one.batch.judge) == {"j2"}
    assert one.fit.design.n_records == int((frame.judge == "j2").sum())
    both = oj.plan(oj.prepare(frame, "j+p"), budget=20, explore=0.0)
    assert set(both.fit.design.judges) == {"j1", "j2"} and both.fit.spec.name == fit.spec.name
    with pytest.raises(oj.OscarInputError, match="fixed when the fit is made"):
        oj.plan(fit, budget=20, filters={"judge": "j2"})


def test_predicted_length_contrasts_are_the_least_squares_fit(sim_fit):
    d = sim_fit.design
    arr = d.arrays
    a, b, w, length = (np.asarray(x) for x in (arr.a, arr.b, arr.stats[:, 0], arr.z[:, 0]))
    cand = candidate_judgments(d, sim_fit.layout, ("len",), np.ones(d.n_judge))
    m = np.zeros(d.n_cand)   # read m back off the candidates: L(a, b) = m_a − m_b, Σ m = 0
    for i in range(d.n_cand):
        m[i] = np.mean(cand.z[cand.a == i, 0]) * (d.n_cand - 1) / d.n_cand
    x = np.zeros((len(a) + 1, d.n_cand))
    x[np.arange(len(a)), a], x[np.arange(len(a)), b], x[-1] = 1.0, -1.0, 1.0
    root = np.sqrt(np.append(w, 1.0))
    dense = np.linalg.lstsq(x * root[:, None], np.append(length, 0.0) * root, rcond=None)[0]
    np.testing.assert_allclose(m, dense, rtol=0, atol=TIGHT)


def test_candidates_cover_every_ordered_pair_and_judge(sim_fit):
    r = sim_fit
    cand = candidate_judgments(r.design, r.layout, r.effective_spec.terms, np.ones(r.design.n_judge))
    c, k = r.design.n_cand, r.design.n_judge
    assert len(cand.a) == c * (c - 1) * k and np.all(cand.a != cand.b)
    assert len(set(zip(cand.a, cand.b, cand.k))) == len(cand.a)


# ---------------------------------------------------------------------------------- the studies

def test_the_simulation_study_runs(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.studies import plan_simulation

    out = plan_simulation.main(["--quick", "--out", str(tmp_path / "sim")])
    assert set(out["rows"].arm) == set(plan_simulation.ARMS)
    assert (tmp_path / "sim.md").read_text(encoding="utf-8").startswith("# oscar plan: simulation")
    assert len(out["budgets"]) == 6


def test_the_replay_study_runs(tmp_path):
    import sys
    from pathlib import Path

    from helpers import shared_data

    shared_data("mtbench")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.studies import plan_replay

    out = plan_replay.main(["--quick", "--out", str(tmp_path / "replay")])
    assert set(out["rows"].arm) == set(plan_replay.ARMS) and len(out["rows"]) == 6
    first = out["rows"][out["rows"].share == 0.1]
    assert first.width_top.nunique() == 1  # every arm starts from the same revealed judgments
