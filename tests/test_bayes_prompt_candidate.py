"""The prompt × candidate random effect: Helmert effects, one predictor, simulator, defaults."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import oscar_jax as oj
from oscar_jax.bayes import (candidate_effects, default_prompt_effect, model_data, prompt_candidate_index,
                             prompt_candidate_loss, prompt_loss)
from oscar_jax.bayes._fit import INDEPENDENCE_LABEL, shared_prompt_share
from oscar_jax.infer.derivatives import loss_value
from oscar_jax.simulate import TABLE_G1, SimParams, family_map_of, simulate_jit

# the module (the package's face exports the function under the same name)
simulate_module = importlib.import_module("oscar_jax.simulate")

SUM_RTOL = 1e-12  # the same sums in a different order: rounding only


def _design(seed=0, n_prompts=30, params=TABLE_G1):
    return oj.build_design(oj.simulate_frame(seed, n_prompts, params), reference_judge="judge0",
                           family_map=family_map_of(params))


@pytest.fixture(scope="module")
def multi():
    """Prompts with 4 candidates and all 6 pairs (a prompt × candidate effect is visible)."""
    return _design(params=SimParams(candidates_per_prompt=4, prompt_candidate_sd=0.4, rho=0.0))


def _layout(design):
    spec, _ = design.effective_spec(oj.parse_model("oscar"))
    return design.layout(spec)


def test_index_covers_the_occurring_prompt_candidate_pairs(multi):
    idx = prompt_candidate_index(multi.arrays)
    a = np.asarray(multi.arrays.pair_g)
    assert len(idx.occ_rank) == 4 * multi.n_clusters                       # 4 candidates shown per prompt
    assert len(idx.zeta_slot) == 3 * multi.n_clusters                      # m_g − 1 coordinates each
    occ_a, occ_b = np.asarray(idx.pair_occ_a), np.asarray(idx.pair_occ_b)
    assert np.all(occ_a != occ_b)
    # both occurrences of a pair belong to the pair's prompt: ranks restart at every prompt
    rank = np.asarray(idx.occ_rank)
    starts = np.flatnonzero(rank == 0)
    group = np.searchsorted(starts, np.arange(len(rank)), side="right") - 1
    assert np.all(group[occ_a] == a) and np.all(group[occ_b] == a)


def test_candidate_effects_are_an_orthonormal_zero_sum_basis_per_prompt(multi):
    """u = H ζ with HᵀH = I and 1ᵀH = 0 within every prompt: u_g ~ N(0, I − 11ᵀ/m_g)."""
    idx = prompt_candidate_index(multi.arrays)
    n_zeta = len(idx.zeta_slot)
    H = np.asarray(jax.jacfwd(lambda z: candidate_effects(z, idx))(jnp.zeros(n_zeta)))  # (O, O − G)
    np.testing.assert_allclose(H.T @ H, np.eye(n_zeta), atol=1e-12)
    rank = np.asarray(idx.occ_rank)
    group = np.cumsum(rank == 0) - 1
    sums = np.zeros((group.max() + 1, n_zeta))
    np.add.at(sums, group, H)
    np.testing.assert_allclose(sums, 0.0, atol=1e-12)
    # each column lives inside one prompt
    assert np.all([(len(np.unique(group[np.abs(H[:, j]) > 1e-12])) == 1) for j in range(n_zeta)])


def test_zero_effect_is_the_point_fit_loss(multi):
    layout = _layout(multi)
    arrays = multi.arrays
    idx = prompt_candidate_index(arrays)
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (layout.n_theta,))
    got = prompt_candidate_loss(theta, jnp.zeros(len(idx.occ_rank)), arrays, arrays.pair_stats, layout, idx)
    np.testing.assert_allclose(got, loss_value(theta, arrays, arrays.stats, layout), rtol=SUM_RTOL)


def test_one_pair_per_prompt_it_is_the_slot_shift_of_the_contrast():
    """Appendix G (one pair per prompt): shifting s_a by u_a and s_b by u_b is the slot shift u_a − u_b."""
    design = _design(seed=2)
    layout = _layout(design)
    arrays = design.arrays
    idx = prompt_candidate_index(arrays)
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (layout.n_theta,))
    u = 0.7 * candidate_effects(jax.random.normal(jax.random.PRNGKey(2), (len(idx.zeta_slot),)), idx)
    shift = np.zeros(design.n_clusters)
    g = np.asarray(arrays.pair_g)
    shift[g] = np.asarray(u)[np.asarray(idx.pair_occ_a)] - np.asarray(u)[np.asarray(idx.pair_occ_b)]
    want = prompt_loss(theta, jnp.asarray(shift), arrays, arrays.pair_stats, layout)
    got = prompt_candidate_loss(theta, u, arrays, arrays.pair_stats, layout, idx)
    np.testing.assert_allclose(got, want, rtol=SUM_RTOL)


def test_model_data_carries_the_index_only_for_the_candidate_effect(multi):
    layout = _layout(multi)
    priors = oj.bayes.Priors().resolved(0.05)
    mask = np.ones(layout.n_theta)
    assert model_data(multi.arrays, mask, priors, layout, prompt_effect=True).occ is not None
    assert model_data(multi.arrays, mask, priors, layout, prompt_effect="slot").occ is None
    assert model_data(multi.arrays, mask, priors, layout, prompt_effect=False).occ is None
    with pytest.raises(oj.OscarInputError, match="prompt_effect"):
        model_data(multi.arrays, mask, priors, layout, prompt_effect="yes")


def test_default_prompt_effect_follows_records_per_prompt(multi):
    assert default_prompt_effect(multi) == "candidate"
    frame = oj.simulate_frame(0, 40)
    frame["prompt"] = [f"r{i}" for i in range(len(frame))]           # one record per prompt
    assert default_prompt_effect(oj.build_design(frame, reference_judge="judge0")) is False
    # a few shared prompts among many single-record ones (UltraFeedback-like): still off
    frame["prompt"] = [f"p{i // 2}" if i < 60 else f"r{i}" for i in range(len(frame))]
    design = oj.build_design(frame, reference_judge="judge0")
    assert shared_prompt_share(design) == pytest.approx(60 / len(frame)) and default_prompt_effect(design) is False
    assert "independent records" in INDEPENDENCE_LABEL


# ----------------------------------------------------------------------------- simulator
def test_simulator_defaults_unchanged(monkeypatch):
    """Candidate-specific effects are off by default: Section 7's datasets come from the
    two-candidate generator (one pair per prompt, every judge sees it), never from the
    prompt × candidate one. A property, not a digest of draws: the draws' last bits belong
    to the installed XLA (jax 0.12.1 moved the lengths by 1 ulp), the routing to us."""
    params = SimParams()
    assert params.candidates_per_prompt == 2 and params.prompt_candidate_sd == 0.0 and params == TABLE_G1

    def refuse(*args, **kwargs):
        raise AssertionError("the default simulator took the prompt × candidate path")

    monkeypatch.setattr(simulate_module, "_simulate_prompt_candidate", refuse)
    d = jax.tree_util.tree_map(np.asarray, simulate_module.simulate(jax.random.PRNGKey(7), 200, TABLE_G1))
    k = TABLE_G1.n_judge
    a, b = d.arrays.a.reshape(200, k), d.arrays.b.reshape(200, k)
    assert (a == a[:, :1]).all() and (b == b[:, :1]).all() and (a[:, 0] != b[:, 0]).all()
    assert (d.arrays.k.reshape(200, k) == np.arange(k)).all() and (d.prompt.reshape(200, k) == np.arange(200)[:, None]).all()
    # ...and the option path is reached as soon as either setting asks for it
    with pytest.raises(AssertionError, match="prompt × candidate path"):
        simulate_module.simulate(jax.random.PRNGKey(7), 20, SimParams(prompt_candidate_sd=0.5))


def test_simulated_win_rates_match_the_prompt_averaged_truth():
    """No bias terms, γ ≡ 1, ρ = 0: the win rate of a pair is E_w σ(s_i − s_j + w_i − w_j) = q*."""
    params = SimParams(log_gamma=(0.0,) * 5, c=0.0, rho=0.0, candidates_per_prompt=4, prompt_candidate_sd=1.0)
    d = jax.tree_util.tree_map(np.asarray, simulate_jit(jax.random.PRNGKey(3), 20000, params))
    a, b, y = d.arrays.a, d.arrays.b, d.y
    q = np.asarray(d.truth.q)
    flat = pd.DataFrame({"i": np.minimum(a, b), "j": np.maximum(a, b), "win_i": np.where(a < b, y, 1 - y)})
    rates = flat.groupby(["i", "j"]).win_i.agg(["mean", "size"])
    expected = q[rates.index.get_level_values(0), rates.index.get_level_values(1)]
    # records of one prompt share w: the SE is inflated; 5 judges see one pair, so ≤ √5 × binomial
    se = np.sqrt(5 * expected * (1 - expected) / rates["size"].to_numpy())
    z = (rates["mean"].to_numpy() - expected) / se
    assert np.max(np.abs(z)) < 4.5
    # and the conditional σ(s_i − s_j) is visibly wrong: averaging over prompts attenuates
    s = np.asarray(params.s)
    cond = 1 / (1 + np.exp(-(s[rates.index.get_level_values(0)] - s[rates.index.get_level_values(1)])))
    assert np.max(np.abs(rates["mean"].to_numpy() - cond) / se) > 6


def test_simparams_rejects_bad_prompt_candidate_settings():
    with pytest.raises(ValueError, match="candidates_per_prompt"):
        SimParams(candidates_per_prompt=9)
    with pytest.raises(ValueError, match="prompt_candidate_sd"):
        SimParams(prompt_candidate_sd=-1.0)


@pytest.fixture(scope="module")
def full():
    """Every prompt shows all 5 candidates (as on MT-Bench), plus a simulated effect."""
    params = SimParams(s=(-0.6, -0.3, 0.0, 0.3, 0.6), candidates_per_prompt=5, prompt_candidate_sd=0.4, rho=0.0)
    return _design(seed=3, n_prompts=12, params=params)


def _full_data(design):
    layout = _layout(design)
    mask = np.asarray(oj.infer.selection.column_mask(design.arrays, design.arrays.stats, layout))
    priors = oj.bayes.Priors().resolved(0.05)
    return model_data(design.arrays, mask, priors, layout, prompt_effect=True), layout


def test_prompts_showing_every_candidate_get_the_centred_mean(full, multi):
    md, layout = _full_data(full)
    assert md.occ.full_zeta.shape == (full.n_clusters, 4)                   # every prompt, C − 1 coordinates
    u = np.arange(layout.n_theta)[layout.theta_blocks["u"]]
    np.testing.assert_array_equal(np.asarray(md.free)[np.asarray(md.occ.u_free)], u)
    # ζ positions are each used once, in candidate order within a prompt
    pos = np.asarray(md.occ.full_zeta)
    assert len(np.unique(pos)) == pos.size and np.all(np.diff(pos, axis=1) == 1)
    assert _full_data(multi)[0].occ.full_zeta is None                    # 4 of 8 candidates per prompt: no ridge


def test_model_and_sampler_coordinates_are_inverse(full):
    from oscar_jax.bayes import model_coordinates, sampler_coordinates

    md, _ = _full_data(full)
    k1, k2 = jax.random.split(jax.random.PRNGKey(4))
    w = jax.random.normal(k1, (3, md.free.shape[0]))
    z = jax.random.normal(k2, (3, md.occ.zeta_slot.shape[0]))
    sigma = jnp.array([0.2, 0.7, 1.5])
    theta, zeta = model_coordinates(w, sigma, z, md.occ, md.is_log_gamma)
    assert not np.allclose(theta, w) and not np.allclose(zeta, z)          # the map does something
    w2, z2 = sampler_coordinates(theta, sigma, zeta, md.occ, md.is_log_gamma)
    np.testing.assert_allclose(w2, w, atol=1e-12)
    np.testing.assert_allclose(z2, z, atol=1e-12)


def test_centred_mean_is_the_same_posterior(full):
    """The sampler's density at (w, σ, z) is the old coordinates' density at the mapped point:
    an orthogonal map of z and a shear of u have Jacobian 1. A map that forgets the shear differs."""
    from numpyro.infer.util import potential_energy

    from oscar_jax.bayes import model_coordinates, oscar_model, unconstrained_from_theta

    md, layout = _full_data(full)
    old = md._replace(occ=md.occ._replace(full_zeta=None, u_free=None))
    model = lambda d: oscar_model(d, layout=layout, n_clusters=full.n_clusters)  # noqa: E731
    key = jax.random.PRNGKey(5)
    for i in range(3):
        k1, k2, key = jax.random.split(key, 3)
        w = 0.5 * jax.random.normal(k1, (md.free.shape[0],))
        z = jax.random.normal(k2, (md.occ.zeta_slot.shape[0],))
        log_sigma = jnp.log(0.3 + 0.5 * i)
        theta, zeta = model_coordinates(w, jnp.exp(log_sigma), z, md.occ, md.is_log_gamma)
        new_pe = potential_energy(model, (md,), {}, {"theta": w, "sigma_prompt": log_sigma, "z_prompt": z})
        old_pe = potential_energy(model, (old,), {}, {"theta": unconstrained_from_theta(theta, md.is_log_gamma),
                                                      "sigma_prompt": log_sigma, "z_prompt": zeta})
        np.testing.assert_allclose(new_pe, old_pe, rtol=1e-10)
        # negative control: ζ mapped but u left at m
        wrong = potential_energy(model, (old,), {}, {"theta": w, "sigma_prompt": log_sigma, "z_prompt": zeta})
        assert abs(float(wrong - old_pe)) > 1e-3
