"""Exact-swap position calibration (oscar_jax.swaps; Appendix D.2)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from oscar_jax.infer.swap_core import SwapArrays, group_loglik, judge_information, judge_loglik, log_esp, swap_fit_core
from oscar_jax.swaps import (calibrate_positions, find_swap_groups, pack_groups, simulate_swap_arrays, simulate_swap_frame,
                             simulate_swaps, swap_average_frame)
from oscar_jax.runtime.validate import OscarInputError

# Closed-form / enumeration agreement: both sides are exact sums of ≤ 2^7 terms in float64.
EXACT = 1e-12
# Recovery: |β̂ − β| within 4 standard errors (two-sided probability of a false alarm ≈ 6e-5 per judge).
Z_RECOVERY = 4.0


def _enumerate(beta, z, o):
    """Brute force: (conditional log-likelihood, Var(S | T)) over all y with Σy = T."""
    t = int(round(z.sum()))
    s = np.array([np.dot(o, y) for y in itertools.product((0, 1), repeat=len(z)) if sum(y) == t])
    w = np.exp(beta * s - np.max(beta * s))
    p = w / w.sum()
    ll = beta * np.dot(o, z) - (np.log(w.sum()) + np.max(beta * s))
    var = np.sum(p * s ** 2) - np.sum(p * s) ** 2
    return ll, var


def test_log_esp_matches_enumeration():
    rng = np.random.default_rng(1)
    for n in range(1, 8):
        w = rng.normal(size=n) * 2.0
        mask = rng.random(n) < 0.8
        mask[0] = True
        e = np.exp(np.asarray(log_esp(jnp.asarray(w), jnp.asarray(mask))))
        x = np.exp(w[mask])
        for j in range(n + 1):
            direct = sum(np.prod(c) for c in itertools.combinations(x, j)) if j <= x.size else 0.0
            assert e[j] == pytest.approx(direct, rel=EXACT, abs=1e-300)


@pytest.mark.parametrize("general_o", [False, True])
def test_group_loglik_and_information_match_enumeration(general_o):
    # 80 random groups of 2–7 records, padded to 7 and evaluated in one call (each group
    # its own "judge", so judge_information returns every group's Var(S | T)).
    rng = np.random.default_rng(2)
    m, n_max = 80, 7
    z, o, mask = np.zeros((m, n_max)), np.zeros((m, n_max)), np.zeros((m, n_max), bool)
    beta = rng.normal(size=m) * 1.5
    sizes = rng.integers(2, n_max + 1, size=m)
    for i, n in enumerate(sizes):
        o[i, :n] = rng.normal(size=n) if general_o else rng.choice([-1.0, 1.0], size=n)
        z[i, :n] = rng.integers(0, 2, size=n)
        mask[i, :n] = True
    arrays = SwapArrays(jnp.asarray(z), jnp.asarray(o), jnp.asarray(mask), jnp.arange(m, dtype=jnp.int32))
    ll = np.asarray(jax.jit(jax.vmap(group_loglik))(jnp.asarray(beta), arrays.z, arrays.o, arrays.mask))
    info = np.asarray(jax.jit(judge_information, static_argnums=2)(jnp.asarray(beta), arrays, m))
    checked = 0
    for i, n in enumerate(sizes):
        ll_bf, var_bf = _enumerate(beta[i], z[i, :n], o[i, :n])
        t = int(z[i].sum())
        if 0 < t < n and var_bf > 1e-9:
            assert ll[i] == pytest.approx(ll_bf, rel=EXACT, abs=EXACT)
            assert info[i] == pytest.approx(var_bf, rel=1e-10, abs=EXACT)
            checked += 1
        else:  # T = 0, T = n or a constant S: no information, exactly zero
            assert ll[i] == 0.0 and info[i] == 0.0
    assert checked > 20


def test_padding_is_invisible():
    z = jnp.array([1.0, 0.0, 1.0, 0.0, 0.0])
    o = jnp.array([1.0, -1.0, -1.0, 1.0, 1.0])
    mask = jnp.array([True, True, True, True, False])
    padded = float(group_loglik(0.8, z.at[4].set(1.0), o, mask))
    assert padded == pytest.approx(float(group_loglik(0.8, z[:4], o[:4], mask[:4])), rel=EXACT)


def test_uninformative_groups_contribute_nothing():
    table = simulate_swaps(3, [0.7, -0.4], n_groups=150, group_size=4)
    base = calibrate_positions(table)
    # Add T = 0 and T = n groups (always / never the chosen response) to both judges.
    extra = []
    gid = int(table.group.max()) + 1
    for judge in ("judge0", "judge1"):
        for value in (0.0, 1.0):
            for _ in range(25):
                extra.append(pd.DataFrame({"judge": judge, "group": gid, "z": value, "o": [1.0, 1.0, -1.0, -1.0]}))
                gid += 1
    more = calibrate_positions(pd.concat([table] + extra, ignore_index=True))
    np.testing.assert_allclose(more.beta, base.beta, rtol=0, atol=1e-10)
    np.testing.assert_allclose(more.core.info, base.core.info, rtol=1e-12)
    np.testing.assert_allclose(more.core.loglik, base.core.loglik, rtol=1e-12)
    assert (more.core.n_groups - base.core.n_groups == 50).all()
    assert (more.core.n_informative == base.core.n_informative).all()
    # Their contribution is exactly 0 at every β, and so is its derivative.
    arrays, _, _ = pack_groups(pd.concat(extra, ignore_index=True), judges=("judge0", "judge1"))
    for b in (-3.0, 0.0, 2.5):
        beta = jnp.array([b, -b])
        assert np.all(np.asarray(judge_loglik(beta, arrays, 2)) == 0.0)
        assert np.all(np.asarray(jax.grad(lambda x: judge_loglik(x, arrays, 2).sum())(beta)) == 0.0)


def test_recovers_beta_on_simulated_swaps():
    truth = np.array([-1.5, 0.4, 2.0])
    cal = calibrate_positions(simulate_swaps(4, truth, n_groups=600, group_size=4))
    tab = cal.table()
    assert tab.converged.all() and not tab.separated.any() and not tab.at_bound.any()
    assert np.all(np.abs(cal.beta - truth) <= Z_RECOVERY * cal.se), (cal.beta, cal.se)
    np.testing.assert_allclose(cal.D, np.tanh(cal.beta / 2))


def test_vmapped_over_datasets_equals_looped_and_is_unbiased():
    truth = jnp.array([-0.8, 1.2])
    keys = jax.random.split(jax.random.PRNGKey(5), 16)
    sim = jax.vmap(lambda k: simulate_swap_arrays(k, truth, n_groups=200, group_size=4))(keys)
    core = jax.jit(jax.vmap(lambda a: swap_fit_core(a, n_judge=2)))(sim)
    beta = np.asarray(core.beta)
    assert np.asarray(core.converged).all()
    for i in (0, 7):
        one = calibrate_positions((jax.tree_util.tree_map(lambda x: x[i], sim), ("a", "b")))
        np.testing.assert_allclose(one.beta, beta[i], rtol=0, atol=1e-9)
    # Mean over 16 datasets within 4 Monte Carlo SEs of the truth.
    mc_se = beta.std(axis=0, ddof=1) / np.sqrt(len(beta))
    assert np.all(np.abs(beta.mean(axis=0) - np.asarray(truth)) <= Z_RECOVERY * mc_se)


def test_finite_under_complete_separation():
    o = np.tile([1.0, 1.0, -1.0, -1.0], 40)
    group = np.repeat(np.arange(40), 4)
    first = pd.DataFrame({"judge": "always_first", "group": group, "z": (o > 0).astype(float), "o": o})
    second = pd.DataFrame({"judge": "always_second", "group": group + 40, "z": (o < 0).astype(float), "o": o})
    cal = calibrate_positions(pd.concat([first, second], ignore_index=True))
    tab = cal.table().set_index("judge")
    assert np.all(np.isfinite(cal.beta)) and tab.separated.all() and tab.converged.all()
    assert not tab.at_bound.any()
    b_first, b_second = tab.loc["always_first", "beta"], tab.loc["always_second", "beta"]
    assert b_first > 1.0 and b_second == pytest.approx(-b_first, abs=1e-8)
    # The unpenalized conditional likelihood is still increasing there: its MLE is +∞.
    arrays, names, _ = pack_groups(first)
    g = jax.grad(lambda b: judge_loglik(b, arrays, 1).sum())(jnp.array([b_first]))
    assert float(g[0]) > 0


def test_judge_without_information_gets_nan():
    table = pd.DataFrame({"judge": ["x"] * 4 + ["y"] * 4, "group": [0] * 4 + [1] * 4,
                          "z": [1, 0, 1, 0, 1, 1, 1, 1.0], "o": [1, 1, -1, -1] * 2})
    tab = calibrate_positions(table).table().set_index("judge")
    assert np.isfinite(tab.loc["x", "beta"]) and np.isnan(tab.loc["y", "beta"])
    assert tab.loc["y", "informative"] == 0


def _toy_frame():
    rows = [
        # judge j1, prompt p1: pair (m1, m2) in both orders -> a group of 3 (the tie is dropped)
        ("p1", "m1", "m2", "j1", 1.0), ("p1", "m2", "m1", "j1", 1.0), ("p1", "m2", "m1", "j1", 0.0),
        ("p1", "m1", "m2", "j1", 0.5),
        # judge j1, prompt p2: one order only -> no group
        ("p2", "m1", "m2", "j1", 1.0), ("p2", "m1", "m2", "j1", 0.0),
        # judge j2, prompt p1: both orders, but the B-first record is a tie -> no group
        ("p1", "m1", "m2", "j2", 1.0), ("p1", "m2", "m1", "j2", 0.5),
        # judge j2, prompt p3: pair (m3, m1) both orders -> group
        ("p3", "m3", "m1", "j2", 0.0), ("p3", "m1", "m3", "j2", 1.0),
    ]
    return pd.DataFrame(rows, columns=["prompt", "candidate_a", "candidate_b", "judge", "outcome"]).assign(
        tie_kind="", weight=1.0)


def test_find_swap_groups_on_a_toy_frame():
    frame = _toy_frame()
    g = find_swap_groups(frame)
    assert g.attrs["n_groups"] == 2 and g.attrs["ties_dropped"] == 2 and g.attrs["n_records"] == 5
    first = g[g.record.isin([0, 1, 2])].sort_values("record")
    # chosen = m1 (sorts first): record 0 shows m1 first and A wins -> z = 1, o = +1;
    # record 1 shows m1 second and A (m2) wins -> z = 0, o = −1; record 2 B (m1) wins -> z = 1.
    assert first.o.tolist() == [1.0, -1.0, -1.0] and first.z.tolist() == [1.0, 0.0, 1.0]
    assert set(first.chosen) == {"m1"} and first.group.nunique() == 1
    second = g[g.record.isin([8, 9])].sort_values("record")
    assert second.o.tolist() == [-1.0, 1.0] and second.z.tolist() == [1.0, 1.0]
    # Response ids instead of candidates: distinct responses make distinct groups.
    frame2 = frame.assign(ra=frame.candidate_a + np.where(frame.index == 1, "-v2", ""), rb=frame.candidate_b)
    assert find_swap_groups(frame2, responses=("ra", "rb")).attrs["n_groups"] == 2
    with pytest.raises(OscarInputError, match="weights"):
        find_swap_groups(frame.assign(weight=2.0))


def test_estimate_does_not_depend_on_which_response_is_chosen():
    frame = simulate_swap_frame(6, beta=[0.9, -0.6], gamma=[1.0, 2.0], n_cand=6, repeats=2)
    a = calibrate_positions(find_swap_groups(frame))
    # Renaming reverses the name order, so the other response of each pair becomes "chosen".
    rename = {f"model{i}": f"model{9 - i}" for i in range(6)}
    flipped = frame.assign(candidate_a=frame.candidate_a.map(rename), candidate_b=frame.candidate_b.map(rename))
    b = calibrate_positions(find_swap_groups(flipped))
    np.testing.assert_allclose(a.beta, b.beta, rtol=0, atol=1e-9)


def test_frame_pipeline_recovers_beta():
    truth = np.array([1.2, -0.5, 0.1])
    frame = simulate_swap_frame(7, beta=truth, gamma=[1.0, 0.5, 1.5], n_cand=10, repeats=3)
    groups = find_swap_groups(frame)
    assert groups.attrs["n_groups"] == 45 * 3  # every pair, every judge
    cal = calibrate_positions(groups, judges=["judge0", "judge1", "judge2"])
    assert np.all(np.abs(cal.beta - truth) <= Z_RECOVERY * cal.se), (cal.beta, cal.se)
    np.testing.assert_allclose(cal.beta_for(["judge2", "nobody", "judge0"]), [cal.beta[2], 0.0, cal.beta[0]])


def test_swap_average_frame():
    frame = _toy_frame()
    groups = find_swap_groups(frame)
    avg = swap_average_frame(frame, groups)
    # 10 records − 5 in groups + 2 averaged records.
    assert len(avg) == 7
    new = avg[avg.weight > 1].set_index("judge")
    # j1/p1: chosen m1; first-order mean z = 1, second-order mean (0 + 1)/2 -> ½(1 + ½) = 0.75.
    assert new.loc["j1", "outcome"] == pytest.approx(0.75) and new.loc["j1", "weight"] == 3.0
    assert (new.loc["j1", "candidate_a"], new.loc["j1", "candidate_b"]) == ("m1", "m2")
    assert new.loc["j2", "outcome"] == pytest.approx(1.0)


def test_bad_tables_are_refused():
    good = pd.DataFrame({"judge": "a", "group": [0, 0], "z": [1.0, 0.0], "o": [1.0, -1.0]})
    with pytest.raises(OscarInputError, match="z must be 0 or 1"):
        calibrate_positions(good.assign(z=[0.5, 0.0]))
    with pytest.raises(OscarInputError, match="mixes judges"):
        calibrate_positions(good.assign(judge=["a", "b"]))
    with pytest.raises(OscarInputError, match="lacks column"):
        calibrate_positions(good.drop(columns="o"))
