"""Batched refits and the prompt bootstrap (oscar_jax.infer.weights, oscar_jax.infer.batch_fit, oscar_jax.bootstrap).

Compile budget: every fit here uses one small simulated design (the Appendix G generator,
120 prompts) and one model (OSCAR, so position, length and family column selection are all
exercised), with one chunk size, so the batched core compiles once for the whole module;
the single fit and the explicit-resample fit add one compile each.
"""

from __future__ import annotations

import io
import json
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from oscar_jax.cli import main as cli
from oscar_jax import fit
from oscar_jax.infer.fit_core import fit_core_jit
from oscar_jax.infer.selection import column_mask
from oscar_jax.model.design import build_design, cell_stats_from_cluster_weights
from oscar_jax.infer.batch_fit import fit_batch
from oscar_jax.runtime.batching import WORKERS_ENV
from oscar_jax.results.jsonable import to_json
from oscar_jax.bootstrap import BootstrapResult, bootstrap
from oscar_jax.infer.weights import bootstrap_indices, bootstrap_weights, fold_masks, prompt_folds, within_fold_weights
from oscar_jax.simulate import TABLE_G1, simulate_frame
from oscar_jax.runtime.validate import OscarInputError

from helpers import record_threads

N_PROMPTS = 120
MODEL = "oscar"
CHUNK = 8  # one chunk size everywhere: one compile of the batched core
# Two fits of the same objective that each stop at ‖∇‖∞ ≤ 1e-12·N (solver tolerance) agree
# to about that gradient divided by the smallest Hessian eigenvalue (≈ 1e-11 here); the
# requirement is 1e-8.
SAME_ESTIMATE = 1e-8


def sim_families():
    """The generator's families (candidate i: i mod 3; judges: Table G1) for its names."""
    fam = {f"cand{i}": f"family{i % 3}" for i in range(len(TABLE_G1.s))}
    fam.update({f"judge{k}": f"family{f}" for k, f in enumerate(TABLE_G1.judge_family)})
    return fam


def sim_frame():
    return simulate_frame(seed=3, n_prompts=N_PROMPTS)


def sim_design(frame=None):
    frame = sim_frame() if frame is None else frame
    return build_design(frame, reference_judge="judge0", family_map=sim_families())


@pytest.fixture(scope="module")
def frame():
    return sim_frame()


@pytest.fixture(scope="module")
def design(frame):
    return sim_design(frame)


@pytest.fixture(scope="module")
def full(design):
    return fit(design, MODEL)


# ----------------------------------------------------------------------------- weights
def test_bootstrap_weights_are_counts_of_draws_and_deterministic():
    g, b = 50, 7
    idx = np.asarray(bootstrap_indices(11, g, b))
    w = np.asarray(bootstrap_weights(11, g, b))
    assert w.shape == (b, g) and w.dtype == np.float64
    np.testing.assert_array_equal(w, np.stack([np.bincount(r, minlength=g) for r in idx]))
    np.testing.assert_array_equal(w.sum(axis=1), g)
    np.testing.assert_array_equal(w, np.asarray(bootstrap_weights(jax.random.PRNGKey(11), g, b)))
    assert not np.array_equal(w, np.asarray(bootstrap_weights(12, g, b)))


def test_within_fold_weights_keep_each_fold_and_its_size():
    folds = prompt_folds(31, 3, seed=2)
    w = np.asarray(within_fold_weights(4, folds, 200))
    for f in range(3):
        in_f = folds == f
        np.testing.assert_array_equal(w[:, in_f].sum(axis=1), in_f.sum())
    assert not np.array_equal(w[0], w[1])
    np.testing.assert_array_equal(w, np.asarray(within_fold_weights(4, folds, 200)))
    # every cluster of a fold can be drawn (uniform within the fold)
    assert np.all(w.sum(axis=0) > 0)


def test_prompt_folds_balanced_partition():
    folds = prompt_folds(100, 3, seed=0)
    assert sorted(np.bincount(folds).tolist()) == [33, 33, 34]
    np.testing.assert_array_equal(folds, prompt_folds(100, 3, seed=0))
    assert not np.array_equal(folds, prompt_folds(100, 3, seed=1))
    train, test = fold_masks(folds)
    np.testing.assert_array_equal(train + test, 1.0)
    np.testing.assert_array_equal(test.sum(axis=0), 1.0)  # each cluster tested exactly once


def test_input_errors_before_tracing(design):
    g = design.n_clusters
    with pytest.raises(OscarInputError, match="shape"):
        fit_batch(design, MODEL, np.ones((2, g + 1)))
    with pytest.raises(OscarInputError, match="finite and ≥ 0"):
        fit_batch(design, MODEL, -np.ones((1, g)))
    with pytest.raises(OscarInputError, match="total weight 0"):
        fit_batch(design, MODEL, np.zeros((1, g)))
    with pytest.raises(OscarInputError, match="starts"):
        fit_batch(design, MODEL, np.ones((1, g)), starts=np.zeros(3))
    with pytest.raises(OscarInputError, match="n_folds"):
        prompt_folds(design, g + 1)
    with pytest.raises(OscarInputError, match="replicates"):
        bootstrap(design, MODEL, replicates=1)
    with pytest.raises(OscarInputError, match="fold ids"):
        within_fold_weights(0, np.array([0.5, 1.0]), 3)


# ----------------------------------------------------------------------------- batched fit
def test_batch_of_ones_reproduces_single_fit(design, full):
    ones = np.ones((1, design.n_clusters))
    cold = fit_batch(design, MODEL, ones, chunk_size=CHUNK)  # the single fit's two starts
    warm = fit_batch(design, MODEL, ones, starts=full.theta, chunk_size=CHUNK)
    for batch in (cold, warm):
        np.testing.assert_allclose(batch.theta[0], full.theta, rtol=0, atol=SAME_ESTIMATE)
        np.testing.assert_array_equal(batch.core.mask[0], full.core.mask)
        assert batch.valid.all() and batch.theta.dtype == np.float64
    assert cold.core.start_objectives.shape == (1, 2)


def test_bootstrap_weights_equal_explicitly_resampled_records(frame, design, full):
    idx = np.asarray(bootstrap_indices(5, design.n_clusters, 2))
    omega = np.asarray(bootstrap_weights(5, design.n_clusters, 2))
    batch = fit_batch(design, MODEL, omega, starts=full.theta, chunk_size=CHUNK)
    # Build replicate 0 by copying every drawn prompt's records (a prompt drawn twice is two
    # clusters) and fit it from scratch with the single fit; s_L is the full-data one.
    prompts = np.asarray(design.prompts, dtype=object)
    parts = []
    for j, g in enumerate(idx[0]):
        rows = frame[frame.prompt == prompts[g]].copy()
        rows["prompt"] = f"{prompts[g]}#{j}"
        parts.append(rows)
    resampled = build_design(pd.concat(parts, ignore_index=True), reference_judge="judge0",
                             family_map=sim_families(), length_scale=design.length_scale)
    assert resampled.candidates == design.candidates and resampled.judges == design.judges
    explicit = fit(resampled, MODEL)
    np.testing.assert_allclose(batch.theta[0], explicit.theta, rtol=0, atol=SAME_ESTIMATE)
    np.testing.assert_array_equal(batch.core.mask[0], explicit.core.mask)
    np.testing.assert_allclose(batch.core.objective[0], explicit.objective, rtol=1e-12)
    # batched == looped: the package's jitted single-fit core, one replicate at a time
    for b in range(2):
        one = fit_core_jit(design.arrays, jnp.asarray(omega[b]), jnp.asarray(np.stack([full.theta] * 2)),
                           layout=full.layout, n_clusters=design.n_clusters, ridge=0.05, v_bound=15.0, max_iter=100)
        np.testing.assert_allclose(batch.theta[b], np.asarray(one.theta), rtol=0, atol=SAME_ESTIMATE)


def _judge0_family_free_weights(design):
    """Cluster weights keeping only prompts where judge0's family contrast F is zero.

    Judge0 (family 0) then has F ≡ 0, so B.2 must fix its β_fam at zero (and judge3's,
    same family); the comparison graph splits into family-0 and other candidates, so the
    replicate must also be flagged as disconnected.
    """
    arr = design.arrays
    k, f = np.asarray(arr.k), np.asarray(arr.z)[:, 1]
    judge0 = design.judges.index("judge0")
    bad_cells = (k == judge0) & (f != 0)
    bad_clusters = np.unique(np.asarray(arr.pair_g)[bad_cells[np.asarray(arr.pair_cell)]])
    w = np.ones(design.n_clusters)
    w[bad_clusters] = 0.0
    return w


def test_column_selection_per_replicate_and_failed_replicates_excluded(design, full):
    degenerate = _judge0_family_free_weights(design)
    omega = np.vstack([np.asarray(bootstrap_weights(9, design.n_clusters, 5)), degenerate[None]])
    batch = fit_batch(design, MODEL, omega, starts=full.theta, chunk_size=CHUNK)
    layout = full.layout
    for b in range(omega.shape[0]):  # the mask is B.2 redone on each replicate's own weights
        stats = cell_stats_from_cluster_weights(design.arrays, jnp.asarray(omega[b]), design.n_cells)
        np.testing.assert_array_equal(batch.core.mask[b], np.asarray(column_mask(design.arrays, stats, layout)))
    fam = layout.theta_blocks["fam"]
    fam_positions = [fam.start + design.judges.index(j) for j in ("judge0", "judge3")]
    assert np.all(full.core.mask[fam_positions] == 1)
    assert np.all(batch.core.mask[5, fam_positions] == 0)
    assert np.all(batch.theta[5, fam_positions] == 0.0)  # fixed at zero, not ridge-estimated
    assert np.all(np.isnan(batch.coefficient("fam")[5, [0, 3]]))
    assert not batch.checks["connected"][5] and not batch.valid[5]
    assert batch.valid[:5].all() and batch.n_failed == 1
    assert batch.failure_counts()["connected"] == 1
    assert "1 of 6 replicate fits did not converge or failed a check" in batch.failure_summary()
    boot = BootstrapResult(full=full, batch=batch, seed=9)
    assert boot.failed == 1 and boot.replicates == 6
    lb = boot.leaderboard().set_index("candidate")
    valid = batch.targets
    for c, name in enumerate(design.candidates):
        # score: the average-judge logit x = γ̄·s, as FitResult.leaderboard; s beside it
        for col, draws in (("score", valid.x[:5]), ("s", valid.s[:5])):
            lo, hi = np.quantile(draws[:, c], [0.025, 0.975])
            assert lb.loc[name, f"{col}_lo"] == pytest.approx(lo, abs=1e-14)
            assert lb.loc[name, f"{col}_hi"] == pytest.approx(hi, abs=1e-14)
    assert boot.ranks.shape == (5, design.n_cand)


# ----------------------------------------------------------------------------- bootstrap
@pytest.fixture(scope="module")
def boot(design, full):
    # 12 replicates in chunks of 8: the second chunk is padded, which must not leak.
    return bootstrap(design, MODEL, replicates=12, seed=0, full=full, chunk_size=CHUNK)


def test_bootstrap_batch_carries_the_requested_model_and_the_full_fit_notes(boot, full):
    # built once with the bootstrap's own problem, not patched after fit_batch
    assert boot.batch.spec == full.spec and boot.batch.effective_spec == full.effective_spec
    assert boot.batch.layout == full.layout and boot.batch.notes == full.notes


def test_bootstrap_tables_centre_on_full_fit(boot, full, design):
    lb = boot.leaderboard()
    ref = full.leaderboard()
    np.testing.assert_array_equal(lb.candidate, ref.candidate)
    np.testing.assert_array_equal(lb.score, ref.score)  # the full-data fit, not a bootstrap median
    np.testing.assert_array_equal(lb.s, ref.s)
    np.testing.assert_allclose(lb.score, full.gamma_bar * lb.s, atol=1e-12)  # one scale: x = γ̄·s
    assert np.all(lb.score_lo <= lb.score_hi)
    jt = boot.judges()
    np.testing.assert_array_equal(jt.kappa, full.kappa)
    assert {"gamma_lo", "kappa_hi", "beta_pos_lo", "D_lo", "D_hi", "beta_len_hi", "beta_fam_lo"} <= set(jt.columns)
    ref_row = jt[jt.reference].iloc[0]
    assert ref_row.gamma_lo == ref_row.gamma_hi == 1.0  # the reference judge's γ is fixed
    wm = boot.win_matrix()
    assert len(wm) == design.n_cand * (design.n_cand - 1)
    assert np.all((wm.q_lo <= wm.q_hi) & (wm.q_lo >= 0) & (wm.q_hi <= 1))
    rd = boot.rank_distribution()
    probs = rd[[f"p_rank_{r}" for r in range(1, design.n_cand + 1)]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, atol=1e-12)
    # the leaderboard's P(best) is the rank distribution's P(rank = 1), under one name each
    lb = boot.leaderboard().set_index("candidate").loc[rd.candidate]
    np.testing.assert_array_equal(lb.p_best.to_numpy(), rd.p_rank_1.to_numpy())
    assert "p_best" not in rd.columns


def test_bootstrap_deterministic_and_seed_dependent(boot, design, full):
    again = bootstrap(design, MODEL, replicates=12, seed=0, full=full, chunk_size=CHUNK)
    np.testing.assert_array_equal(again.batch.theta, boot.batch.theta)
    np.testing.assert_array_equal(again.batch.omega, boot.batch.omega)
    other = bootstrap(design, MODEL, replicates=12, seed=1, full=full, chunk_size=CHUNK)
    assert not np.array_equal(other.batch.omega, boot.batch.omega)


def test_chunks_side_by_side_on_threads_give_the_same_bits(design, full, monkeypatch):
    # Three chunks (the last padded) on one thread and on three: every field bit for bit.
    import oscar_jax.infer.batch_fit as batch_fit

    runs = {}
    for workers in ("1", "3"):
        monkeypatch.setenv(WORKERS_ENV, workers)
        threads = record_threads(monkeypatch, batch_fit, rendezvous=2 if workers == "3" else 0)
        runs[workers] = bootstrap(design, MODEL, replicates=20, seed=0, full=full, chunk_size=CHUNK).batch.core
        names = set(threads)
        assert len(threads) == 3
        if workers == "1":
            assert names == {threading.current_thread().name}
        else:
            assert len(names) >= 2 and all(n.startswith("oscar-chunk") for n in names), names
    for field, value in runs["1"]._asdict().items():
        np.testing.assert_array_equal(getattr(runs["3"], field), value, err_msg=field)


def test_bootstrap_to_dict_is_json(boot):
    d = json.loads(to_json(boot.to_dict()))
    assert d["replicates"] == 12 and d["failed"] == boot.failed
    assert {"candidate", "score", "score_lo", "score_hi", "p_best", "p_best_mcse"} <= set(d["candidates"][0])
    assert {"judge", "kappa", "kappa_lo", "kappa_hi", "D", "D_lo", "D_hi"} <= set(d["judges"][0])
    # P(best) and its Monte Carlo SE: independent replicates, so √(p(1 − p)/B) exactly
    n = boot.replicates - boot.failed
    for cand in d["candidates"]:
        assert cand["p_best_mcse"] == pytest.approx(np.sqrt(cand["p_best"] * (1 - cand["p_best"]) / n), abs=1e-15)


def test_cli_bootstrap(tmp_path, frame, capsys):
    data = tmp_path / "sim.csv"
    frame.to_csv(data, index=False)
    families = tmp_path / "families.json"
    families.write_text(json.dumps(sim_families()))
    base = ["bootstrap", str(data), "--model", MODEL, "--replicates", "8", "--chunk-size", str(CHUNK),
            "--reference-judge", "judge0", "--family-map", str(families)]
    assert cli.main(base + ["--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replicates"] == 8 and payload["failed"] == 0
    assert len(payload["candidates"]) == 8 and len(payload["judges"]) == 5
    # One scale per output: the CSV's score is the JSON's (average-judge logit), s beside it.
    assert cli.main(base + ["--format", "csv"]) == 0
    csv = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("candidate")
    for cand in payload["candidates"]:
        for key in ("score", "score_lo", "score_hi", "s", "s_lo"):
            assert csv.loc[cand["candidate"], key] == pytest.approx(cand[key], abs=1e-12), (cand["candidate"], key)
    assert cli.main(base + ["--out", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert "P(best)" in text and "Rank distribution" in text
    assert (tmp_path / "out" / "rank_distribution.csv").exists()
    assert cli.main(["bootstrap", str(data), "--replicates", "0"]) == 2


def test_one_step_starts_linearise_the_replicates_and_leave_their_estimates(boot, design, full, monkeypatch):
    from oscar_jax.infer import starts as one_step

    # ω = 1 is the full data: its gradient at θ̂ is the solver's residual, so no step.
    at_full = one_step.one_step_starts(full, np.ones((1, design.n_clusters)))
    np.testing.assert_allclose(at_full[0], full.theta, atol=1e-9)
    starts = one_step.one_step_starts(full, boot.batch.omega)
    ok = boot.batch.valid
    # The linearised estimate lies closer to every replicate's own minimum than θ̂ does
    # (the wrong sign would put it about twice as far away as θ̂). On these 120 prompts the
    # replicates move far from θ̂ (‖Δθ‖ ≈ 1.4–3.9) and the step removes about 60% of it.
    near = np.linalg.norm(starts - boot.batch.theta, axis=1)[ok]
    far = np.linalg.norm(full.theta - boot.batch.theta, axis=1)[ok]
    assert np.all(near < far) and np.median(near / far) < 0.6
    # The start changes the cost, not the estimate: replicates started at θ̂ reach the same
    # minima (to the solver's tolerance) in more evaluations.
    monkeypatch.setattr(one_step, "MAX_SCORE_ENTRIES", 0)
    assert one_step.one_step_starts(full, boot.batch.omega) is None
    at_theta_hat = bootstrap(design, MODEL, replicates=12, seed=0, full=full, chunk_size=CHUNK)
    np.testing.assert_array_equal(at_theta_hat.batch.valid, ok)
    np.testing.assert_allclose(at_theta_hat.batch.theta[ok], boot.batch.theta[ok], atol=SAME_ESTIMATE)
    assert at_theta_hat.batch.core.n_iter[ok].sum() > boot.batch.core.n_iter[ok].sum()
