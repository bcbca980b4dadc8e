"""The audit's Bayesian models fitted by SVI (``fit_audit_model(method="svi")``, ``oscar audit
--method svi``): the centred coordinates are the same model, SVI recovers known effects on
simulated audits (labels and probabilities), and the CLI prints and writes the SVI fit."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from functools import partial

import jax
import numpy as np
import pytest
from numpyro.infer.util import log_density

import oscar_jax  # noqa: F401  (float64)
from oscar_jax.audit import AuditSimParams, fit_audit_model, simulate_audit_data, simulate_audit_frame
from oscar_jax.audit.bayes_models import (
    centred_effects,
    insert_ref,
    logit_model,
    logit_model_centred,
    ordinal_model,
    ordinal_model_centred,
)
from oscar_jax.audit.bayes_svi import AUDIT_SVI
from oscar_jax.audit.posterior import setup_model
from oscar_jax.runtime.validate import OscarInputError
from oscar_jax.infer.posterior import SviSettings, VariationalWarning

LABEL = AuditSimParams(effects=(0.0, 0.0, 0.6, -0.6), interaction_sd=0.5, noise_scale=1.0)
# The CLI's settings (AUDIT_SVI with --svi-steps/--learning-rate): one compiled program for
# the fixture and the CLI test, which reads the same audit from a file.
SETTINGS = replace(AUDIT_SVI, steps=1500, learning_rate=0.05)


@pytest.fixture(scope="module")
def label_fit():
    data = simulate_audit_data(5, 150, 4, LABEL)
    with pytest.warns(VariationalWarning, match="too narrow"):
        post = fit_audit_model(data, "cond0", method="svi", svi=SETTINGS, seed=1)
    return data, post


def _arrays(values: dict) -> dict:
    return {k: jax.numpy.asarray(v, jax.numpy.float64) for k, v in values.items()}


def test_centred_coordinates_are_the_same_model():
    # ordinal: joint density in centred coordinates = original density at the mapped point
    # × the density of the I + C unused directions (row, column and grand means of z_cell, v̄).
    rng = np.random.default_rng(0)
    n_items, n_cond, ref = 9, 4, 2
    counts = rng.integers(0, 4, size=(n_items, n_cond, 3)).astype(float)
    p = {"cutpoints": np.array([-0.7, 0.9]), "sigma_item": 1.3, "sigma_inter": 0.6,
         "contrast": rng.normal(size=n_cond - 1), "item_level": rng.normal(size=n_items),
         "z_cell": rng.normal(size=(n_items, n_cond)), "z_mean": rng.normal(size=n_cond),
         "z_item": rng.normal(size=n_items)}
    lp_c, _ = log_density(partial(ordinal_model_centred, ref=ref, interaction=True), (counts,), {}, _arrays(p))
    zc, s = p["z_cell"], p["sigma_inter"]
    grand, rows, cols = zc.mean(), zc.mean(1) - zc.mean(), zc.mean(0) - zc.mean()
    dc = zc - rows[:, None] - cols[None, :] - grand
    v = p["z_item"] - p["z_item"].mean()
    z = dc + v[:, None] / np.sqrt(n_cond) + p["z_mean"][None, :] / np.sqrt(n_items)
    g = np.asarray(insert_ref(p["contrast"], ref))
    delta = np.asarray(centred_effects(p["contrast"], ref, n_items, s, p["z_mean"]))
    alpha = p["item_level"] - g.mean() - s * p["z_mean"][ref] / np.sqrt(n_items) - s * v / np.sqrt(n_cond)
    # the original predictor α_i + δ_c + σ z_ic is the centred one λ_i + g_c − ḡ + σ dc(z)_ic
    np.testing.assert_allclose(alpha[:, None] + delta + s * z, p["item_level"][:, None] + g - g.mean() + s * dc,
                               rtol=0, atol=1e-12)
    orig = {"cutpoints": p["cutpoints"], "sigma_item": p["sigma_item"], "sigma_inter": s,
            "alpha": alpha, "delta_free": np.delete(delta, ref), "z_inter": z}
    lp_o, _ = log_density(partial(ordinal_model, ref=ref, interaction=True), (counts,), {}, _arrays(orig))
    unused = np.concatenate([np.sqrt(n_cond) * rows, np.sqrt(n_items) * cols, [np.sqrt(n_items * n_cond) * grand],
                             [np.sqrt(n_items) * p["z_item"].mean()]])
    # rows and cols each sum to zero: I − 1 and C − 1 free directions, with grand and v̄: I + C in all
    aux = -0.5 * np.sum(unused ** 2) - 0.5 * (n_items + n_cond) * np.log(2 * np.pi)
    assert abs(float(lp_c) - float(lp_o) - aux) < 1e-9
    # logit model (u integrated out): α = λ − μ − ḡ, δ = g, no auxiliary term
    n = rng.integers(0, 4, size=(n_items, n_cond)).astype(float)
    xbar, ss = rng.normal(size=(n_items, n_cond)), rng.uniform(size=(n_items, n_cond)) * n
    q = {"mu": 0.3, "sigma_item": 1.1, "sigma_noise": 0.7, "sigma_inter": 0.4, "contrast": p["contrast"],
         "item_level": p["item_level"]}
    lp_c, _ = log_density(partial(logit_model_centred, ref=ref, interaction=True), (n, xbar, ss), {}, _arrays(q))
    q_o = {"mu": 0.3, "sigma_item": 1.1, "sigma_noise": 0.7, "sigma_inter": 0.4, "delta_free": p["contrast"],
           "alpha": p["item_level"] - 0.3 - g.mean()}
    lp_o, _ = log_density(partial(logit_model, ref=ref, interaction=True), (n, xbar, ss), {}, _arrays(q_o))
    assert abs(float(lp_c) - float(lp_o)) < 1e-9


def test_svi_recovers_known_label_effects(label_fit):
    data, post = label_fit
    summ = post.summary.set_index("condition")
    truth = np.asarray(LABEL.effects) / LABEL.noise_scale          # δ on the model's log-odds scale
    for c in ("cond1", "cond2", "cond3"):
        t = truth[int(c[-1])] - truth[0]
        assert summ.loc[c, "lo"] <= t <= summ.loc[c, "hi"], (c, t, summ.loc[c].to_dict())
    assert summ.loc["cond2", "lo"] > 0 > summ.loc["cond3", "hi"]      # both effects found
    assert post.interaction and post.method == "svi" and post.delta.shape == (1, SETTINGS.draws, 4)
    assert np.all(post.delta[..., 0] == 0)
    # σ_inter (true 0.5) is weakly identified with 4 runs of a noisy judge, and a mean-field
    # fit tends to shrink it (measured here: interval upper end 0.48): only its size is checked.
    assert 0.2 < post.hyper["sigma_inter"]["mean"][0] < 1.0
    d = post.diagnostics
    assert d["plateau"] and d["method"] == "svi" and d["max_r_hat"] is None
    assert post.elbo.shape == (SETTINGS.steps,) and post.elbo[:100].mean() > post.elbo[-100:].mean()
    stats = post.sample_stats()
    np.testing.assert_array_equal(stats["elbo"].values, -post.elbo)
    assert any("too narrow" in n for n in post.notes)


def test_plateau_check_fails_when_stopped_early(label_fit):
    # the same audit as the fixture, stopped after 50 steps: both the loss and the ELBO still
    # to gain say "not converged", and the user is warned; the fixture's run passes both
    data, post = label_fit
    with pytest.warns(VariationalWarning) as caught:
        short = fit_audit_model(data, "cond0", method="svi", svi=replace(SETTINGS, steps=50), seed=1)
    assert any("had not levelled off" in str(w.message) for w in caught)
    d = short.diagnostics
    assert not d["plateau"] and d["gain_left"] > 1.0
    assert post.diagnostics["plateau"] and post.diagnostics["gain_left"] <= 1.0  # noise-corrected: may dip below 0
    assert post.diagnostics["final_loss"] < d["final_loss"]


@pytest.mark.slow  # a second compiled program (the logit model): ~8 s under load since the lean SVI
def test_svi_recovers_probability_effects():
    params = AuditSimParams(kind="prob", effects=(0.0, 0.3, -0.3), interaction_sd=0.3, noise_sd=0.5)
    data = simulate_audit_data(4, 120, 3, params)
    post = fit_audit_model(data, "cond0", method="svi", svi=SETTINGS, warn=False)
    summ = post.summary.set_index("condition")
    for c, truth in (("cond1", 0.3), ("cond2", -0.3)):
        assert summ.loc[c, "lo"] <= truth <= summ.loc[c, "hi"], (c, summ.loc[c].to_dict())
        assert np.sign(summ.loc[c, "estimate"]) == np.sign(truth)
    lo, hi = post.hyper["sigma_noise"]["lo"][0], post.hyper["sigma_noise"]["hi"][0]
    assert lo <= 0.5 <= hi
    assert post.diagnostics["plateau"]


def test_centred_start_matches_the_data():
    # The moment-based start puts the contrasts where the cell means put them (probabilities:
    # exactly the mean over items of the within-item deviations).
    from oscar_jax.audit.bayes_svi import initial_values

    params = AuditSimParams(kind="prob", effects=(0.0, 1.0, -1.0), interaction_sd=0.0, noise_sd=0.2)
    data = simulate_audit_data(2, 400, 2, params)
    setup = setup_model(data, "cond0")
    init = initial_values("prob", setup.args, setup.ref, setup.interaction)
    np.testing.assert_allclose(np.asarray(init["contrast"]), [1.0, -1.0], atol=0.05)


def test_bad_svi_options():
    data = simulate_audit_data(0, 20, 2, LABEL)
    with pytest.raises(OscarInputError, match="method"):
        fit_audit_model(data, "cond0", method="vi")
    with pytest.raises(OscarInputError, match="SviSettings"):
        fit_audit_model(data, "cond0", method="svi", svi="fast")
    with pytest.raises(OscarInputError, match="batch_size"):
        fit_audit_model(data, "cond0", method="svi", svi=SviSettings(batch_size=10))
    with pytest.raises(OscarInputError, match="method='svi'"):
        fit_audit_model(data, "cond0", svi=AUDIT_SVI)


def test_cli_audit_method_svi(tmp_path, capsys, label_fit):
    from oscar_jax.cli.main import main

    frame = simulate_audit_frame(5, 150, 4, LABEL)
    path = tmp_path / "audit.csv"
    frame.to_csv(path, index=False)
    args = ["audit", str(path), "--reference", "cond0", "--n-boot", "200", "--method", "svi", "--svi-steps",
            str(SETTINGS.steps), "--learning-rate", str(SETTINGS.learning_rate)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VariationalWarning)
        assert main([*args, "--format", "json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        assert main(args) == 0
    text = capsys.readouterr().out
    bayes = payload["bayes"]
    assert bayes["diagnostics"]["method"] == "svi" and bayes["diagnostics"]["steps"] == SETTINGS.steps
    assert len(bayes["elbo"]) == SETTINGS.steps and bayes["diagnostics"]["plateau"]
    rows = {e["condition"]: e for e in payload["effects"] if e["method"] == "bayes_ordinal"}
    assert set(rows) == {"cond1", "cond2", "cond3", "others (mean)"}
    # the CLI reads the same audit as the fixture: its effects are close to the API's
    summ = label_fit[1].summary.set_index("condition")
    for c in ("cond2", "cond3"):
        assert abs(rows[c]["estimate"] - summ.loc[c, "estimate"]) < 0.25 * (summ.loc[c, "hi"] - summ.loc[c, "lo"])
    assert "SVI, AutoNormal guide" in text and "too narrow" in text
    assert main(["audit", str(path), "--reference", "cond0", "--svi-steps", "100", "--no-bayes"]) == 2
