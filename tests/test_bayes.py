"""Bayesian OSCAR: one predictor with the point fit, prior = ridge, masks, summaries, output.

The sampler's own checks (seeds, vmapped datasets, diagnostics, SBC) are in test_bayes_sampler.py,
the MT-Bench checks in test_bayes_mtbench.py."""

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import oscar_jax as oj
from oscar_jax.bayes import (BayesWarning, Priors, fit_bayes, load_idata, marginal_win_prob, model_data,
                             oscar_model, prior_scales, prompt_loss, theta_from_unconstrained,
                             unconstrained_from_theta)
from oscar_jax.infer.derivatives import cell_probabilities, loss_value
from oscar_jax.model.params import Layout
from oscar_jax.infer.selection import column_mask
from oscar_jax.model.spec import Structure
from oscar_jax.runtime.validate import OscarInputError

from helpers import model_layout

# Two exact evaluations of the same sums (vmap + sum in different orders): rounding only.
SUM_RTOL = 1e-12
# Trapezoid rule on 401 nodes against adaptive quadrature of the logistic-normal
# integrand: the rule's error is < 1e-11 for γ̄σ_u ≤ 16 (see _sampler.QUAD_NODES).
QUAD_ATOL = 1e-10


@pytest.fixture(scope="module")
def sim_design():
    return oj.simulate_design(seed=3, n_prompts=60)


# ----------------------------------------------------------------------------- one predictor
@pytest.mark.parametrize("model", ["oscar", "davidson+plf"])
def test_prompt_loss_at_zero_shift_is_the_point_fit_loss(model):
    frame = oj.simulate_frame(seed=1, n_prompts=50)
    frame.loc[::6, "outcome"] = 0.5  # ties, so Davidson and fractional differ
    frame.loc[::6, "tie_kind"] = "tie"
    design = oj.build_design(frame, reference_judge="judge0")
    layout, _ = model_layout(design, model)
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (layout.n_theta,))
    arrays = design.arrays
    got = prompt_loss(theta, jnp.zeros(design.n_clusters), arrays, arrays.pair_stats, layout)
    np.testing.assert_allclose(got, loss_value(theta, arrays, arrays.stats, layout), rtol=SUM_RTOL)


def test_prompt_shift_enters_as_gamma_times_shift(sim_design):
    """∂L/∂shift_g = Σ_{t∈g} γ_k (w p − wy): the shift moves η by γ_k per unit (fractional ties)."""
    layout, _ = model_layout(sim_design)
    arrays = sim_design.arrays
    theta = 0.2 * jax.random.normal(jax.random.PRNGKey(1), (layout.n_theta,))
    grad = jax.grad(lambda sh: prompt_loss(theta, sh, arrays, arrays.pair_stats, layout))(jnp.zeros(sim_design.n_clusters))
    p = np.asarray(cell_probabilities(theta, arrays, layout))[np.asarray(arrays.pair_cell)]
    gamma = layout.unpack(theta).gamma[np.asarray(arrays.k)[np.asarray(arrays.pair_cell)]]
    ps = np.asarray(arrays.pair_stats)
    expected = np.bincount(np.asarray(arrays.pair_g), weights=gamma * (ps[:, 0] * p - ps[:, 1]),
                           minlength=sim_design.n_clusters)
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12)


def test_log_posterior_is_minus_penalized_objective_and_mode_is_point_fit(sim_design):
    """Normal(0, 1/λ) priors: −log p(θ | y) = L(θ) + (λ/2)‖θ‖² + const, so θ̂ is the mode."""
    from numpyro.infer.util import potential_energy

    layout, spec = model_layout(sim_design)
    fit = oj.fit(sim_design, "oscar", warn=False)
    mask = np.asarray(fit.core.mask)
    free = np.flatnonzero(mask)
    priors = Priors().resolved(spec.ridge)
    data = model_data(sim_design.arrays, mask, priors, layout, prompt_effect=False)
    model = lambda d: oscar_model(d, layout=layout)  # noqa: E731

    is_v = data.is_log_gamma

    def pe(theta_free):
        # NUTS moves in w (log γ = log softplus(w)); remove the log-Jacobian to get −log p(θ | y).
        w = unconstrained_from_theta(theta_free, is_v)
        dv_dw = jax.vmap(jax.grad(lambda x, m: theta_from_unconstrained(x, m)))(w, is_v)
        return potential_energy(model, (data,), {}, {"theta": w}) + jnp.sum(jnp.log(jnp.abs(dv_dw)))

    assert int(np.sum(np.asarray(is_v))) == sim_design.n_judge - 1
    const = np.sum(np.log(np.sqrt(2 * np.pi) * np.asarray(data.prior_sd)))
    for theta in (fit.theta, 0.1 * np.ones(layout.n_theta) * mask):
        objective = float(loss_value(jnp.asarray(theta), sim_design.arrays, sim_design.arrays.stats, layout)
                          + 0.5 * spec.ridge * np.sum(theta ** 2))
        np.testing.assert_allclose(float(pe(jnp.asarray(theta[free]))), objective + const, rtol=SUM_RTOL)
    # the gradient at the point estimate is the fit's stationarity residual (≤ 1e-7 N, B.3)
    grad = jax.grad(pe)(jnp.asarray(fit.theta[free]))
    assert np.max(np.abs(grad)) <= 1e-7 * sim_design.n_records


def test_log_gamma_sampling_coordinates_round_trip():
    from oscar_jax.bayes._coordinates import TAIL_SLOPE, log_jacobian as _log_jacobian

    v = jnp.asarray([-40.0, -30.5, -29.5, -8.0, -5.0, -3.0, -0.7, 0.0, 1.3, 4.0, 12.0, 15.0])
    is_v = jnp.ones(v.shape, bool)
    w = unconstrained_from_theta(v, is_v)
    np.testing.assert_allclose(theta_from_unconstrained(w, is_v), v, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(theta_from_unconstrained(w, ~is_v), w)  # other coordinates pass through
    slope = jax.vmap(jax.grad(lambda x: theta_from_unconstrained(x, jnp.bool_(True))))(w)
    assert np.all(np.isfinite(slope)) and np.all(np.asarray(slope) > 0)
    # the log-Jacobian added to the potential is log dθ/dw, coordinate by coordinate
    per = jax.vmap(lambda x: _log_jacobian(x[None], jnp.ones(1, bool)))(w)
    np.testing.assert_allclose(per, np.log(np.asarray(slope)), rtol=1e-10, atol=1e-12)
    # the prior tail (γ → 0) is compressed TAIL_SLOPE-fold; large γ ≈ w (softplus)
    np.testing.assert_allclose(slope[0], TAIL_SLOPE, rtol=0.02)
    np.testing.assert_allclose(np.exp(v[-1]), w[-1], rtol=1e-6)


def test_marginal_win_prob_matches_quadrature():
    for h, gbar, sigma in [(0.0, 1.0, 0.5), (1.3, 0.8, 2.0), (-2.5, 1.2, 1.0), (2.0, 1.0, 8.0), (0.7, 1.0, 0.0)]:
        kink = [-h / (gbar * sigma)] if sigma > 0 else None
        exact = integrate.quad(lambda z: stats.norm.pdf(z) / (1 + np.exp(-(h + gbar * sigma * z))), -40, 40,
                               epsabs=1e-14, epsrel=1e-14, limit=400, points=kink)[0]
        got = float(marginal_win_prob(jnp.asarray(h), jnp.asarray(gbar), jnp.asarray(sigma)))
        assert abs(got - exact) < QUAD_ATOL
    # σ_u = 0 is the plain σ(h)
    np.testing.assert_allclose(marginal_win_prob(jnp.asarray([0.3, -1.0]), 1.0, 0.0), jax.nn.sigmoid(jnp.asarray([0.3, -1.0])),
                               rtol=1e-14)


# ----------------------------------------------------------------------------- priors, masks, validation
def test_priors_default_to_ridge_scale_and_can_be_set():
    layout = Layout(4, 3, 0, 0, Structure(("pos", "fam"), True, "fractional"))
    sd = prior_scales(Priors(fam=0.5).resolved(0.05), layout)
    np.testing.assert_allclose(sd[layout.theta_blocks["u"]], 1 / np.sqrt(0.05))
    np.testing.assert_allclose(sd[layout.theta_blocks["v"]], 1 / np.sqrt(0.05))
    np.testing.assert_allclose(sd[layout.theta_blocks["fam"]], 0.5)
    assert Priors().resolved(0.2).sigma_prompt == pytest.approx(1 / np.sqrt(0.2))
    with pytest.raises(OscarInputError, match="Priors.v"):
        Priors(v=-1.0)
    with pytest.raises(OscarInputError, match="no proper default prior"):
        Priors().resolved(0.0)


@pytest.mark.parametrize("kwargs, message", [
    ({"chains": 0}, "chains"),
    ({"draws": 2}, "draws"),
    ({"target_accept": 1.0}, "target_accept"),
    ({"max_tree_depth": 40}, "max_tree_depth"),
    ({"seed": -1}, "seed"),
    ({"prompt_effect": "yes"}, "prompt_effect"),
    ({"priors": {"u": 1.0}}, "Priors"),
    ({"ci_prob": 95}, "ci_prob"),
    ({"ci_kind": "shortest"}, "ci_kind"),
])
def test_bad_input_is_rejected_before_sampling(sim_design, kwargs, message):
    with pytest.raises(OscarInputError, match=message):
        fit_bayes(sim_design, "oscar", **kwargs)


@pytest.fixture(scope="module")
def small_posterior():
    """Judge 'judge4' shares no family with any candidate: its β_fam is fixed (B.2)."""
    frame = oj.simulate_frame(seed=5, n_prompts=40)
    families = {f"cand{i}": f"family{i % 3}" for i in range(8)}
    families.update({f"judge{k}": f"family{f}" for k, f in enumerate((0, 1, 2, 0))})
    families["judge4"] = "nobody"
    design = oj.build_design(frame, reference_judge="judge0", family_map=families)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)  # short chains: diagnostics may be flagged
        # structure, not convergence, is tested here: a depth cap bounds the cost of the
        # short warm-up (this small prompt-effect posterior mixes slowly; see docs/bayes.md)
        return fit_bayes(design, "oscar", chains=2, warmup=100, draws=100, seed=1, prompt_effect=True,
                         max_tree_depth=5)


def test_fixed_columns_are_held_at_zero_and_not_sampled(small_posterior):
    post = small_posterior
    layout = post.layout
    mask = np.asarray(column_mask(post.design.arrays, post.design.arrays.stats, layout))
    np.testing.assert_array_equal(post.mask, mask)
    fam_judge4 = layout.theta_blocks["fam"].start + 4
    assert mask[fam_judge4] == 0
    labels = list(post.idata.posterior["parameter"].values)
    assert len(labels) == int(mask.sum()) and "beta_fam[judge4]" not in labels
    assert np.all(post.draws("beta_fam")[..., 4] == 0.0)
    jt = post.judges()
    assert np.isnan(jt.loc[4, "beta_fam"]) and jt.loc[4, "columns"] == "pos,len"


def test_datatree_has_named_coordinates(small_posterior):
    post = small_posterior
    pst = post.idata.posterior
    c, k, g = post.design.n_cand, post.design.n_judge, post.design.n_clusters
    assert pst["s"].dims == ("chain", "draw", "candidate") and pst.sizes["candidate"] == c
    assert pst["kappa"].dims == ("chain", "draw", "judge") and pst.sizes["judge"] == k
    assert pst["q"].dims == ("chain", "draw", "pair") and pst.sizes["pair"] == c * (c - 1) // 2
    # prompt × candidate effect, one pair per prompt: one Helmert coordinate per prompt
    assert pst["z_prompt"].dims == ("chain", "draw", "prompt_contrast") and pst.sizes["prompt_contrast"] == g
    assert list(pst["candidate"].values) == list(post.design.candidates)
    assert set(post.idata.sample_stats.data_vars) >= {"diverging", "energy", "lp", "tree_depth", "n_steps"}
    summary = post.posterior_summary()
    assert {"mean", "sd", "r_hat", "ess_bulk"} <= set(summary.columns)
    assert "s[cand0]" in summary.index and "q[cand0 vs cand1]" in summary.index


def test_constants_are_not_posterior_variables(small_posterior):
    """γ_ref ≡ 1 and B.2-fixed coefficients live in constant_data: az.summary of everything has no NaN R-hat."""
    import arviz_stats

    post = small_posterior
    ref = post.design.judges[post.design.reference]
    pst = post.idata.posterior
    assert ref not in list(pst["judge_gamma"].values) and "judge4" not in list(pst["judge_beta_fam"].values)
    const = post.idata.constant_data
    assert list(const["judge_gamma_fixed"].values) == [ref] and float(const["gamma_fixed"].values[0]) == 1.0
    summary = arviz_stats.summary(post.idata, round_to="none")   # every variable; warnings are errors here
    assert summary["r_hat"].notna().all(), summary[summary["r_hat"].isna()]
    assert np.all(post.draws("gamma")[..., post.design.reference] == 1.0)


def test_summaries_are_consistent(small_posterior):
    post = small_posterior
    lb = post.leaderboard()
    assert lb.p_best.sum() == pytest.approx(1.0)
    assert np.all((lb.score_lo <= lb.score) & (lb.score <= lb.score_hi))
    assert np.all((lb.s_lo <= lb.s) & (lb.s <= lb.s_hi))
    # score: posterior mean of the average-judge logit γ̄·s on the point fit's scale (with the
    # prompt effect: the least-squares scores of each draw's prompt-averaged q), s beside it
    by_name = lb.set_index("candidate").loc[list(post.design.candidates)]
    np.testing.assert_allclose(by_name.score, post.population("x").mean(axis=(0, 1)), atol=1e-12)
    np.testing.assert_allclose(by_name.s, post.scores, atol=1e-12)
    rd = post.rank_distribution().set_index("candidate")
    probs = rd[[f"p_rank_{r}" for r in range(1, post.design.n_cand + 1)]]
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0)
    np.testing.assert_allclose(rd.p_rank_1.to_numpy(), post.p_best[rd.index].to_numpy())
    jc = post.judge_comparisons(long=False).to_numpy()
    off = ~np.eye(len(jc), dtype=bool)
    np.testing.assert_allclose((jc + jc.T)[off], 1.0)  # κ ties have probability 0
    wm = post.win_matrix()
    q = post.win_prob
    np.testing.assert_allclose(q + q.T, 1.0)
    assert wm.shape[0] == post.design.n_cand * (post.design.n_cand - 1)
    jt = post.judges()
    ref = post.design.reference
    assert jt.loc[ref, "gamma"] == 1.0 and jt.loc[ref, "gamma_lo"] == 1.0
    sig = post.sigma_prompt()
    assert 0 < sig["lo"] < sig["mean"] < sig["hi"]


def test_intervals_are_equal_tailed_by_default_and_hdi_on_request(small_posterior):
    """ETI = the draws' percentiles (as ``oscar fit --ci bayes`` and the bootstrap), in every table; HDI on request."""
    from dataclasses import replace

    from arviz_stats.base import array_stats

    post = small_posterior
    assert post.ci_kind == "eti"
    q = post.draws("q").reshape(-1, post.draws("q").shape[-1])
    lo, hi = np.quantile(q, [0.05, 0.95], axis=0)
    wm = post.win_matrix(ci_prob=0.9)
    np.testing.assert_allclose(wm.q_lo.to_numpy()[::2], lo, atol=1e-15)
    np.testing.assert_allclose(wm.q_hi.to_numpy()[::2], hi, atol=1e-15)
    np.testing.assert_allclose(wm.q_lo.to_numpy()[1::2], 1.0 - hi, atol=1e-15)  # q_ji = 1 − q_ij
    kappa = post.population("kappa")
    hdi = np.asarray(array_stats.hdi(kappa, 0.9, axis=(0, 1)))
    by_hdi = post.judges("hdi", ci_prob=0.9)
    np.testing.assert_allclose(by_hdi[["kappa_lo", "kappa_hi"]].to_numpy(), hdi, atol=1e-15)
    as_hdi = replace(post, ci_kind="hdi")  # the result's default kind: every table and the JSON follow it
    np.testing.assert_allclose(as_hdi.judges(ci_prob=0.9)[["kappa_lo", "kappa_hi"]].to_numpy(), hdi, atol=1e-15)
    assert as_hdi.to_dict()["ci"] == "hdi" and post.to_dict()["ci"] == "eti"
    with pytest.raises(OscarInputError, match="ci"):
        post.leaderboard("shortest")


def test_population_theta_puts_scores_on_the_prompt_averaged_scale(small_posterior):
    """γ̄ s_i of each draw = mean_j logit q_ij (prompt-averaged q), the point fit's logit scale."""
    from oscar_jax.infer.sandwich import targets

    post = small_posterior
    pop = post.population_theta()
    t = jax.vmap(lambda th: targets(th, post.layout))(jnp.asarray(pop[:50]))
    q = post.win_prob  # mean; check per draw below
    c = post.design.n_cand
    qd = np.asarray(post._flat("q"))[:50]
    full = np.full((50, c, c), 0.5)
    iu = np.triu_indices(c, 1)
    full[:, iu[0], iu[1]], full[:, iu[1], iu[0]] = qd, 1 - qd
    want = np.log(full / (1 - full)).mean(axis=2)
    np.testing.assert_allclose(np.asarray(t.gamma_bar)[:, None] * np.asarray(t.s), want, rtol=1e-9, atol=1e-12)
    assert q.shape == (c, c)
    # everything but the scores is the sampled θ
    free = np.flatnonzero(post.mask)
    sampled = post._flat("theta")
    u = post.layout.theta_blocks["u"]
    keep = [i for i, f in enumerate(free) if not (u.start <= f < u.stop)]
    np.testing.assert_array_equal(pop[:, free[keep]], sampled[:, keep])
    fixed = np.asarray(post.mask) == 0  # judge4's β_fam, held at zero by B.2: never sampled
    assert fixed.any() and np.all(pop[:, fixed] == 0.0)
    # --ci bayes reads exactly these draws (all finite: none counted as failed)
    draws = post.theta_draws()
    assert draws.n_failed == 0 and draws.source == "bayes" and post.point_fit is None
    np.testing.assert_array_equal(draws.theta, pop)


# ----------------------------------------------------------------------------- CLI and files
def test_cli_bayes_json_and_out_dir(tmp_path):
    from oscar_jax.cli.main import main

    frame = oj.simulate_frame(seed=2, n_prompts=60)
    path = tmp_path / "sim.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(["bayes", str(path), "--model", "j+p", "--chains", "2", "--warmup", "60", "--draws", "40",
                       "--seed", "0", "--format", "json", "--out", str(out)])
    assert rc == 0
    payload = json.loads(buf.getvalue())
    cand = payload["candidates"][0]
    assert {"candidate", "score", "score_sd", "s", "score_lo", "score_hi", "p_best", "p_best_mcse", "rank_ub"} <= set(cand)
    assert payload["scale"]["scale"] == "logit" and cand["score_lo"] <= cand["score"] <= cand["score_hi"]
    assert {"judge", "kappa", "kappa_lo", "kappa_hi"} <= set(payload["judges"][0])
    assert {"max_rhat", "min_ess", "divergences"} <= set(payload["checks"])
    assert "prompt × candidate effect" in payload["estimand"]["model"] and payload["estimator"] == "bayes-nuts"
    assert payload["prompt_effect"] == "candidate"  # 5 records per prompt: the dependence-aware default
    for name in ("leaderboard.csv", "judges.csv", "win_prob.csv", "rank_distribution.csv",
                 "judge_comparisons.csv", "summary.csv", "result.json", "forest_q.png", "judges_kappa.png"):
        assert (out / name).exists(), name
    assert (out / "forest_q.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tree = load_idata(out / "posterior.nc")
    assert list(tree.posterior["candidate"].values) == sorted(f"cand{i}" for i in range(8))
    assert tree.posterior["s"].shape == (2, 40, 8)
    assert tree.sample_stats["diverging"].dtype == bool


def test_cli_no_prompt_effect_says_what_it_costs(tmp_path):
    import contextlib
    import io

    from oscar_jax.cli.main import main

    path = tmp_path / "sim.csv"
    oj.simulate_frame(seed=2, n_prompts=40).to_csv(path, index=False)
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesWarning)
        with contextlib.redirect_stdout(buf):
            rc = main(["bayes", str(path), "--model", "j", "--chains", "2", "--warmup", "40", "--draws", "20",
                       "--no-prompt-effect"])
    text = buf.getvalue()
    assert rc == 0 and "prompt effect" not in text.splitlines()[0]
    assert "assumes independent records; too narrow under prompt dependence" in text
