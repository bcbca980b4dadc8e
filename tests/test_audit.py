"""Counterfactual audit: readers, the paper's measures on hand-computed examples, the
t-tests against scipy, the paired tests against statsmodels/scipy, bootstrap properties
and the CLI."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

import oscar_jax  # noqa: F401  (float64)
from oscar_jax.audit import (
    AuditSimParams,
    audit,
    load_audit,
    simulate_audit,
    simulate_audit_frame,
    true_rates,
)
from oscar_jax.audit.stats import (
    binom_cdf_half,
    clustered_mcnemar,
    item_bootstrap,
    sign_test,
    t_ppf,
    ttest_ind,
)
from oscar_jax.runtime.validate import OscarInputError

# Closed-form arithmetic on a handful of numbers: only rounding separates us from exact.
EXACT = 1e-12
# scipy evaluates the same formulas with its own special-function code (cephes/boost);
# the regularized incomplete beta agrees to ~1e-14 relative, so 1e-10 is generous.
SCIPY = 1e-10

# Hand example: 4 items × 3 conditions × 2 runs (g = good, f = fair, b = bad).
HAND = {
    0: {"A": "gfbg", "B": "bfbf", "C": "gbfg"},
    1: {"A": "gbbf", "B": "fbbf", "C": "gbbg"},
}
WORD = {"g": "good", "f": "fair", "b": "bad"}


def hand_rows():
    return [{"item": f"i{i + 1}", "attribute": "advertiser", "condition": c, "repetition": r, "label": WORD[s[i]]}
            for r, by in HAND.items() for c, s in by.items() for i in range(4)]


# ----------------------------------------------------------------------------- readers

def test_hand_measures_match_hand_computation():
    res = audit(hand_rows(), "A", bayes=False, n_boot=200)
    cond = res.conditions().set_index("condition")
    # Bad DR: A runs (1/4, 2/4), B (2/4, 2/4), C (1/4, 2/4)
    assert cond.loc["A", "bad_dr"] == pytest.approx(0.375, abs=EXACT)
    assert cond.loc["B", "bad_dr"] == pytest.approx(0.5, abs=EXACT)
    assert cond.loc["C", "bad_dr"] == pytest.approx(0.375, abs=EXACT)
    # Fair DR (bad or fair): A (2/4, 3/4), B (4/4, 4/4), C (2/4, 2/4)
    assert cond.loc["A", "fair_dr"] == pytest.approx(0.625, abs=EXACT)
    assert cond.loc["B", "fair_dr"] == pytest.approx(1.0, abs=EXACT)
    assert cond.loc["C", "fair_dr"] == pytest.approx(0.5, abs=EXACT)
    # label distribution of A: good (2/4, 1/4), fair (1/4, 1/4), bad (1/4, 2/4)
    assert cond.loc["A", ["share_good", "share_fair", "share_bad"]].tolist() == pytest.approx(
        [0.375, 0.25, 0.375], abs=EXACT)
    # consistency with the anchor A (the reference, no original given): B agrees on
    # items 2,3 in run 0 and 2,3,4 in run 1; C on 1,4 and 1,2,3.
    assert cond.loc["B", "consistency"] == pytest.approx(0.625, abs=EXACT)
    assert cond.loc["C", "consistency"] == pytest.approx(0.625, abs=EXACT)
    assert np.isnan(cond.loc["A", "consistency"])  # no duplicate: no reference level
    eff = res.effects(metric="bad_dr").set_index(["condition", "method"])
    # B − A over the 8 paired judgments: one discordant pair (item 1, run 0: B bad, A not).
    for method in ("ttest_runs", "bootstrap_items", "mcnemar_clustered", "sign_exact"):
        assert eff.loc[("B", method), "estimate"] == pytest.approx(0.125, abs=EXACT)
    assert eff.loc[("B", "mcnemar_clustered"), "p_value"] == pytest.approx(ss.chi2.sf(1.0, 1), abs=SCIPY)
    assert eff.loc[("B", "sign_exact"), "p_value"] == pytest.approx(1.0, abs=EXACT)
    # runs B (1/2, 1/2), A (1/4, 1/2): pooled variance 1/64, se 1/8, t = 1 on 2 df
    assert eff.loc[("B", "ttest_runs"), "p_value"] == pytest.approx(2 * ss.t.sf(1.0, 2), abs=SCIPY)
    # Focal contrast: mean of B and C per run (3/8, 4/8) against A (2/8, 4/8).
    focal = res.focal_tests.set_index("metric")
    assert focal.loc["bad_dr", "p_value"] == pytest.approx(ss.ttest_ind([0.375, 0.5], [0.25, 0.5]).pvalue, abs=SCIPY)
    assert focal.loc["bad_dr", "estimate"] == pytest.approx(0.0625, abs=EXACT)
    table = res.paper_table().set_index("metric")
    assert table.loc["Bad DR (%)", "B"] == pytest.approx(50.0, abs=EXACT)


def test_duplicate_baseline_consistency_is_the_reference_level():
    rows = hand_rows()
    # D duplicates A except item 4 in run 1 (noise): agreement 4/4 then 3/4.
    for r, s in ((0, "gfbg"), (1, "gbbg")):
        rows += [{"item": f"i{i + 1}", "attribute": "advertiser", "condition": "D", "repetition": r,
                  "label": WORD[s[i]]} for i in range(4)]
    res = audit(rows, "B", original="A", duplicate="D", bayes=False, n_boot=200)
    cond = res.conditions().set_index("condition")
    assert cond.loc["A", "consistency"] == pytest.approx(0.875, abs=EXACT)   # anchor vs its duplicate
    assert cond.loc["D", "consistency"] == pytest.approx(0.875, abs=EXACT)
    cons = res.effects(metric="consistency").set_index(["condition", "method"])
    # C − D: per run (2/4 − 4/4, 3/4 − 3/4); the same numbers through scipy.
    assert cons.loc[("C", "ttest_runs"), "estimate"] == pytest.approx(-0.25, abs=EXACT)
    assert cons.loc[("C", "ttest_runs"), "p_value"] == pytest.approx(
        ss.ttest_ind([0.5, 0.75], [1.0, 0.75]).pvalue, abs=SCIPY)
    assert set(cons["baseline"]) == {"D"}
    assert "A" not in res.others and "D" not in res.others


def test_readers_agree_across_formats(tmp_path):
    frame = pd.DataFrame(hand_rows())
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.to_json(tmp_path / "a.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "a.parquet")
    ref = load_audit(frame)
    for name in ("a.csv", "a.jsonl", "a.parquet"):
        other = load_audit(tmp_path / name)
        np.testing.assert_array_equal(other.values, ref.values)
        assert other.conditions == ref.conditions and other.items == ref.items
    # codes: 0 = bad … 2 = good; item 1 under A in run 0 is good
    assert ref.values[0, 0, 0] == 2 and ref.values[2, 0, 0] == 0


def test_reader_errors_name_row_value_and_fix():
    rows = hand_rows()
    rows[5]["label"] = "excellent"
    with pytest.raises(OscarInputError, match=r"column 'label' row 6: unknown label 'excellent'.*--labels"):
        load_audit(rows)
    prob = [{"item": 1, "condition": "x", "prob": 0.2}, {"item": 1, "condition": "y", "prob": 1.7}]
    with pytest.raises(OscarInputError, match=r"column 'prob' row 2: 1.7 is not a probability.*divide by 100"):
        load_audit(prob)
    dup = hand_rows() + [hand_rows()[0]]
    with pytest.raises(OscarInputError, match="both judge item 'i1' under condition 'A' in repetition"):
        load_audit(dup)
    two = hand_rows() + [{**r, "attribute": "language"} for r in hand_rows()]
    with pytest.raises(OscarInputError, match="several attributes"):
        load_audit(two)
    with pytest.raises(OscarInputError, match="missing the item column"):
        load_audit([{"condition": "x", "label": "good"}])
    blank_item = hand_rows()
    blank_item[3]["item"] = " "
    with pytest.raises(OscarInputError, match=r"column 'item' row 4: missing item id"):  # counted from 1
        load_audit(blank_item)


def test_attribute_selection_and_condition_column():
    two = hand_rows() + [{**r, "attribute": "language"} for r in hand_rows()]
    data = load_audit(two, attribute="advertiser")
    assert data.report.n_other_attribute == 24 and data.report.n_used == 24
    wide = [{"item": r["item"], "advertiser": r["condition"], "repetition": r["repetition"],
             "label": r["label"].upper() + " "} for r in hand_rows()]
    alt = load_audit(wide, attribute="advertiser")   # conditions in the 'advertiser' column; labels any case
    np.testing.assert_array_equal(alt.values, load_audit(hand_rows()).values)


def test_incomplete_items_are_reported_and_handled():
    rows = [r for r in hand_rows() if not (r["item"] == "i4" and r["condition"] == "B" and r["repetition"] == 1)]
    with pytest.raises(OscarInputError, match=r"1 of 4 items lack.*'i4' lacks \['B'\]"):
        load_audit(rows, incomplete="error")
    dropped = load_audit(rows)
    assert dropped.n_items == 3 and dropped.report.n_dropped_items == 1 and dropped.report.n_dropped_rows == 5
    assert "dropped 1 incomplete items" in dropped.report.notes[-1]
    kept = load_audit(rows, incomplete="keep")
    assert kept.n_items == 4 and not kept.mask[3, 1, 1] and kept.mask.sum() == 23
    res = audit(kept, "A", bayes=False, n_boot=200)
    cond = res.conditions().set_index("condition")
    # B in run 1 over the 3 items judged (f b b): bad 2/3; run 0 2/4 → mean 7/12.
    assert cond.loc["B", "bad_dr"] == pytest.approx((0.5 + 2 / 3) / 2, abs=EXACT)
    # Masked = subset: the paired bootstrap estimate for B − A uses item means over the
    # runs each side has: item 4 B (run 0 only: fair) vs A (g, f): 0 − 0; items 1–3 as before.
    eff = res.effects(metric="bad_dr", method="bootstrap_items").set_index("condition")
    assert eff.loc["B", "estimate"] == pytest.approx(0.5 / 4, abs=EXACT)


def test_probability_outputs_give_mean_prel():
    rows = [{"item": i, "condition": c, "repetition": r, "prob": p}
            for i, (pa, pb) in enumerate([(0.9, 0.7), (0.2, 0.1), (0.6, 0.6)])
            for r in range(2) for c, p in (("x", pa + 0.01 * r), ("y", pb))]
    res = audit(rows, "x", bayes=False, n_boot=200)
    cond = res.conditions().set_index("condition")
    assert cond.loc["x", "mean_prel"] == pytest.approx((0.9 + 0.2 + 0.6 + 0.03) / 3 / 2 + (0.9 + 0.2 + 0.6) / 6,
                                                       abs=EXACT)
    assert cond.loc["y", "mean_prel"] == pytest.approx(1.4 / 3, abs=EXACT)
    assert np.isnan(cond.loc["x", "bad_dr"])
    assert set(res.effects()["metric"]) == {"mean_prel"}


# ----------------------------------------------------------------------------- statistics

@pytest.mark.parametrize("equal_var", [True, False])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_ttest_agrees_with_scipy(equal_var, alternative):
    rng = np.random.default_rng(7)
    x, y = rng.normal(0.15, 0.01, 10), rng.normal(0.16, 0.02, 8)
    pad = np.zeros(2)
    r = ttest_ind(jnp.asarray(np.r_[x, pad]), jnp.asarray(np.r_[np.ones(10), pad] > 0), jnp.asarray(y),
                  jnp.ones(8, bool), alternative=alternative, equal_var=equal_var)
    s = ss.ttest_ind(x, y, equal_var=equal_var, alternative=alternative)
    ci = s.confidence_interval(0.95)
    assert float(r.t) == pytest.approx(s.statistic, rel=SCIPY)
    assert float(r.p) == pytest.approx(s.pvalue, rel=1e-9)
    assert float(r.df) == pytest.approx(s.df, rel=SCIPY)
    for ours, theirs in ((float(r.lo), ci.low), (float(r.hi), ci.high)):
        assert ours == theirs if not np.isfinite(theirs) else ours == pytest.approx(theirs, rel=1e-9)


def test_ttest_needs_two_runs_per_side():
    r = ttest_ind(jnp.array([0.1, 0.0]), jnp.array([True, False]), jnp.array([0.2, 0.3]), jnp.array([True, True]))
    assert np.isnan(float(r.p)) and np.isnan(float(r.t))


def test_t_ppf_and_binomial_cdf_agree_with_scipy():
    for q, df in ((0.975, 18.0), (0.01, 3.5), (0.5, 7.0), (0.999, 1.0)):
        assert float(t_ppf(q, df)) == pytest.approx(ss.t.ppf(q, df), abs=1e-9)
    for n in (1, 9, 40):
        k = np.arange(n + 1)
        np.testing.assert_allclose(np.asarray(binom_cdf_half(k, float(n))), ss.binom.cdf(k, n, 0.5), atol=SCIPY)


def test_mcnemar_and_sign_test_with_one_run_are_the_classical_tests():
    from statsmodels.stats.contingency_tables import mcnemar

    rng = np.random.default_rng(3)
    x_c = (rng.random((300, 1)) < 0.30).astype(float)
    x_r = np.where(rng.random((300, 1)) < 0.8, x_c, 1 - x_c)
    both = np.ones((300, 1), bool)
    table = np.array([[np.sum((x_c == 1) & (x_r == 1)), np.sum((x_c == 1) & (x_r == 0))],
                      [np.sum((x_c == 0) & (x_r == 1)), np.sum((x_c == 0) & (x_r == 0))]])
    ours = clustered_mcnemar(jnp.asarray(x_c), jnp.asarray(x_r), jnp.asarray(both))
    theirs = mcnemar(table, exact=False, correction=False)
    assert float(ours["stat"]) == pytest.approx(theirs.statistic, rel=SCIPY)
    assert float(ours["p"]) == pytest.approx(theirs.pvalue, rel=1e-9)
    sign = sign_test(jnp.asarray(x_c), jnp.asarray(x_r), jnp.asarray(both))
    assert float(sign["p"]) == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
    b, c = table[0, 1], table[1, 0]
    for alt in ("greater", "less"):
        p = sign_test(jnp.asarray(x_c), jnp.asarray(x_r), jnp.asarray(both), alternative=alt)["p"]
        assert float(p) == pytest.approx(ss.binomtest(int(b), int(b + c), 0.5, alternative=alt).pvalue, rel=1e-9)


def test_clustered_mcnemar_is_durkalski():
    # Three items, two runs: d_i = b_i − c_i = (2, −1, 1) → χ² = (Σd)² / Σd² = 4/6.
    x_c = jnp.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    x_r = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    out = clustered_mcnemar(x_c, x_r, jnp.ones((3, 2), bool))
    assert float(out["stat"]) == pytest.approx(4.0 / 6.0, abs=EXACT)
    assert float(out["estimate"]) == pytest.approx(2.0 / 6.0, abs=EXACT)


def test_bootstrap_is_deterministic_and_weight_equals_duplication():
    rng = np.random.default_rng(0)
    d = jnp.asarray(rng.normal(size=(50, 3)))
    obs = jnp.asarray(rng.random((50, 3)) < 0.9)
    a = item_bootstrap(jax.random.PRNGKey(1), d, obs, 400)
    b = item_bootstrap(jax.random.PRNGKey(1), d, obs, 400)
    c = item_bootstrap(jax.random.PRNGKey(2), d, obs, 400)
    np.testing.assert_array_equal(np.asarray(a["draws"]), np.asarray(b["draws"]))
    assert not np.array_equal(np.asarray(a["draws"]), np.asarray(c["draws"]))
    dn, on = np.asarray(d), np.asarray(obs)
    np.testing.assert_allclose(np.asarray(a["estimate"]), [dn[on[:, k], k].mean() for k in range(3)], atol=EXACT)
    # Percentile-interval inversion: p < 0.05 exactly when the 95% interval excludes 0
    # (up to the +1 of the p-value, which only matters at the interval's edge).
    shifted = item_bootstrap(jax.random.PRNGKey(1), d + 0.4, obs, 400)
    excl = (np.asarray(shifted["lo"]) > 0) | (np.asarray(shifted["hi"]) < 0)
    np.testing.assert_array_equal(excl, np.asarray(shifted["p"]) < 0.05)


def test_true_rates_match_a_large_simulation():
    params = AuditSimParams(effects=(0.0, -0.5), interaction_sd=0.4)
    v, _ = simulate_audit(jax.random.PRNGKey(0), 40_000, 1, params)
    bad = (np.asarray(v) == 0).mean(axis=(0, 2))
    truth = true_rates(params)["bad_dr"]
    # Binomial Monte Carlo se of a rate near 0.15 with 40k items is ≈ 0.0018; 4 se.
    np.testing.assert_allclose(bad, truth, atol=4 * np.sqrt(0.15 * 0.85 / 40_000))
    assert truth[1] > truth[0]  # a negative effect (less favourable) raises Bad DR


# ----------------------------------------------------------------------------- CLI

def test_cli_audit_json_table_and_plot(tmp_path, capsys):
    from oscar_jax.audit.simulate import RETAILER_EXAMPLE
    from oscar_jax.cli.main import main

    frame = simulate_audit_frame(3, 40, 3, RETAILER_EXAMPLE["params"], conditions=RETAILER_EXAMPLE["conditions"])
    path = tmp_path / "audit.csv"
    frame.to_csv(path, index=False)
    args = [str(path), "--attribute", "advertiser", "--reference", "Retailer A", "--original", "Original",
            "--labels", "good,fair,bad", "--n-boot", "100", "--warmup", "50", "--draws", "50", "--chains", "2",
            "--chain-method", "sequential"]
    assert main(["audit", *args, "--format", "json", "--out", str(tmp_path / "out")]) == 0
    payload = json.loads(capsys.readouterr().out)
    conds = {c["condition"]: c for c in payload["conditions"]}
    assert set(conds) == set(RETAILER_EXAMPLE["conditions"])
    assert {"condition", "n_items", "bad_dr", "fair_dr", "mean_prel"} <= set(conds["Retailer B"])
    assert conds["Retailer B"]["n_items"] == 40
    methods = {e["method"] for e in payload["effects"]}
    assert methods == {"ttest_runs", "bootstrap_items", "mcnemar_clustered", "sign_exact", "bayes_ordinal"}
    for e in payload["effects"]:
        assert {"condition", "method", "estimate", "lo", "hi", "p_value"} <= set(e)
        assert e["condition"] != "Retailer A"
    for name in ("conditions.csv", "effects.csv", "paper_table.csv", "result.json", "effects.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert (tmp_path / "out" / "effects.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["audit", *args, "--no-bayes"]) == 0
    text = capsys.readouterr().out
    assert "Paper-style table" in text and "Bad DR (%)" in text and "Retailer F" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # fits 100 columns (--wide: as wide as needed)


def test_cli_audit_bad_input_exits_2(tmp_path, capsys):
    from oscar_jax.cli.main import main

    path = tmp_path / "bad.csv"
    pd.DataFrame(hand_rows()).assign(label=lambda f: f["label"].replace({"fair": "meh"})).to_csv(path, index=False)
    assert main(["audit", str(path), "--reference", "A", "--no-bayes"]) == 2
    assert "unknown label 'meh'" in capsys.readouterr().err
    ok = tmp_path / "ok.csv"
    pd.DataFrame(hand_rows()).to_csv(ok, index=False)
    assert main(["audit", str(ok), "--reference", "Z", "--no-bayes"]) == 2
    assert "reference condition 'Z' is not in the data" in capsys.readouterr().err


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
@pytest.mark.parametrize("a, b", [(0.1 + 0.2, 0.3), (0.7, 0.7000000000000001)])
def test_ttest_of_identical_constant_conditions_is_no_evidence(alternative, a, b):
    # Issue 13: every run rated alike under both conditions (e.g. every label "fair"): the
    # means differ by rounding only (1 − 2/3 − 1/3 ≠ 0), se = 0, and t = −inf gave p = 0.
    x, y = jnp.full(3, a), jnp.full(3, b)  # equal rates up to rounding, as summed run rates are
    r = ttest_ind(x, jnp.ones(3, bool), y, jnp.ones(3, bool), alternative=alternative)
    assert float(r.diff) == 0.0 and float(r.t) == 0.0
    assert float(r.p) == 1.0 if alternative == "two-sided" else float(r.p) == pytest.approx(0.5)
    assert np.all(np.isfinite([float(r.diff), float(r.se), float(r.t), float(r.p)]))


def test_duplicate_row_message_pairs_the_rows_that_clash():
    # Issue 13: rows 2 and 3 (1-based) duplicate rows 5 and 4; the message once paired 2 with 3.
    rows = hand_rows()
    rows.insert(4, dict(rows[2]))
    rows.insert(5, dict(rows[1]))
    frame = pd.DataFrame(rows)
    key = frame[["item", "condition", "repetition"]].astype(str).agg("|".join, axis=1)
    first = int(np.flatnonzero(key.duplicated(keep=False).to_numpy())[0])
    partner = int(np.flatnonzero((key == key.iloc[first]).to_numpy())[1])
    with pytest.raises(OscarInputError, match=rf"rows \S*{first + 1}\S* and \S*{partner + 1}\S* both judge"):
        load_audit(frame)
