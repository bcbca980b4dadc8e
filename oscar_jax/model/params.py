"""Parametrization (Appendix B.1): free coordinates θ, the expanded vector φ, Helmert basis.

θ = (u, v, b): s = C u with C the normalized Helmert contrasts (CᵀC = I, Cᵀ1 = 0);
v_k = log γ_k for the non-reference judges; b the per-judge bias (and Davidson tie)
coefficients. The model core works on an *expanded* vector φ = J θ that holds every
candidate score and every per-judge coefficient in its own slot (γ_ref's log fixed at
0), so each record touches only a handful of φ slots: (s_a, s_b, v_k, β_·,k …). That
locality is what makes exact Hessians cheap: a per-record Hessian of a few entries,
scattered into φ space, then mapped once to θ by the constant linear map J.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from .spec import Structure

__all__ = ["helmert", "Layout", "Params"]

_TERM_COVARIATE = {"pos": None, "len": 0, "fam": 1}  # column of z = (L, F, X…) per term; None: 1


def helmert(m: int) -> np.ndarray:
    """Normalized Helmert contrasts C (m × (m−1)), Appendix B.1.

    C_ij = 1/√(j(j+1)) for i ≤ j, −j/√(j(j+1)) for i = j+1, 0 below (1-based j).
    """
    c = np.zeros((m, max(m - 1, 0)))
    for j in range(1, m):
        norm = np.sqrt(j * (j + 1.0))
        c[:j, j - 1] = 1.0 / norm
        c[j, j - 1] = -j / norm
    return c


class Params(NamedTuple):
    """Natural-scale parameters (zeros where a term is absent or a column was dropped).

    Shapes: s (C,), gamma (K,), beta_pos/beta_len/beta_fam/tau (K,), beta_cov (K, U).
    """

    s: np.ndarray
    gamma: np.ndarray
    beta_pos: np.ndarray
    beta_len: np.ndarray
    beta_fam: np.ndarray
    beta_cov: np.ndarray
    tau: np.ndarray


@dataclass(frozen=True)
class Layout:
    """Static sizes and block offsets of θ and φ for one structure and design size.

    Hashable, so it can be a static argument of jitted functions.
    """

    n_cand: int
    n_judge: int
    ref: int
    n_cov: int
    structure: Structure

    # ---- block tables -------------------------------------------------------------
    @cached_property
    def bias_terms(self) -> tuple[str, ...]:
        """Per-judge coefficient blocks in θ/φ order: bias terms, then Davidson τ."""
        terms = tuple(t for t in self.structure.terms if t != "cov" or self.n_cov > 0)
        return terms + (("tau",) if self.structure.davidson else ())

    def _block_width(self, term: str) -> int:
        return self.n_judge * (self.n_cov if term == "cov" else 1)

    def _blocks(self, scores: tuple[str, int], gamma_width: int) -> dict[str, slice]:
        """Consecutive slices: the scores, log γ when it is learned, then each bias term."""
        widths = [scores, *([("v", gamma_width)] if self.structure.learn_gamma else []),
                  *((t, self._block_width(t)) for t in self.bias_terms)]
        out, pos = {}, 0
        for name, width in widths:
            out[name] = slice(pos, pos + width)
            pos += width
        return out

    @cached_property
    def theta_blocks(self) -> dict[str, slice]:
        """θ: C − 1 Helmert contrasts ``u``, K − 1 free log γ ``v`` (the reference's is 0), the biases."""
        return self._blocks(("u", self.n_cand - 1), self.n_judge - 1)

    @cached_property
    def phi_blocks(self) -> dict[str, slice]:
        """φ = Jθ: C scores ``s``, K log γ ``v``, the biases."""
        return self._blocks(("s", self.n_cand), self.n_judge)

    @property
    def n_theta(self) -> int:
        return max(s.stop for s in self.theta_blocks.values())

    @property
    def n_phi(self) -> int:
        return max(s.stop for s in self.phi_blocks.values())

    @cached_property
    def _judge_slot_columns(self) -> tuple[tuple[str, str, int, int], ...]:
        """(slot name, φ block, stride, offset) of each per-judge local slot, in slot order.

        Judge k's slot sits at φ index ``phi_blocks[block].start + k·stride + offset``.
        The one definition of the slot order: ``local_slots`` and ``judge_slots`` read it.
        """
        cols = [("v", "v", 1, 0)] if self.structure.learn_gamma else []
        for t in self.bias_terms:
            if t == "cov":
                cols += [(f"cov{j}", "cov", self.n_cov, j) for j in range(self.n_cov)]
            else:
                cols.append((t, t, 1, 0))
        return tuple(cols)

    @cached_property
    def local_slots(self) -> tuple[str, ...]:
        """Names of the φ slots one record touches, in the order the model core reads them."""
        return ("s_a", "s_b") + tuple(name for name, _, _, _ in self._judge_slot_columns)

    @cached_property
    def judge_slots(self) -> np.ndarray:
        """φ index of judge k's j-th per-judge local slot (K, n_local − 2), int32.

        A record (a, b, k) touches φ slots (a, b, *judge_slots[k]) (``model.local_index``).
        """
        ks = np.arange(self.n_judge, dtype=np.int32)
        pb = self.phi_blocks
        cols = [pb[block].start + ks * stride + offset for _, block, stride, offset in self._judge_slot_columns]
        if not cols:
            return np.zeros((self.n_judge, 0), np.int32)
        return np.stack(cols, axis=1).astype(np.int32)

    @cached_property
    def bias_columns(self) -> tuple[tuple[str, int, int | None], ...]:
        """(term, index within term, covariate column of z) of each bias coefficient, in slot order.

        The term → covariate map: z = (L, F, X_1..X_U), position multiplies 1 (column
        None), length z[0], family z[1], covariate j z[2 + j]. Davidson τ is not a bias.
        """
        cols = []
        for t in self.bias_terms:
            if t == "cov":
                cols += [(t, j, 2 + j) for j in range(self.n_cov)]
            elif t != "tau":
                cols.append((t, 0, _TERM_COVARIATE[t]))
        return tuple(cols)

    # ---- maps -----------------------------------------------------------------------
    @cached_property
    def helmert(self) -> np.ndarray:
        return helmert(self.n_cand)

    @cached_property
    def jacobian(self) -> np.ndarray:
        """J = ∂φ/∂θ (n_phi × n_theta), constant because φ is linear in θ."""
        jac = np.zeros((self.n_phi, self.n_theta))
        tb, pb = self.theta_blocks, self.phi_blocks
        jac[pb["s"], tb["u"]] = self.helmert
        if self.structure.learn_gamma:
            free = [k for k in range(self.n_judge) if k != self.ref]
            rows = pb["v"].start + np.asarray(free, dtype=int)
            cols = tb["v"].start + np.arange(len(free))
            jac[rows, cols] = 1.0
        for t in self.bias_terms:
            width = self._block_width(t)
            jac[pb[t].start + np.arange(width), tb[t].start + np.arange(width)] = 1.0
        return jac

    @cached_property
    def v_mask(self) -> np.ndarray:
        """(n_theta,) bool: the bounded coordinates v_k = log γ_k (none when γ is not learned)."""
        out = np.zeros(self.n_theta, dtype=bool)
        if self.structure.learn_gamma:
            out[self.theta_blocks["v"]] = True
        return out

    def theta_labels(self, candidates, judges, covariates=()) -> list[str]:
        """Human-readable name of each θ coordinate (for diagnostics and JSON)."""
        labels = [f"u[{j}]" for j in range(self.n_cand - 1)]
        if self.structure.learn_gamma:
            labels += [f"log_gamma[{judges[k]}]" for k in range(self.n_judge) if k != self.ref]
        for t in self.bias_terms:
            if t == "cov":
                labels += [f"beta_cov[{judges[k]}, {covariates[j]}]" for k in range(self.n_judge) for j in range(self.n_cov)]
            else:
                name = "tau" if t == "tau" else f"beta_{t}"
                labels += [f"{name}[{judges[k]}]" for k in range(self.n_judge)]
        return labels

    # ---- unpacking --------------------------------------------------------------------
    def unpack(self, theta) -> Params:
        """θ → natural-scale parameters (numpy, float64)."""
        theta = np.asarray(theta, dtype=np.float64)
        phi = self.jacobian @ theta
        pb = self.phi_blocks
        k = self.n_judge
        zeros = np.zeros(k)
        s = phi[pb["s"]]
        gamma = np.exp(phi[pb["v"]]) if self.structure.learn_gamma else np.ones(k)

        def block(name):
            return phi[pb[name]] if name in pb else zeros.copy()

        beta_cov = phi[pb["cov"]].reshape(k, self.n_cov) if "cov" in pb else np.zeros((k, self.n_cov))
        return Params(s=s, gamma=gamma, beta_pos=block("pos"), beta_len=block("len"),
                      beta_fam=block("fam"), beta_cov=beta_cov, tau=block("tau"))
