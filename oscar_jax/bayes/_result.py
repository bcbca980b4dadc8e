"""BayesResult: the posterior as an ArviZ DataTree, tidy tables and sampling diagnostics.

The tables' score, s and κ are on the point fit's scale (:meth:`BayesResult.population`);
every probability they report comes with its Monte Carlo standard error (``*_mcse``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property

import arviz_stats
import numpy as np
import pandas as pd
import xarray as xr

from ..infer.sandwich import targets_batch_jit
from ..model.design import Design
from ..model.params import Layout
from ..model.spec import ModelSpec
from ..results.boards import score_board
from ..results.checks import Status
from ..results.intervals import CI_KINDS, Draws, draw_interval, draw_ranks, interval_request, mcse_of_mean
from ..results.schema import rank_table, table
from ..runtime.lazy_jax import jax
from ._model import Priors
from ._sampler import NutsSettings

__all__ = ["BayesResult", "BayesWarning"]


class BayesWarning(UserWarning):
    """NUTS finished but a convergence diagnostic (R-hat, ESS, divergences, E-BFMI) is poor."""


def _kept_terms(layout: Layout, mask: np.ndarray) -> dict:
    """term → (K,) bool: whether each judge's coefficient of that term is estimated (B.2)."""
    out = {}
    for term in ("pos", "len", "fam", "cov", "tau"):
        if term not in layout.theta_blocks:
            out[term] = np.zeros(layout.n_judge, bool)
            continue
        m = mask[layout.theta_blocks[term]] > 0
        out[term] = m.reshape(layout.n_judge, -1).any(axis=1) if term == "cov" else m
    return out


@dataclass(frozen=True, eq=False)
class BayesResult:
    """Immutable result of :func:`~oscar_jax.bayes.fit_bayes`.

    Attributes
    ----------
    design, spec, effective_spec, layout
        As for :class:`~oscar_jax.results.fit.FitResult`.
    mask
        (n_theta,) B.2 mask: 1 = sampled, 0 = held at zero.
    priors
        The priors used, every scale resolved.
    settings
        NUTS settings (chains, warm-up, draws, mass matrix, target acceptance).
    prompt_effect
        ``"candidate"`` (prompt × candidate effect), ``"slot"`` (slot shift per prompt) or
        False (none: intervals assume independent records).
    idata
        ArviZ DataTree: ``posterior`` (sampled ``theta`` over the free coordinates,
        ``sigma_prompt``/``z_prompt`` with the prompt effect, and the derived ``s``,
        ``q``, ``q_field``, ``gamma``, ``log_gamma``, ``kappa``, ``gamma_bar``, ``D``,
        ``beta_*``, ``tau``) with coordinates ``candidate``, ``judge``, ``pair``,
        ``parameter``, ``prompt``; ``sample_stats`` (diverging, energy, lp, n_steps,
        tree_depth, acceptance_rate, step_size).
    diagnostics
        :func:`compute_diagnostics` of the run.
    ci_prob, ci_kind
        Level and kind of the tables' intervals unless a table is asked for others:
        ``"eti"`` (equal-tailed, the default) or ``"hdi"`` (highest density).
    """

    design: Design
    spec: ModelSpec
    effective_spec: ModelSpec
    layout: Layout
    mask: np.ndarray
    priors: Priors
    settings: NutsSettings
    prompt_effect: bool | str
    seed: int
    idata: xr.DataTree
    diagnostics: dict
    notes: tuple[str, ...]
    ci_prob: float = 0.95
    timing: dict | None = None
    ci_kind: str = "eti"
    gbar_weights: np.ndarray | None = None  # the point fit's γ̄ judges (FitResult.gbar_weights); None: every judge

    # ------------------------------------------------------------------ draws
    def draws(self, name: str) -> np.ndarray:
        """(chains, draws, …) posterior draws of one variable of ``idata.posterior``.

        A per-judge variable comes back over every judge: entries that are constants
        (γ of the reference judge, coefficients held at 0) are stored in ``constant_data``
        and filled in here. These are the sampled (with a prompt effect, prompt-conditional)
        variables; :meth:`population` gives s, x and κ on the point fit's scale.
        """
        dim = f"judge_{name}"
        post = self.idata.posterior
        if name in post and dim not in post[name].dims:
            return np.asarray(post[name].values)
        fixed = self.idata.constant_data[f"{name}_fixed"]
        index = {j: i for i, j in enumerate(self.design.judges)}
        lead = (post.sizes["chain"], post.sizes["draw"])  # NUTS chains, or SVI's single "chain"
        out = np.empty(lead + (self.design.n_judge,) + fixed.shape[1:])
        if name in post:
            out[:, :, [index[j] for j in post[name][dim].values]] = post[name].values
        out[:, :, [index[j] for j in fixed[f"{dim}_fixed"].values]] = fixed.values
        return out

    def _flat(self, name: str) -> np.ndarray:
        x = self.draws(name)
        return x.reshape((-1,) + x.shape[2:])

    @cached_property
    def _population_targets(self):
        """Targets (s, x, log κ, …) of every :meth:`population_theta` draw, one compiled call."""
        return jax.tree_util.tree_map(np.asarray, targets_batch_jit(self.population_theta(), self.layout, self.gbar_weights))

    def population(self, name: str) -> np.ndarray:
        """(chains, draws, …) draws of ``"s"``, ``"x"`` (average-judge logit γ̄·s) or ``"kappa"`` on the
        point fit's scale: from :meth:`population_theta` with a prompt effect, the sampled ones without."""
        post = self.idata.posterior
        lead = (post.sizes["chain"], post.sizes["draw"])
        if self.prompt_effect:
            t = self._population_targets
            values = {"s": t.s, "x": t.x, "kappa": np.exp(t.log_kappa)}[name]
            return values.reshape(lead + values.shape[1:])
        if name == "x":  # γ̄ per draw over the point fit's γ̄ judges, as in sandwich.targets
            w = np.ones(self.design.n_judge) if self.gbar_weights is None else np.asarray(self.gbar_weights)
            return ((self.draws("gamma") @ w) / w.sum())[..., None] * self.draws("s")
        return self.draws(name)

    # The draw protocol (oscar_jax.results.intervals.Draws): the point estimate is the
    # posterior mean; the draws are on the point fit's scale.
    point_fit = None

    def theta_draws(self) -> Draws:
        """The :meth:`population_theta` draws that are finite, as :class:`~oscar_jax.results.intervals.Draws`."""
        theta = self.population_theta()
        ok = np.all(np.isfinite(theta), axis=1)
        t = (self._population_targets if self.prompt_effect
             else jax.tree_util.tree_map(np.asarray, targets_batch_jit(theta, self.layout, self.gbar_weights)))
        return Draws(theta=theta[ok], targets=jax.tree_util.tree_map(lambda a: a[ok], t), kind=self.ci_kind,
                     source="bayes", n_failed=int((~ok).sum()))

    def status(self, ci=None) -> Status:
        """Every interval shown (see :mod:`oscar_jax.results.checks`)."""
        return Status.shown(self.design.n_cand, self.design.n_judge)

    @property
    def independent_draws(self) -> bool:
        """SVI's draws are independent samples of its approximation; NUTS's are Markov chains."""
        return self.diagnostics.get("method") == "svi"

    def _mcse(self, draws: np.ndarray) -> np.ndarray:
        """Monte Carlo SE of the mean of (chains, draws, …) draws."""
        return mcse_of_mean(draws, independent=self.independent_draws)

    def interval_request(self, ci=None, ci_prob: float | None = None) -> tuple[str, float]:
        """(kind, level) a table uses: ``ci`` names ``"eti"`` (equal-tailed) or ``"hdi"``
        (highest density), default the result's ``ci_kind``; ``ci_prob`` (or a number given
        as ``ci``) the level, default the result's."""
        kinds = (self.ci_kind,) + tuple(k for k in CI_KINDS if k != self.ci_kind)
        return interval_request(ci, ci_prob, kinds=kinds, default_prob=self.ci_prob)

    def interval_level(self, ci=None, ci_prob: float | None = None) -> float:
        """The level a table uses: ``ci_prob`` (or a number given as ``ci``), else the result's."""
        return self.interval_request(ci, ci_prob)[1]

    @staticmethod
    def _interval(x: np.ndarray, request: tuple[str, float]) -> np.ndarray:
        """(…, 2) interval of the kind and level of ``request`` over the (chain, draw) axes."""
        lo, hi = draw_interval(x.reshape((-1,) + x.shape[2:]), request[1], request[0])
        return np.stack([lo, hi], axis=-1)

    @cached_property
    def _kept(self) -> dict:
        return _kept_terms(self.layout, np.asarray(self.mask))

    # ------------------------------------------------------------------ point summaries
    @property
    def scores(self) -> np.ndarray:
        """(C,) posterior mean of s on the point fit's scale (:meth:`population`)."""
        return self.population("s").mean(axis=(0, 1))

    @property
    def gamma(self) -> np.ndarray:
        """(K,) posterior mean of γ_k."""
        return self._flat("gamma").mean(axis=0)

    @property
    def kappa(self) -> np.ndarray:
        """(K,) posterior mean of κ_k = γ_k RMS(s), s on the point fit's scale."""
        return self.population("kappa").mean(axis=(0, 1))

    @property
    def D(self) -> np.ndarray:
        """(K,) posterior mean of D_k = tanh(β_pos,k/2) (0 where position is not estimated)."""
        return self._flat("D").mean(axis=0) if "D" in self.idata.posterior else np.zeros(self.design.n_judge)

    @property
    def win_prob(self) -> np.ndarray:
        """(C, C) posterior mean of q_ij (prompt-averaged under the prompt effect)."""
        c = self.design.n_cand
        q = np.full((c, c), 0.5)
        iu = np.triu_indices(c, 1)
        mean = self._flat("q").mean(axis=0)
        q[iu] = mean
        q[(iu[1], iu[0])] = 1.0 - mean
        return q

    @cached_property
    def _ranks(self) -> np.ndarray:
        """(n_draws, C) rank of each candidate by the sampled s in each draw (1 = best)."""
        return draw_ranks(self._flat("s"))

    @property
    def p_best(self) -> pd.Series:
        """P(candidate i has the highest s) for every candidate."""
        return pd.Series((self._ranks == 1).mean(axis=0), index=list(self.design.candidates), name="p_best")

    def rank_distribution(self) -> pd.DataFrame:
        """Posterior P(rank = r) with Monte Carlo SEs and the expected rank, best first.

        Columns as :meth:`BootstrapResult.rank_distribution`; ranks order the sampled s of
        each draw, and each probability's ``_mcse`` is sd/√ESS over the chains.
        """
        post = self.idata.posterior
        return rank_table(self.design.candidates, self._ranks, self.population("x").mean(axis=(0, 1)),
                          independent=self.independent_draws, shape=(post.sizes["chain"], post.sizes["draw"]))

    # ------------------------------------------------------------------ tables
    def leaderboard(self, ci: str | float | None = None, *, ci_prob: float | None = None, scale: str = "logit",
                    anchor=None) -> pd.DataFrame:
        """Candidates by posterior mean score, with intervals, q against the field and P(best).

        ``score`` is the average-judge logit x = γ̄·s on the point fit's scale (posterior
        mean, sd and interval), as in :meth:`FitResult.leaderboard`, or on ``scale``
        relative to ``anchor`` (:mod:`oscar_jax.results.boards`); s is ``s``, ``s_sd``,
        ``s_lo``, ``s_hi``. ``p_best`` (with its Monte Carlo SE) ranks the sampled s.
        """
        req = self.interval_request(ci, ci_prob)
        board = score_board(self, ci_prob=req[1], scale=scale, anchor=anchor, kind=req[0])
        s, qf = self.population("s"), self.draws("q_field")
        s_ci, q_ci = self._interval(s, req), self._interval(qf, req)
        post = self.idata.posterior
        first = (self._ranks == 1).reshape(post.sizes["chain"], post.sizes["draw"], -1).astype(float)
        frame = table("candidates", {
            **{c: board[c].to_numpy() for c in board.columns},
            "s": s.mean(axis=(0, 1)), "s_sd": s.std(axis=(0, 1)), "s_lo": s_ci[:, 0], "s_hi": s_ci[:, 1],
            "q_field": qf.mean(axis=(0, 1)), "q_field_lo": q_ci[:, 0], "q_field_hi": q_ci[:, 1],
            "p_best": self.p_best.to_numpy(), "p_best_mcse": self._mcse(first),
            "expected_rank": self._ranks.mean(axis=0),
            "votes": [self.design.counts.get("candidate_votes", {}).get(c, 0) for c in self.design.candidates],
            "interval": [x or "ok" for x in self.status().candidates]}, sort=True)
        frame.attrs = board.attrs
        return frame

    def judges(self, ci: str | float | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """Per judge: γ, κ, D with posterior sd and interval; β_len, β_fam (and τ) means; kept columns."""
        req = self.interval_request(ci, ci_prob)
        k = self.design.n_judge
        ref = self.design.reference
        gamma, kappa = self.draws("gamma"), self.population("kappa")
        g_ci, k_ci = self._interval(gamma, req), self._interval(kappa, req)
        g_ci[ref] = 1.0  # γ_ref ≡ 1 by definition
        kept = self._kept
        rows = {
            "judge": list(self.design.judges),
            "n": [self.design.counts.get("judge_records", {}).get(j, 0) for j in self.design.judges],
            "reference": [i == ref for i in range(k)],
            "gamma": gamma.mean(axis=(0, 1)), "gamma_lo": g_ci[:, 0], "gamma_hi": g_ci[:, 1],
            "kappa": kappa.mean(axis=(0, 1)), "kappa_sd": kappa.std(axis=(0, 1)),
            "kappa_lo": k_ci[:, 0], "kappa_hi": k_ci[:, 1],
        }
        nan = np.full(k, np.nan)
        if "D" in self.idata.posterior:
            d = self.draws("D")
            d_ci = self._interval(d, req)
            keep = kept["pos"]
            rows.update({"beta_pos": np.where(keep, self.draws("beta_pos").mean(axis=(0, 1)), np.nan),
                         "D": np.where(keep, d.mean(axis=(0, 1)), np.nan),
                         "D_sd": np.where(keep, d.std(axis=(0, 1)), np.nan),
                         "D_lo": np.where(keep, d_ci[:, 0], np.nan),
                         "D_hi": np.where(keep, d_ci[:, 1], np.nan)})
        else:
            rows.update({"beta_pos": nan, "D": nan, "D_sd": nan, "D_lo": nan, "D_hi": nan})
        for term in ("len", "fam"):
            name = f"beta_{term}"
            rows[name] = (np.where(kept[term], self.draws(name).mean(axis=(0, 1)), np.nan)
                          if name in self.idata.posterior else nan)
        if "tau" in self.idata.posterior:
            rows["tau"] = np.where(kept["tau"], self.draws("tau").mean(axis=(0, 1)), np.nan)
        rows["columns"] = [",".join(t for t in ("pos", "len", "fam", "cov") if kept[t][i]) or "-" for i in range(k)]
        return table("judges", rows)

    def win_matrix(self, ci: str | float | None = None, *, ci_prob: float | None = None) -> pd.DataFrame:
        """q_ij for every ordered pair: posterior mean, sd, interval, P(s_a > s_b), each mean with its Monte Carlo SE."""
        req = self.interval_request(ci, ci_prob)
        c = self.design.n_cand
        names = self.design.candidates
        q = self.draws("q")                       # (chains, draws, pairs i<j)
        s = self.draws("s")
        iu = np.triu_indices(c, 1)
        band = self._interval(q, req)
        better = (s[..., iu[0]] > s[..., iu[1]]).astype(float)
        mean, sd, q_se = q.mean(axis=(0, 1)), q.std(axis=(0, 1)), self._mcse(q)
        p_better, p_se = better.mean(axis=(0, 1)), self._mcse(better)
        rows = []
        for p, (i, j) in enumerate(zip(*iu)):
            rows.append({"a": names[i], "b": names[j], "q": mean[p], "q_sd": sd[p], "q_mcse": q_se[p],
                         "q_lo": band[p, 0], "q_hi": band[p, 1], "p_a_better": p_better[p],
                         "p_a_better_mcse": p_se[p]})
            rows.append({"a": names[j], "b": names[i], "q": 1.0 - mean[p], "q_sd": sd[p], "q_mcse": q_se[p],
                         "q_lo": 1.0 - band[p, 1], "q_hi": 1.0 - band[p, 0], "p_a_better": 1.0 - p_better[p],
                         "p_a_better_mcse": p_se[p]})
        return table("pairs", {k: [r[k] for r in rows] for k in rows[0]} if rows else {})

    def judge_comparisons(self, long: bool = True) -> pd.DataFrame:
        """P(κ_a > κ_b), with its Monte Carlo SE, for every ordered pair of judges.

        κ_a/κ_b = γ_a/γ_b (the RMS(s) factor is common), so this is also P(γ_a > γ_b).
        """
        kappa = self.draws("kappa")
        greater = (kappa[..., :, None] > kappa[..., None, :]).astype(float)
        p = greater.mean(axis=(0, 1))
        names = list(self.design.judges)
        if not long:
            frame = pd.DataFrame(p, index=names, columns=names)
            frame.index.name = "judge"
            return frame
        i, j = np.where(~np.eye(len(names), dtype=bool))
        return table("judge_pairs", {"judge_a": [names[x] for x in i], "judge_b": [names[x] for x in j],
                                     "p_kappa_greater": p[i, j], "p_kappa_greater_mcse": self._mcse(greater)[i, j]})

    def summary(self, ci_prob: float | None = None, scale: str = "logit", anchor=None):
        """The tables ``oscar bayes`` prints; ``print(post.summary())`` shows them."""
        from ..report.text import Summary, bayes_report

        return Summary(bayes_report(self, self.interval_request(ci_prob=ci_prob)[1], scale, anchor))

    def posterior_summary(self, var_names=None, ci_prob: float | None = None) -> pd.DataFrame:
        """``arviz_stats.summary`` (mean, sd, interval, ESS, R-hat, MCSE) of ``theta`` (and σ_u),
        ``s``, ``q``, ``q_field``, ``kappa`` by default (no constants: their R-hat is undefined)."""
        prob = self.interval_request(ci_prob=ci_prob)[1]
        if var_names is None:
            var_names = [n for n in ("theta", "sigma_prompt", "s", "q", "q_field", "kappa") if n in self.idata.posterior]
        return arviz_stats.summary(self.idata, var_names=list(var_names), ci_prob=prob, ci_kind=self.ci_kind,
                                     round_to="none")

    def population_theta(self) -> np.ndarray:
        """(draws, n_theta) θ draws on the prompt-averaged scale, for draw-based point-fit tables.

        Without a prompt effect these are the sampled θ (zeros at fixed coordinates). With
        one, the sampled scores are prompt-conditional (larger than the point fit's); each
        draw's scores are replaced by those whose logit differences best reproduce its
        prompt-averaged q: γ̄ s_i = mean_j logit q_ij (least squares over all pairs; exact
        when σ_u = 0), so ``oscar fit --ci bayes`` puts intervals around the point fit's
        estimates on the same scale. q against the field and P(best) from the posterior's
        own tables (``leaderboard``) need no such step.
        """
        th = self._flat("theta")
        full = np.zeros((th.shape[0], self.layout.n_theta))
        full[:, np.asarray(self.mask) > 0] = th
        if not self.prompt_effect:
            return full
        c = self.design.n_cand
        q = np.full((th.shape[0], c, c), 0.5)
        iu = np.triu_indices(c, 1)
        qu = np.clip(self._flat("q"), 1e-300, 1.0 - 1e-16)
        q[:, iu[0], iu[1]] = qu
        q[:, iu[1], iu[0]] = 1.0 - qu
        x = np.log(q) - np.log1p(-q)                    # logit q_ij, antisymmetric, 0 on the diagonal
        m = x.sum(axis=2) / c                           # least-squares zero-sum scores on the logit scale
        s = m / self._flat("gamma_bar")[:, None]
        full[:, self.layout.theta_blocks["u"]] = s @ self.layout.helmert  # u = Cᵀ s (CᵀC = I, Σ s = 0)
        return full

    def sigma_prompt(self, ci_prob: float | None = None) -> dict | None:
        """Posterior mean, sd and interval of σ_u (None without the prompt effect)."""
        if not self.prompt_effect:
            return None
        x = self.draws("sigma_prompt")
        lo, hi = self._interval(x[..., None], self.interval_request(ci_prob=ci_prob))[0]
        return {"mean": float(x.mean()), "sd": float(x.std()), "lo": float(lo), "hi": float(hi)}

    def estimand(self) -> dict:
        """Which model and sampler produced the numbers; how its probabilities and their Monte Carlo SEs read."""
        from ._io import estimand

        return estimand(self)

    def to_dict(self, ci: str | float | None = None, *, ci_prob: float | None = None, scale: str = "logit",
                anchor=None) -> dict:
        """JSON-ready summary (:func:`oscar_jax.bayes.bayes_payload`): ``estimand`` (which model and
        sampler produced the numbers), ``scale``, ``candidates``, ``judges``, ``win_prob``,
        ``rank_distribution``, ``judge_comparisons``, the sampler's ``checks``."""
        from ._io import bayes_payload

        return bayes_payload(self, ci, ci_prob=ci_prob, scale=scale, anchor=anchor)

    def warn_if_poor(self, stacklevel: int = 2) -> None:
        """Issue a :class:`BayesWarning` for every failed convergence diagnostic."""
        for message in self.diagnostics["messages"]:
            warnings.warn(f"{self.effective_spec.name} posterior: {message}", BayesWarning, stacklevel=stacklevel + 1)

    def save(self, out_dir, ci_prob: float | None = None, plots: bool = True) -> list:
        """Write the DataTree, summary CSVs, result.json and (optionally) PNG plots under ``out_dir``."""
        from ._io import save_result

        return save_result(self, out_dir, ci_prob=self.interval_level(ci_prob=ci_prob), plots=plots)
