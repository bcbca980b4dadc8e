"""The model core: exact derivatives, tie models, column selection."""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from jax.test_util import check_grads

import oscar_jax as oj
from oscar_jax.infer.derivatives import cluster_scores, expected_information, loss_value, value_grad_hess
from oscar_jax.infer.selection import column_mask
from oscar_jax.model.likelihood import local_loss

# Assembled (scattered) derivatives vs direct autodiff of the summed loss: both exact, so
# they differ only by rounding in sums of ~10³ terms.
ASSEMBLY_RTOL = 1e-10


@pytest.fixture(scope="module")
def small_design():
    frame = oj.simulate_frame(seed=1, n_prompts=120)
    frame.loc[::7, "outcome"] = 0.5  # some ties, so Davidson and fractional differ
    frame.loc[::7, "tie_kind"] = "tie"
    return oj.build_design(frame, reference_judge="judge0")


@pytest.mark.parametrize("model", ["j", "j+p", "oscar", "bt+plf", "davidson+plf"])
def test_assembled_derivatives_match_autodiff(small_design, model):
    spec, _ = small_design.effective_spec(oj.parse_model(model))
    layout = small_design.layout(spec)
    arrays, stats = small_design.arrays, small_design.arrays.stats
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (layout.n_theta,))
    f, g, h = value_grad_hess(theta, arrays, stats, layout)
    direct = lambda t: loss_value(t, arrays, stats, layout)  # noqa: E731
    np.testing.assert_allclose(f, direct(theta), rtol=ASSEMBLY_RTOL)
    np.testing.assert_allclose(g, jax.grad(direct)(theta), rtol=ASSEMBLY_RTOL, atol=1e-9)
    np.testing.assert_allclose(h, jax.hessian(direct)(theta), rtol=ASSEMBLY_RTOL, atol=1e-9)
    if model in ("oscar", "davidson+plf"):
        # and the autodiff itself against finite differences
        check_grads(direct, (theta,), order=1, modes=["rev"], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("model", ["oscar", "davidson+plf"])
def test_chunked_assembly_equals_one_pass(small_design, model, monkeypatch):
    # Beyond CHUNK cells the sums run chunk by chunk over zero-padded cells (bounded
    # memory at 10⁶–10⁷ records): the same sums, to rounding. 97 forces a ragged last chunk.
    import oscar_jax.infer.derivatives as deriv

    spec, _ = small_design.effective_spec(oj.parse_model(model))
    layout = small_design.layout(spec)
    arrays, stats = small_design.arrays, small_design.arrays.stats
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (layout.n_theta,))
    whole = value_grad_hess(theta, arrays, stats, layout) + (expected_information(theta, arrays, stats, layout),)
    monkeypatch.setattr(deriv, "CHUNK", 97)
    assert small_design.n_cells % 97 and small_design.n_cells > 2 * 97
    chunked = value_grad_hess(theta, arrays, stats, layout) + (expected_information(theta, arrays, stats, layout),)
    for x, y in zip(chunked, whole):
        np.testing.assert_allclose(x, y, rtol=ASSEMBLY_RTOL, atol=1e-9)


@pytest.mark.parametrize("model", ["oscar", "davidson+plf"])
def test_evaluation_with_the_information_equals_the_two_evaluations(small_design, model):
    # A small single fit's solver evaluates (L, ∇L, ∇²L) and the expected information in
    # one pass batched over the two statistics (one copy of the derivative code in its
    # program): each must be what its own evaluation gives, to rounding. Control: with γ
    # learned the observed Hessian differs from the expected information (the residual term).
    from oscar_jax.infer.derivatives import value_grad_hess_information

    spec, _ = small_design.effective_spec(oj.parse_model(model))
    layout = small_design.layout(spec)
    arrays, stats = small_design.arrays, small_design.arrays.stats
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(2), (layout.n_theta,))
    both = jax.jit(lambda t: value_grad_hess_information(t, arrays, stats, layout))(theta)
    apart = jax.jit(lambda t: value_grad_hess(t, arrays, stats, layout)
                    + (expected_information(t, arrays, stats, layout),))(theta)
    for x, y in zip(both, apart):
        np.testing.assert_allclose(x, y, rtol=ASSEMBLY_RTOL, atol=1e-9)
    if layout.structure.learn_gamma:
        assert not np.allclose(both[2], both[3], rtol=1e-3)


def test_cluster_scores_sum_to_gradient(small_design):
    layout = small_design.layout(oj.parse_model("oscar"))
    theta = 0.2 * jnp.ones(layout.n_theta)
    psi = cluster_scores(theta, small_design.arrays, layout, small_design.n_clusters)
    _, g, _ = value_grad_hess(theta, small_design.arrays, small_design.arrays.stats, layout)
    np.testing.assert_allclose(psi.sum(axis=0), g, rtol=ASSEMBLY_RTOL, atol=1e-9)


def test_sandwich_in_blocks_equals_the_one_pass(small_design, monkeypatch):
    """Beyond CHUNK pairs the cluster scores are added chunk by chunk, and beyond MEAT_ROWS
    clusters the meat is summed block by block, the last block moved back to end at G with
    its repeated rows weighed 0: the same covariances as one pass, to rounding. Sizes not
    multiples of the blocks exercise the shorter last chunk and the moved-back block."""
    from oscar_jax.infer import derivatives, sandwich

    d = small_design
    fitted = oj.fit(d, "oscar", warn=False)
    layout, c = fitted.layout, fitted.core
    theta = c.theta
    omega = np.random.default_rng(0).gamma(2.0, 0.5, d.n_clusters)  # unequal cluster weights

    def run(blocks=None):
        return jax.jit(lambda t, w: sandwich.covariances(t, c.mask, c.hess, c.info, d.arrays, w, layout=layout,
                                                         n_clusters=d.n_clusters, ridge=0.05, blocks=blocks))(
            theta, omega)

    whole = run()
    assert sandwich.meat_blocks(d.arrays.pair_g, d.n_clusters) is None  # small: Ψ is held whole
    n_pairs = int(d.arrays.pair_g.shape[0])
    assert n_pairs % 97 and n_pairs > 2 * 97 and d.n_clusters % 7 and d.n_clusters > 2 * 7
    monkeypatch.setattr(derivatives, "CHUNK", 97)
    monkeypatch.setattr(sandwich, "CHUNK", 97)
    monkeypatch.setattr(sandwich, "MEAT_ROWS", 7)
    scale = np.max(np.abs(whole.cluster))
    # Ψ in chunks, the meat in blocks; then Ψ never whole: made a block of prompts at a time
    # (twice: the mean, then the centred sum), the last block padded with weight-0 rows.
    blocks = sandwich.meat_blocks(d.arrays.pair_g, d.n_clusters)
    assert blocks is not None and len(blocks[0]) == -(-d.n_clusters // 7)
    for got in (run(), run(blocks)):
        assert np.max(np.abs(np.asarray(got.cluster) - whole.cluster)) <= 1e-12 * scale
        np.testing.assert_array_equal(got.model, whole.model)
    # A block that read one pair too few (its last prompt's last pair dropped) is caught.
    starts, span = blocks
    short = run(((0, *(x + 1 for x in starts[1:])), span))
    assert np.max(np.abs(np.asarray(short.cluster) - whole.cluster)) > 1e-6 * scale
    # The check can fail: had the moved-back block counted its repeated rows again, the meat
    # would move by more than 1e-6 of its scale, far above the tolerance (removing the weight-0
    # mask of sandwich._centred_meat fails this test).
    mean = (omega @ np.asarray(derivatives.cluster_scores_phi(theta, d.arrays, layout, d.n_clusters))) / omega.sum()
    psi = np.asarray(derivatives.cluster_scores_phi(theta, d.arrays, layout, d.n_clusters)) - mean
    repeated = psi[-7:][: 7 - d.n_clusters % 7]
    twice = (psi.T * omega) @ psi + (repeated.T * omega[-7:][: 7 - d.n_clusters % 7]) @ repeated
    assert np.max(np.abs(twice - (psi.T * omega) @ psi)) > 1e-6 * np.max(np.abs((psi.T * omega) @ psi))


def test_fractional_loss_is_bernoulli_with_half_ties(small_design):
    layout = small_design.layout(oj.parse_model("j"))
    phi = jnp.array([0.4, -0.3, 0.2])  # s_a, s_b, v
    z = jnp.zeros(2)
    eta = np.exp(0.2) * 0.7
    p = 1 / (1 + np.exp(-eta))
    # one A win, one tie: −[1·log p + 0·log(1−p)] − [½ log p + ½ log(1−p)]
    expected = -(1.5 * np.log(p) + 0.5 * np.log1p(-p))
    got = local_loss(phi, z, jnp.array([2.0, 1.5, 1.0]), layout)
    assert float(got) == pytest.approx(expected, rel=1e-14)


def test_davidson_probabilities():

    from oscar_jax.model.params import Layout
    from oscar_jax.model.likelihood import local_prob
    spec = oj.parse_model("davidson+plf")
    lay = Layout(2, 1, 0, 0, spec.structure())
    # slots: s_a, s_b, pos, len, fam, tau
    phi = jnp.array([0.5, -0.5, 0.0, 0.0, 0.0, 0.3])
    eta = 1.0
    e = np.exp([eta / 2, -eta / 2, 0.3])
    pa, pb, pt = e / e.sum()
    assert float(local_prob(phi, jnp.zeros(2), lay)) == pytest.approx(pa + 0.5 * pt, rel=1e-14)
    loss = local_loss(phi, jnp.zeros(2), jnp.array([3.0, 1.5, 1.0]), lay)  # 1 A, 1 B, 1 tie
    assert float(loss) == pytest.approx(-(np.log(pa) + np.log(pb) + np.log(pt)), rel=1e-13)


def _selection_rules_design():
    rows = []
    rng = np.random.default_rng(0)
    for i in range(200):
        rows.append((f"p{i}", "fa", "other", "j1", rng.integers(0, 2), 10, 10 + i % 5))
        rows.append((f"p{i}", "fb", "other", "j2", rng.integers(0, 2), 10, 10 + i % 7))
        rows.append((f"p{i}", *(("other", "fa") if i % 2 else ("fa", "other")), "j3", rng.integers(0, 2), 10, 10))
        rows.append((f"p{i}", "fa" if i % 2 else "other", "fb" if i % 2 else "fa", "j4", rng.integers(0, 2), 10 + i % 3, 10))
    frame = pd.DataFrame(rows, columns=["prompt", "candidate_a", "candidate_b", "judge", "outcome", "len_a", "len_b"])
    fam = {"fa": "A", "fb": "B", "other": "O", "j1": "Z", "j2": "B", "j3": "A", "j4": "A"}
    return oj.build_design(frame, family_map=fam, reference_judge="j4")


def test_column_selection_rules():
    # judge j1 has F ≡ 0; j2 has F ≡ 1 on all its records (collinear with position);
    # j3 has no length variation (F = ±1 varies); j4 has everything.
    d = _selection_rules_design()
    layout = d.layout(oj.parse_model("oscar"))
    m = np.asarray(column_mask(d.arrays, d.arrays.stats, layout))
    tb = layout.theta_blocks
    kept = {j: [t for t in ("pos", "len", "fam") if m[tb[t]][k]] for k, j in enumerate(d.judges)}
    assert kept == {"j1": ["pos", "len"], "j2": ["pos", "len"], "j3": ["pos", "fam"], "j4": ["pos", "len", "fam"]}


@pytest.mark.parametrize("chunk", [3, 6])
def test_column_selection_by_chunks_keeps_its_rules(chunk, monkeypatch):
    """B.2 sums by judge CHUNK cells at a time in a compiled program (its residual columns are
    rebuilt per chunk, never held whole): the same columns as one pass and as host numpy."""
    from oscar_jax.infer import derivatives, selection

    d = _selection_rules_design()
    layout = d.layout(oj.parse_model("oscar"))
    whole = np.asarray(column_mask(d.arrays, d.arrays.stats, layout))
    host = np.asarray(column_mask(d.arrays, np.asarray(d.arrays.stats), layout, xp=np))
    monkeypatch.setattr(derivatives, "CHUNK", chunk)
    assert d.n_cells > 3 * chunk and d.n_cells % chunk  # several chunks and a shorter last one
    chunked = np.asarray(column_mask(d.arrays, d.arrays.stats, layout))
    assert np.array_equal(chunked, whole) and np.array_equal(host, whole) and whole.sum() < len(whole)
    # The chunked judge sums are the one-pass sums to rounding; skipping the last, shorter chunk is not.
    terms = lambda k, w, z: [w * z[:, 0]]  # noqa: E731
    one = np.asarray(selection._judge_sums(terms, d.arrays, np.asarray(d.arrays.stats), layout.n_judge, np))[0]
    by_chunk = np.asarray(selection._judge_sums(terms, d.arrays, d.arrays.stats, layout.n_judge, selection.jnp))[0]
    np.testing.assert_allclose(by_chunk, one, rtol=1e-12, atol=1e-12 * np.abs(one).max())
    n_full = d.n_cells // chunk * chunk
    stats = np.asarray(d.arrays.stats).copy()
    stats[n_full:] = 0.0  # what a pass that dropped the remainder would sum
    short = np.asarray(selection._judge_sums(terms, d.arrays, stats, layout.n_judge, np))[0]
    assert np.abs(short - one).max() > 1e-6 * np.abs(one).max()


def test_dropped_columns_are_zero_with_zero_variance():
    frame = oj.simulate_frame(seed=4, n_prompts=300)
    fam = {f"cand{i}": f"f{i % 3}" for i in range(8)}
    fam.update({"judge0": "f0", "judge1": "f1", "judge2": "f2", "judge3": "f0", "judge4": "none"})
    r = oj.fit(oj.build_design(frame, family_map=fam, reference_judge="judge0"), "oscar")
    jt = r.judges()
    assert jt.set_index("judge").loc["judge4", "columns"] == "pos,len"
    m = np.asarray(r.core.mask)
    assert m.sum() == len(m) - 1
    assert np.all(r.theta[m == 0] == 0)
    assert np.all(r.cov.cluster[m == 0] == 0) and np.all(r.cov.model[:, m == 0] == 0)


def test_zero_weight_judge_is_fixed():
    d = oj.simulate_design(seed=2, n_prompts=100)
    layout = d.layout(oj.parse_model("oscar"))
    stats = np.asarray(d.arrays.stats).copy()
    stats[np.asarray(d.arrays.k) == 3] = 0.0  # judge3 absent from this "replicate"
    m = np.asarray(column_mask(d.arrays, jnp.asarray(stats), layout))
    tb = layout.theta_blocks
    v_free = [k for k in range(d.n_judge) if k != d.reference]
    assert m[tb["v"]][v_free.index(3)] == 0
    assert m[tb["pos"]][3] == 0 and m[tb["len"]][3] == 0 and m[tb["fam"]][3] == 0
    assert m[tb["pos"]][2] == 1


def test_expected_information_is_gauss_newton(small_design):
    # For fractional ties: Σ w p(1−p) r rᵀ with r = ∇η.
    spec = oj.parse_model("oscar")
    layout = small_design.layout(spec)
    theta = 0.1 * jnp.arange(layout.n_theta) / layout.n_theta
    info = expected_information(theta, small_design.arrays, small_design.arrays.stats, layout)
    from oscar_jax.model.likelihood import local_eta, local_index
    jac = jnp.asarray(layout.jacobian)
    idx = local_index(layout, small_design.arrays.a, small_design.arrays.b, small_design.arrays.k)

    def eta_all(t):
        phi = jac @ t
        return jax.vmap(lambda p, z: local_eta(p, z, layout))(phi[idx], small_design.arrays.z)

    r = jax.jacfwd(eta_all)(theta)
    p = jax.nn.sigmoid(eta_all(theta))
    w = small_design.arrays.stats[:, 0]
    np.testing.assert_allclose(info, (r.T * (w * p * (1 - p))) @ r, rtol=ASSEMBLY_RTOL, atol=1e-9)


def test_slot_order_and_covariate_map_are_one_table():
    # Layout.judge_slots and Layout.bias_columns are the one definition of the φ-slot order
    # and of the term → covariate map; check them against the φ blocks slot by slot.
    from oscar_jax.model.likelihood import local_index
    from oscar_jax.model.params import Layout
    from oscar_jax.model.spec import Structure

    layout = Layout(4, 3, 0, 2, Structure(("pos", "len", "fam", "cov"), True, "davidson"))
    pb = layout.phi_blocks
    k = np.array([0, 2, 1])
    idx = np.asarray(local_index(layout, np.array([0, 1, 3]), np.array([2, 0, 1]), k))
    assert idx.shape == (3, len(layout.local_slots))
    for col, name in enumerate(layout.local_slots[2:], start=2):
        block, j = ("cov", int(name[3:])) if name.startswith("cov") else (name, 0)
        width = layout.n_cov if block == "cov" else 1
        np.testing.assert_array_equal(idx[:, col], pb[block].start + k * width + j)
    np.testing.assert_array_equal(idx[:, :2], [[0, 2], [1, 0], [3, 1]])
    assert layout.bias_columns == (("pos", 0, None), ("len", 0, 0), ("fam", 0, 1), ("cov", 0, 2), ("cov", 1, 3))
    np.testing.assert_array_equal(np.flatnonzero(layout.v_mask), np.arange(3, 5))
