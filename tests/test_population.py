"""Closed-form population calculations of Section 4.1 and Appendix A.3."""

import numpy as np
import pytest

from oscar_jax.attenuation import balanced_mean, logit_slope_at_zero, population_gamma_no_position

# The paper reports these to three decimals.
PAPER_DIGITS = 5e-4


def test_forty_sixty_example():
    # A.3: γ* = 1, β* = 1, x_j = j/200 (j = 1..200), better response first w.p. 0.4, no intercept.
    x = np.arange(1, 201) / 200.0
    m = balanced_mean(x, beta=1.0, first_prob=0.4)
    assert population_gamma_no_position(x, m) == pytest.approx(0.528, abs=PAPER_DIGITS)


def test_figure_1b_curve():
    # Fig. 1(b): 401 gaps on [−1, 1], balanced order; γᴺ(0) = 1 and γᴺ(4) ≈ 0.077.
    x = np.linspace(-1.0, 1.0, 401)
    assert population_gamma_no_position(x, balanced_mean(x, beta=0.0)) == pytest.approx(1.0, abs=1e-10)
    assert population_gamma_no_position(x, balanced_mean(x, beta=4.0)) == pytest.approx(0.077, abs=PAPER_DIGITS)
    # Lemma A.2: strictly between 0 and γ* for β* ≠ 0, and decreasing in |β*|.
    curve = [population_gamma_no_position(x, balanced_mean(x, beta=b)) for b in (0.5, 1.0, 2.0, 3.0, 4.0)]
    assert all(0 < g < 1 for g in curve)
    assert np.all(np.diff(curve) < 0)


@pytest.mark.parametrize("beta", [-3.0, -0.7, 0.0, 0.4, 1.0, 2.5])
@pytest.mark.parametrize("gamma", [0.3, 1.0, 2.0])
def test_logit_slope_equals_attenuated_sensitivity(beta, gamma):
    # Eq. 5: d logit m / dx at 0 = γ* sech²(β*/2) = γ*(1 − D²); exact derivative, so 1e-10.
    d = np.tanh(beta / 2.0)
    assert logit_slope_at_zero(beta, gamma) == pytest.approx(gamma * (1.0 - d ** 2), abs=1e-10)


def test_near_zero_gaps_approach_one_minus_d_squared():
    # Lemma A.3: as the gaps shrink, γ† → γ*(1 − D²) with an O(δ²) error.
    beta = 1.5
    target = 1.0 - np.tanh(beta / 2) ** 2
    errors = []
    for delta in (0.4, 0.2, 0.1):
        x = delta * np.linspace(-1.0, 1.0, 201)
        errors.append(abs(population_gamma_no_position(x, balanced_mean(x, beta)) - target))
    assert errors[2] < errors[1] < errors[0]
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.05)  # quadratic rate
