"""The penalized fit: published rankings, agreement with statsmodels, recovery, tracing."""

import jax
import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.infer.fit_core import fit_core_jit, fit_core_program
from oscar_jax.infer.starts import seeded_starts
from oscar_jax.model.params import helmert
from oscar_jax.simulate import SimParams, TABLE_G1, family_map_of, simulate_frame, truth_of

from helpers import REFERENCE_JUDGE, shared_data


@pytest.fixture(scope="module")
def mtbench():
    frame, report = oj.load_judgments(shared_data("mtbench"))
    return oj.build_design(frame, reference_judge=REFERENCE_JUDGE, report=report)


def test_mtbench_top_candidate(mtbench):
    # Section 6.4: J ranks claude-v1 first; J+P and OSCAR rank gpt-4 first.
    tops = {m: oj.fit(mtbench, m).leaderboard().candidate[0] for m in ("j", "j+p", "oscar")}
    assert tops == {"j": "claude-v1", "j+p": "gpt-4", "oscar": "gpt-4"}


def test_mtbench_checks_and_notes(mtbench):
    r = oj.fit(mtbench, "oscar")
    assert r.checks()["all_ok"], r.failed_checks()  # B.3: all full-data fits passed
    assert r.effective_spec.terms == ("pos", "fam")
    assert any("length term dropped" in n for n in r.notes)
    # both starts reach the same minimum
    objs = r.checks()["start_objectives"]
    assert max(objs) - min(objs) < 1e-8 * abs(min(objs))


def _glm_design(design, result):
    """Per-record BT+PLF design matrix in θ order (kept columns only)."""
    arr, cell = design.arrays, design.record_cell
    a, b, k = (np.asarray(x)[cell] for x in (arr.a, arr.b, arr.k))
    z = np.asarray(arr.z)[cell]
    c = helmert(design.n_cand)
    blocks = [c[a] - c[b]]
    for col in (np.ones(len(a)), z[:, 0], z[:, 1]):
        m = np.zeros((len(a), design.n_judge))
        m[np.arange(len(a)), k] = col
        blocks.append(m)
    keep = np.asarray(result.core.mask) > 0
    return np.hstack(blocks)[:, keep], keep


# Two independent implementations of the same estimator and sandwich: they differ only
# by optimizer tolerance and rounding.
STATSMODELS_RTOL = 1e-6


def test_bt_plf_sandwich_matches_statsmodels_cluster():
    sm = pytest.importorskip("statsmodels.api")
    frame = simulate_frame(seed=3, n_prompts=400)
    design = oj.build_design(frame, reference_judge="judge0", family_map=family_map_of())
    res = oj.fit(design, "bt+plf", ridge=0.0)
    assert res.effective_spec.terms == ("pos", "len", "fam")
    x, keep = _glm_design(design, res)
    glm = sm.GLM(frame.outcome.to_numpy(), x, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": design.record_cluster}, tol=1e-14)
    n, p = x.shape
    # statsmodels' default cluster factor is G/(G−1)·(N−1)/(N−P); ours is G/(G−1) only.
    se_sm = np.sqrt(np.diag(glm.cov_params()) / ((n - 1) / (n - p)))
    se_ours = np.sqrt(np.diag(res.cov.cluster))[keep]
    np.testing.assert_allclose(res.theta[keep], glm.params, rtol=STATSMODELS_RTOL, atol=1e-9)
    np.testing.assert_allclose(se_ours, se_sm, rtol=STATSMODELS_RTOL)
    # and the model-based covariance is the inverse Fisher information (nonrobust GLM)
    naive = sm.GLM(frame.outcome.to_numpy(), x, family=sm.families.Binomial()).fit(tol=1e-14)
    np.testing.assert_allclose(np.sqrt(np.diag(res.cov.model))[keep], naive.bse, rtol=STATSMODELS_RTOL)


def test_recovery_on_appendix_g_data():
    # N = 10,000 judgments (2,000 prompts), Table G1, c = 1, ρ = 0.6. Over 8 seeds we saw
    # OSCAR q RMSE 0.011–0.036 (paper mean 0.024) and κ RMSE 0.014–0.088, J q RMSE
    # 0.106–0.128 (paper mean 0.116). Tolerances leave headroom over that spread.
    design = oj.simulate_design(seed=0, n_prompts=2000)
    truth = truth_of(TABLE_G1)
    ci = [int(c[4:]) for c in design.candidates]
    ji = [int(j[5:]) for j in design.judges]
    q_true = np.asarray(truth.q)[np.ix_(ci, ci)]
    k_true = np.asarray(truth.kappa)[ji]
    iu = np.triu_indices(design.n_cand, 1)

    def errors(res):
        return (np.sqrt(np.mean((res.win_prob - q_true)[iu] ** 2)), np.sqrt(np.mean((res.kappa - k_true) ** 2)))

    oscar, j = oj.fit(design, "oscar"), oj.fit(design, "j")
    q_rmse, k_rmse = errors(oscar)
    assert q_rmse < 0.05 and k_rmse < 0.12
    assert list(oscar.leaderboard().candidate[:1]) == ["cand7"]
    q_rmse_j, k_rmse_j = errors(j)
    assert q_rmse_j > 0.08 and k_rmse_j > 0.15


def test_balanced_design_attenuates_j_by_one_minus_d_squared():
    # With balanced display orders and only position bias, omitting position shrinks κ by
    # ≈ 1 − D² (Eq. 5; Table D1 reports median |log discrepancy| 0.01–0.06 on real data).
    params = SimParams(beta_len=(0.0,) * 5, beta_fam=(0.0,) * 5, swap_prob=0.0, rho=0.0)
    design = oj.simulate_design(seed=1, n_prompts=4000, params=params)
    att = oj.attenuation(oj.fit(design, "j"), oj.fit(design, "j+p"))
    big = np.abs(att.D) > 0.3
    assert np.all(att.ratio[big] < 1.0)  # visibly attenuated where the position effect is large
    assert np.max(np.abs(att.log_discrepancy)) < 0.08
    assert oj.median_abs_log_discrepancy(att) < 0.04


def test_fit_core_traces_once():
    # blackjax-style compilation test: the same shapes and structure reuse one trace.
    d1 = oj.simulate_design(seed=11, n_prompts=150)
    d2 = oj.simulate_design(seed=12, n_prompts=150)
    res = oj.fit(d1, "j+p")
    program = fit_core_program(d1.n_cells)[0]
    before = program._cache_size()
    oj.fit(d1, "j+p")
    oj.fit(d2, "j+p") if d2.n_cells == d1.n_cells and d2.arrays.pair_g.shape == d1.arrays.pair_g.shape else None
    assert program._cache_size() == before
    # The fit draws its starts inside its program: the standalone draw's starts. The two
    # programs may round differently (fusion, FMA), so the start objectives agree to
    # rounding and the estimates to the solver's convergence (|step| ≤ 1e-10 scale).
    core = fit_core_jit(d1.arrays, np.ones(d1.n_clusters), seeded_starts(res.layout, 2, 0), layout=res.layout,
                        n_clusters=d1.n_clusters, stats=d1.arrays.stats)
    np.testing.assert_allclose(np.asarray(core.start_objectives), np.asarray(res.core.start_objectives), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(core.theta), res.theta, rtol=0, atol=1e-8)


def _check_cases():
    design = oj.simulate_design(seed=11, n_prompts=150)
    confounded = pd.DataFrame({"prompt": [f"p{i}" for i in range(40)], "candidate_a": "x", "candidate_b": "y",
                               "judge": "j", "outcome": [1.0, 0.0, 1.0, 1.0] * 10})
    frame = simulate_frame(seed=2, n_prompts=120)
    a = frame.candidate_a.isin(["cand0", "cand1"]) & frame.candidate_b.isin(["cand0", "cand1"])
    b = ~frame.candidate_a.isin(["cand0", "cand1"]) & ~frame.candidate_b.isin(["cand0", "cand1"])
    split = oj.build_design(frame[a | b], require_connected=False)  # two components
    return {"oscar": (design, "oscar"), "j+p": (design, "j+p"), "davidson+plf": (design, "davidson+plf"),
            "confounded position": (oj.build_design(confounded), "bt+p"), "disconnected": (split, "j")}


@pytest.mark.parametrize("case", list(_check_cases()))
def test_a_small_fits_host_checks_are_the_compiled_checks(case):
    # Below 2^15 cells a single fit chooses B.2's columns and runs B.3's spectral and graph
    # checks in host numpy (a smaller program to compile); the compiled fit core, whose
    # checks replicates and sweeps keep, must give the same selection and verdicts.
    design, model = _check_cases()[case]
    res = oj.fit(design, model, warn=False)
    core = jax.device_get(fit_core_jit(design.arrays, np.ones(design.n_clusters), seeded_starts(res.layout, 2, 0),
                                       layout=res.layout, n_clusters=design.n_clusters, stats=design.arrays.stats,
                                       v_bound=res.effective_spec.v_bound, ridge=res.effective_spec.ridge))
    np.testing.assert_array_equal(res.core.mask, np.asarray(core.mask))
    for field in ("n_identified", "identified", "curvature_ok", "connected", "point_ok", "ok"):
        assert np.asarray(getattr(res.core, field)) == np.asarray(getattr(core, field)), field
    np.testing.assert_allclose([res.core.min_eig, res.core.max_eig], [core.min_eig, core.max_eig], rtol=1e-10)
    if case == "confounded position":
        assert not res.core.identified
    if case == "disconnected":
        assert not res.core.connected and not res.core.ok


def test_failed_checks_warn_and_are_recorded():
    # Two candidates, one judge, every record identical in slot order: position is
    # confounded with the score difference, so identification must fail loudly.
    frame = pd.DataFrame({"prompt": [f"p{i}" for i in range(40)], "candidate_a": "x", "candidate_b": "y",
                          "judge": "j", "outcome": [1.0, 0.0, 1.0, 1.0] * 10})
    with pytest.warns(oj.OscarFitWarning, match="identification failed"):
        r = oj.fit(frame, "bt+p")
    assert not r.checks()["identification"]["ok"] and not r.checks()["all_ok"]


def test_result_tables_and_json_fields():
    r = oj.fit(oj.simulate_design(seed=5, n_prompts=300), "oscar")
    out = r.to_dict()
    for key in ("model", "n_records", "n_prompts", "objective", "candidates", "judges", "win_prob", "checks"):
        assert key in out
    assert {"candidate", "score", "rank"} <= set(out["candidates"][0])
    assert {"judge", "n", "gamma", "kappa", "beta_pos", "D", "beta_len", "beta_fam"} <= set(out["judges"][0])
    assert {"a", "b", "q", "q_lo", "q_hi"} <= set(out["win_prob"][0])
    wm = r.win_matrix().set_index(["a", "b"])
    for (a, b), row in wm.iterrows():  # q_ij = 1 − q_ji, and the intervals mirror
        other = wm.loc[(b, a)]
        assert row.q == pytest.approx(1 - other.q, abs=1e-12)
        assert row.q_lo == pytest.approx(1 - other.q_hi, abs=1e-12)
    lb = r.leaderboard()
    assert list(lb["rank"]) == list(range(1, 9)) and np.all(np.diff(lb.score) <= 0)
    assert np.all((lb.score_lo < lb.score) & (lb.score < lb.score_hi))
    jt = r.judges()
    assert jt.loc[jt.reference, "gamma"].item() == 1.0
    np.testing.assert_allclose(jt.D, np.tanh(jt.beta_pos / 2))
    np.testing.assert_allclose(jt.kappa, jt.gamma * np.sqrt(np.mean(r.scores ** 2)))


def test_model_based_intervals_are_narrower_under_dependence():
    # ρ = 0.6 within-prompt dependence: the cluster sandwich must widen the intervals.
    r = oj.fit(oj.simulate_design(seed=5, n_prompts=300), "oscar")
    wm_c, wm_m = r.win_matrix("sandwich"), r.win_matrix("model")
    assert np.median(wm_c.se_logit / wm_m.se_logit) > 1.2


def test_prepare_resolves_the_problem_once_and_a_prepared_problem_fits_as_the_data():
    from oscar_jax.model.problem import prepare

    design = oj.simulate_design(seed=0, n_prompts=60)
    problem = prepare(design, "j+c", ridge=0.1)
    assert problem.design is design
    assert problem.spec == oj.parse_model("j+c", 0.1)
    assert "cov" not in problem.effective_spec.terms
    assert problem.layout == design.layout(problem.effective_spec)
    assert problem.notes[-1].startswith("covariate term dropped")
    direct = oj.fit(design, "j+c", ridge=0.1, warn=False)
    prepared = oj.fit(problem, warn=False)
    np.testing.assert_array_equal(prepared.theta, direct.theta)
    assert prepared.notes == direct.notes and prepared.spec == direct.spec
    assert prepare(problem) is problem  # nothing asked of it: resolved once, not again
    other = oj.fit(problem, "j", warn=False)  # another model on the same design
    assert other.design is design and other.spec == oj.parse_model("j")


def test_identification_count_is_the_spectrum_count_with_or_without_the_certificate():
    # B.3(2) counts eigenvalues of R̂ᵀŴR̂ above max(1e-12, 1e-10·largest); the Cholesky
    # certificate must give exactly the SVD's count: full rank, rank-deficient, fixed
    # coordinates, and spectra straddling the threshold (where the SVD decides).
    import jax.numpy as jnp

    from oscar_jax.infer.fit_core import _n_identified

    rng = np.random.default_rng(0)
    n_id = jax.jit(_n_identified)                                           # replicates: certificate first
    n_id_direct = jax.jit(lambda a, m: _n_identified(a, m, certify=False))  # a single fit: the SVD alone
    for trial in range(120):
        p = int(rng.integers(3, 12))
        q, _ = np.linalg.qr(rng.normal(size=(p, p)))
        eigs = np.exp(rng.uniform(-30.0, 3.0, size=p)) * (rng.random(p) > 0.15)
        eigs[0] = np.exp(rng.uniform(0.0, 3.0))
        if trial % 3 == 0:  # one eigenvalue a factor 1–3 either side of the ratio threshold
            eigs[1] = eigs[0] * 1e-10 * np.exp(rng.uniform(-1.0, 1.0))
        elif trial % 3 == 1:  # well conditioned: the certificate decides
            eigs = np.exp(rng.uniform(-5.0, 3.0, size=p))
        mask = (rng.random(p) > 0.2).astype(float)
        mask[0] = 1.0
        a = (q * eigs) @ q.T * np.outer(mask, mask)
        s = np.linalg.svd(a, compute_uv=False)
        expected = int(np.sum(s > max(1e-12, 1e-10 * s.max())))
        assert int(n_id(jnp.asarray(a), jnp.asarray(mask))) == expected, trial
        assert int(n_id_direct(jnp.asarray(a), jnp.asarray(mask))) == expected, trial


def test_curvature_check_is_the_spectrum_check_with_or_without_the_certificate():
    # B.3(3): the free block's smallest eigenvalue above max(1e-12, 1e-13·largest).
    # Replicates (eigenvalues=False) settle it by a Cholesky bound when they can; the
    # verdict must be the spectrum's on positive definite, indefinite and near-threshold
    # blocks, with fixed coordinates (identity there, as in the solver's Hessian), and an
    # uncertified block must report the same eigenvalues as the full fit.
    import jax.numpy as jnp

    from oscar_jax.infer.fit_core import _curvature

    rng = np.random.default_rng(1)
    full = jax.jit(lambda h, m: _curvature(h, m, True))
    replicate = jax.jit(lambda h, m: _curvature(h, m, False))
    verdicts = set()
    for trial in range(150):
        p = int(rng.integers(3, 12))
        q, _ = np.linalg.qr(rng.normal(size=(p, p)))
        eigs = np.exp(rng.uniform(-5.0, 3.0, size=p))
        kind = trial % 3
        if kind == 0:  # one eigenvalue a factor 1–3 either side of the ratio threshold
            eigs[1] = eigs.max() * 1e-13 * np.exp(rng.uniform(-1.0, 1.0))
        elif kind == 1:  # indefinite or singular
            eigs[1] = -eigs[1] if trial % 2 else 0.0
        mask = (rng.random(p) > 0.2).astype(float)
        mask[0] = 1.0
        h = (q * eigs) @ q.T * np.outer(mask, mask) + np.diag(1.0 - mask)
        ok_full, lo, hi = map(np.asarray, full(jnp.asarray(h), jnp.asarray(mask)))
        ok_rep, lo_rep, hi_rep = map(np.asarray, replicate(jnp.asarray(h), jnp.asarray(mask)))
        free = np.linalg.eigvalsh(h[np.ix_(mask > 0, mask > 0)])
        assert bool(ok_full) == bool(free[0] > max(1e-12, 1e-13 * free[-1])), trial
        assert bool(ok_rep) == bool(ok_full), trial
        if np.isnan(lo_rep):  # certified: only possible for a passing block
            assert bool(ok_full) and np.isnan(hi_rep), trial
        else:
            np.testing.assert_array_equal([lo_rep, hi_rep], [lo, hi])
        verdicts.add((bool(ok_full), bool(np.isnan(lo_rep))))
    # Every route was exercised: certified passes, spectrum passes and failures.
    assert verdicts == {(True, True), (True, False), (False, False)}


def test_plain_bt_covariances_on_the_host_equal_the_compiled_sandwich(monkeypatch):
    """A plain-BT fit's covariances are summed in host numpy (residuals by prompt and
    candidate, a block of prompts at a time): the compiled sandwich's to rounding, with
    several blocks and a shorter last one. Control: the meat without the G/(G−1) factor differs."""
    import jax

    from oscar_jax.infer import plain_bt
    from oscar_jax.infer.sandwich import covariances

    design = oj.simulate_design(seed=4, n_prompts=130)
    monkeypatch.setattr(plain_bt, "MEAT_BLOCK", 17)  # 130 prompts: 7 full blocks and one of 11
    res = oj.fit(design, "bt", warn=False)
    c = res.core
    want = jax.jit(covariances, static_argnames=("layout", "n_clusters"))(
        c.theta, c.mask, c.hess, c.info, design.arrays, np.ones(design.n_clusters), layout=res.layout,
        n_clusters=design.n_clusters, ridge=res.effective_spec.ridge)
    got = res.cov
    for name in ("cluster", "model"):
        w, g = np.asarray(getattr(want, name)), getattr(got, name)
        assert np.max(np.abs(g - w)) <= 1e-12 * np.max(np.abs(w)), name
    g = design.n_clusters
    assert np.max(np.abs(got.cluster * (g - 1) / g - np.asarray(want.cluster))) > 1e-4 * np.max(np.abs(want.cluster))
    # Pairs in another order (a design not from build_design): the same covariances.
    order = np.random.default_rng(0).permutation(int(design.arrays.pair_g.shape[0]))
    arrays = design.arrays._replace(**{f: np.asarray(getattr(design.arrays, f))[order]
                                       for f in ("pair_cell", "pair_g", "pair_stats")})
    shuffled = plain_bt.bt_covariances(c, arrays, res.layout, res.effective_spec.ridge, design.n_clusters)
    np.testing.assert_allclose(shuffled.cluster, got.cluster, rtol=1e-12, atol=1e-15)
