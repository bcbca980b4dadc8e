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

    @cached_property
    def theta_blocks(self) -> dict[str, slice]:
        out, pos = {}, 0
        widths = [("u", self.n_cand - 1)]
        if self.structure.learn_gamma:
            widths.append(("v", self.n_judge - 1))
        widths += [(t, self._block_width(t)) for t in self.bias_terms]
        for name, width in widths:
            out[name] = slice(pos, pos + width)
            pos += width
        return out

    @cached_property
    def phi_blocks(self) -> dict[str, slice]:
        out, pos = {}, 0
        widths = [("s", self.n_cand)]
        if self.structure.learn_gamma:
            widths.append(("v", self.n_judge))
        widths += [(t, self._block_width(t)) for t in self.bias_terms]
        for name, width in widths:
            out[name] = slice(pos, pos + width)
            pos += width
        return out

    @property
    def n_theta(self) -> int:
        return max(s.stop for s in self.theta_blocks.values())

    @property
    def n_phi(self) -> int:
        return max(s.stop for s in self.phi_blocks.values())

    @cached_property
    def local_slots(self) -> tuple[str, ...]:
        """Names of the φ slots one record touches, in the order the model core reads them."""
        slots = ["s_a", "s_b"]
        if self.structure.learn_gamma:
            slots.append("v")
        for t in self.bias_terms:
            if t == "cov":
                slots += [f"cov{j}" for j in range(self.n_cov)]
            else:
                slots.append(t)
        return tuple(slots)

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

    def local_index(self, a: np.ndarray, b: np.ndarray, k: np.ndarray) -> np.ndarray:
        """φ indices (N × n_local) of the slots each record (a, b, k) touches."""
        pb = self.phi_blocks
        cols = [a, b]
        if self.structure.learn_gamma:
            cols.append(pb["v"].start + k)
        for t in self.bias_terms:
            if t == "cov":
                cols += [pb["cov"].start + k * self.n_cov + j for j in range(self.n_cov)]
            else:
                cols.append(pb[t].start + k)
        return np.stack([np.asarray(c, dtype=np.int32) for c in cols], axis=1)

    def bounds(self, v_bound: float) -> tuple[np.ndarray, np.ndarray]:
        """Box constraints on θ: |v_k| ≤ v_bound, everything else free."""
        lo = np.full(self.n_theta, -np.inf)
        hi = np.full(self.n_theta, np.inf)
        if self.structure.learn_gamma:
            lo[self.theta_blocks["v"]] = -v_bound
            hi[self.theta_blocks["v"]] = v_bound
        return lo, hi

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

    def bias_mask_slices(self) -> dict[str, slice]:
        """θ slices of per-judge coefficients subject to B.2 column selection."""
        return {t: self.theta_blocks[t] for t in self.bias_terms}
