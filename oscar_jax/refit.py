"""Held-out evaluation, the paired refit bootstrap and fixed-score refits (Sections 6.2–6.3).

* :func:`compare` — grouped K-fold held-out log loss (Appendix E.2): prompt clusters are
  dealt into folds once, every model is trained on the same folds (ω = 1 on training
  clusters, 0 on test clusters, one vmapped batch per model) and scored on the test
  clusters' cell statistics with the full η (bias terms kept) through
  :func:`~oscar_jax.derivatives.cell_probabilities`; predictions are clipped to
  [1e-15, 1 − 1e-15] and the out-of-fold losses are pooled. ``paired_bootstrap=R`` adds
  the Appendix E.3 paired refit bootstrap: prompts are resampled within each fixed fold,
  every model is refitted on the same resampled training folds and evaluated on the same
  resampled test folds — all R × F refits of one model in one vmapped batch.
* :func:`fixed_score_refit` — Equation (11): with scores (and a position effect) held
  fixed, refit each judge's γ ≥ 0 with and without the position term, and put
  γᴺ/γᴾ next to 1 − D² (Appendix D.3); :func:`attenuation_refit` runs the whole
  calibrate-on-one-split, refit-on-another protocol with an optional paired bootstrap.

The length scale s_L (and every other covariate) is that of the design, i.e. computed
once on the full data and shared by all folds and replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from . import _x64  # noqa: F401
from .derivatives import cell_probabilities
from .design import Design, DesignArrays, cell_stats_from_cluster_weights
from .links import net_preference
from .fit import as_design
from .intervals import percentiles
from .jsonable import records
from .model import local_loss
from .params import Layout
from .program_cache import persistent_jit
from .resample import (auto_chunk_size, fit_batch, fold_masks, prompt_folds,
                       within_fold_weights)
from .spec import ModelSpec, Structure, parse_model
from .validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = [
    "AttenuationResult",
    "CompareResult",
    "DEFAULT_MODELS",
    "E2_PAIRS",
    "FixedScoreRefit",
    "LOSS_CLIP",
    "attenuation_refit",
    "compare",
    "fixed_score_refit",
    "heldout_loss_sums",
]

LOSS_CLIP = 1e-15  # E.2: predictions clipped to [1e-15, 1 − 1e-15]
DEFAULT_MODELS = ("j", "j+p", "j+l", "j+f", "bt+plf", "davidson+plf", "oscar")  # Table 1 columns
E2_PAIRS = (("j", "j+p"), ("j+p", "oscar"), ("bt+plf", "oscar"))  # Table E2 contrasts


# --------------------------------------------------------------------------- held-out loss
def heldout_loss_sums(theta, omega_test, arrays: DesignArrays, *, layout: Layout, n_cells: int):
    """Summed clipped log loss and total weight of the test clusters, per fit.

    Parameters
    ----------
    theta : (B, P) fitted parameters.
    omega_test : (B, G) test-cluster weights (0/1 fold mask, or resampled counts).

    Returns
    -------
    (loss, weight), each (B,): Σ_t ω_{g(t)} {−Y log p̂ − (1 − Y) log(1 − p̂)} and Σ_t ω_{g(t)},
    with p̂ the tie-adjusted slot-A probability of the full η (E.2), clipped.
    """
    def one(th, om):
        stats = cell_stats_from_cluster_weights(arrays, om, n_cells)
        p = jnp.clip(cell_probabilities(th, arrays, layout), LOSS_CLIP, 1.0 - LOSS_CLIP)
        w, wy = stats[:, 0], stats[:, 1]
        # Cell sums: Σ_t Y_t = wy and Σ_t (1 − Y_t) = w − wy, so a tie (Y = ½) counts half each way.
        return jnp.sum(-(wy * jnp.log(p) + (w - wy) * jnp.log1p(-p))), jnp.sum(w)

    return jax.vmap(one)(theta, omega_test)


_heldout_jit = persistent_jit(heldout_loss_sums, static_argnames=("layout", "n_cells"))


def _not_estimable(spec: ModelSpec, eff: ModelSpec) -> bool:
    """A model none of whose bias terms the data support (e.g. J+L without lengths)."""
    return bool(spec.terms) and not eff.terms


@dataclass(frozen=True, eq=False)
class CompareResult:
    """Held-out comparison of models on identical prompt-cluster folds (Table 1, Table E2).

    Attributes
    ----------
    models
        Display names in the requested order (``"J"``, ``"J+P"``, …, ``"OSCAR"``).
    log_loss
        {name: pooled out-of-fold mean log loss}; NaN for a model that is not estimable
        on these data (``estimable[name]`` False, reason in ``notes[name]``).
    fold_log_loss
        {name: (F,) mean log loss of each test fold}.
    fitted
        {name: name of the model actually fitted} (terms the data cannot support dropped).
    failed
        {name: number of fold fits that failed a B.3 point-estimate check}.
    fold_of_cluster
        (G,) fold id of every prompt cluster (identical for every model).
    differences
        Paired refit bootstrap (E.3) table: a, b, estimate = LL(a) − LL(b) on the original
        folds (positive favours b), lo, hi percentiles, replicates, valid; or None.
    """

    models: tuple[str, ...]
    tokens: tuple[str, ...]
    log_loss: dict
    fold_log_loss: dict
    fitted: dict
    estimable: dict
    failed: dict
    notes: dict
    folds: int
    seed: int
    fold_of_cluster: np.ndarray
    n_records: int
    n_prompts: int
    paired_bootstrap: int = 0
    bootstrap_seed: int | None = None
    ci_prob: float = 0.95
    differences: pd.DataFrame | None = None
    bootstrap_failed: dict = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per model: log loss, the model actually fitted, status and notes."""
        rows = []
        for name in self.models:
            rows.append({
                "model": name,
                "log_loss": self.log_loss[name],
                "fitted": self.fitted[name] if self.estimable[name] else None,
                "status": "ok" if self.estimable[name] and not self.failed[name]
                else ("not estimable" if not self.estimable[name] else f"{self.failed[name]} fold fit(s) failed B.3"),
                "notes": "; ".join(self.notes[name]),
            })
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        out = {
            "folds": self.folds,
            "seed": self.seed,
            "n_records": self.n_records,
            "n_prompts": self.n_prompts,
            "metric": "pooled out-of-fold mean log loss, predictions clipped to [1e-15, 1-1e-15]",
            "log_loss": {m: (None if not math.isfinite(v) else float(v)) for m, v in self.log_loss.items()},
            "models": [
                {"model": m, "token": t, "fitted": self.fitted[m] if self.estimable[m] else None,
                 "estimable": self.estimable[m], "log_loss": None if not math.isfinite(self.log_loss[m]) else self.log_loss[m],
                 "fold_log_loss": [None if not math.isfinite(x) else float(x) for x in self.fold_log_loss[m]],
                 "failed_fold_fits": self.failed[m], "notes": list(self.notes[m])}
                for m, t in zip(self.models, self.tokens)
            ],
            "fold_sizes": np.bincount(self.fold_of_cluster, minlength=self.folds).tolist(),
        }
        if self.differences is not None:
            out["paired_bootstrap"] = self.paired_bootstrap
            out["bootstrap_seed"] = self.bootstrap_seed
            out["ci_prob"] = self.ci_prob
            out["differences"] = records(self.differences)
            out["bootstrap_failed"] = dict(self.bootstrap_failed)
        return out


def _parse_pairs(pairs, by_token: dict, names: list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        if isinstance(pair, str):
            parts = pair.split(":")
            if len(parts) != 2:
                raise OscarInputError(f"pair {pair!r} must be written A:B (e.g. 'j:j+p'); positive differences favour B")
            pair = tuple(parts)
        if len(pair) != 2:
            raise OscarInputError(f"pair {pair!r} must name exactly two models")
        resolved = []
        for m in pair:
            name = parse_model(m).name if not isinstance(m, str) or m.strip().lower() not in by_token else by_token[m.strip().lower()]
            if name not in names:
                raise OscarInputError(f"pair model {m!r} is not among the compared models {names}; add it to models=")
            resolved.append(name)
        if resolved[0] == resolved[1]:
            raise OscarInputError(f"pair {pair!r} compares a model with itself")
        out.append(tuple(resolved))
    return out


def compare(data, models=DEFAULT_MODELS, *, folds: int = 3, seed: int = 0, paired_bootstrap: int = 0,
            pairs=None, bootstrap_seed: int | None = None, ci_prob: float = 0.95, chunk_size: int | None = None,
            max_iter: int = 100, reference_judge: str | None = None, family_map=None, covariates=(),
            schema: str | None = None, bothbad: str = "tie", show_progress: bool | None = None) -> CompareResult:
    """Held-out log loss of several models on identical prompt-cluster folds (E.2, E.3).

    Parameters
    ----------
    data
        Design, path, DataFrame or records. The design is built once, so the length scale
        s_L and the family contrasts are full-data quantities shared by every fold.
    models
        Model strings or ModelSpecs (default: the seven columns of Table 1).
    folds, seed
        Number of folds and the seed of the cluster partition (:func:`prompt_folds`).
    paired_bootstrap
        R > 0 adds the E.3 paired refit bootstrap with R replicates (200 in the paper).
    pairs
        Contrasts for the bootstrap, as ``[("j", "j+p"), ...]`` or ``["j:j+p", ...]``;
        the difference is LL(a) − LL(b), positive favouring b. Default: the Table E2
        contrasts present among ``models`` (else consecutive models).
    bootstrap_seed
        Seed of the within-fold resampling (default: ``seed``).

    Returns
    -------
    CompareResult
        ``.log_loss`` {model: value}, ``.table()``, ``.differences``, ``.to_dict()``.

    Notes
    -----
    Fold fits use the single fit's starts (zero and N(0, 0.08²)); bootstrap refits are
    warm-started at their fold's fit. A model all of whose bias terms are unsupported by
    the data (J+L without lengths) is reported as not estimable, never as a copy of J;
    a model that merely loses a term (OSCAR without lengths) is fitted without it and the
    dropped term is noted.
    """
    folds = check_positive_int("folds", folds, minimum=2)
    paired_bootstrap = check_positive_int("paired_bootstrap", paired_bootstrap, minimum=0)
    ci_prob = check_ci_prob(ci_prob)
    max_iter = check_positive_int("max_iter", max_iter)
    if isinstance(models, str):
        models = [m for m in models.split(",") if m.strip()]
    models = list(models)
    if not models:
        raise OscarInputError("models is empty; pass e.g. models=['j', 'j+p', 'oscar']")
    design = as_design(data, schema=schema, reference_judge=reference_judge, family_map=family_map,
                       covariates=covariates, bothbad=bothbad)
    specs, tokens = [], []
    for m in models:
        spec = parse_model(m)
        if spec.name in [s.name for s in specs]:
            raise OscarInputError(f"model {m!r} ({spec.name}) is listed twice")
        specs.append(spec)
        tokens.append(m if isinstance(m, str) else spec.name)
    names = [s.name for s in specs]
    by_token = {t.strip().lower(): n for t, n in zip(tokens, names) if isinstance(t, str)}

    fold_ids = prompt_folds(design, folds, seed)
    train, test = fold_masks(fold_ids)

    effs = {}
    for spec in specs:
        eff, notes = design.effective_spec(spec)
        effs[spec.name] = (eff, list(notes))
    estimable = {n: not _not_estimable(s, effs[n][0]) for n, s in zip(names, specs)}

    pair_list: list[tuple[str, str]] = []
    if paired_bootstrap:
        if pairs is None:
            pair_list = [(parse_model(a).name, parse_model(b).name) for a, b in E2_PAIRS
                         if parse_model(a).name in names and parse_model(b).name in names]
            if not pair_list:
                pair_list = list(zip(names[:-1], names[1:]))
        else:
            pair_list = _parse_pairs(pairs, by_token, names)
        if not pair_list:
            raise OscarInputError("the paired bootstrap needs at least two models to contrast")
    boot_models = {m for pair in pair_list for m in pair if estimable[m]}

    # One chunk size for the whole comparison: fold fits (2 starts × F rows) and bootstrap
    # refits (R × F rows, 1 warm start each) then share one compiled batch per model.
    rows_needed = max(2 * folds, paired_bootstrap * folds if boot_models else 0)

    def chunk_for(layout):
        if chunk_size is not None:  # as given (short batches are padded): one compile per model
            return check_positive_int("chunk_size", chunk_size)
        return min(auto_chunk_size(design, layout), rows_needed)

    log_loss, fold_ll, fitted, failed, fold_fits = {}, {}, {}, {}, {}
    notes_out = {}
    for name, spec in zip(names, specs):
        eff, notes = effs[name]
        fitted[name] = eff.with_terms(eff.terms).name  # e.g. OSCAR without lengths → "J+P+F"
        if not estimable[name]:
            dropped = [t for t in spec.terms if t not in eff.terms]
            notes.append(f"not estimable on these data: its only term(s) {dropped} are unavailable, "
                         f"so it would be a copy of {eff.with_terms(()).name}")
            log_loss[name], fold_ll[name], failed[name] = float("nan"), np.full(folds, np.nan), 0
            notes_out[name] = tuple(notes)
            continue
        layout = design.layout(eff)
        batch = fit_batch(design, eff, train, chunk_size=chunk_for(layout), max_iter=max_iter,
                          show_progress=show_progress, desc=f"{eff.name} folds")
        loss, weight = (np.asarray(x) for x in _heldout_jit(np.asarray(batch.theta), test, design.arrays,
                                                            layout=layout, n_cells=design.n_cells))
        failed[name] = batch.n_failed
        if batch.n_failed:
            notes.append(batch.failure_summary())
        log_loss[name] = float(loss.sum() / weight.sum())
        fold_ll[name] = loss / weight
        fold_fits[name] = batch
        notes_out[name] = tuple(notes)

    differences = None
    boot_failed: dict = {}
    b_seed = seed if bootstrap_seed is None else int(bootstrap_seed)
    if paired_bootstrap:
        omega = np.asarray(within_fold_weights(jax.random.fold_in(jax.random.PRNGKey(b_seed), 3), fold_ids,
                                               paired_bootstrap))
        r, f = paired_bootstrap, folds
        train_b = (omega[:, None, :] * train[None]).reshape(r * f, -1)
        test_b = (omega[:, None, :] * test[None]).reshape(r * f, -1)
        boot_ll, boot_ok = {}, {}
        for name in names:
            if name not in boot_models:
                continue
            eff = effs[name][0]
            layout = design.layout(eff)
            starts = np.tile(fold_fits[name].theta, (r, 1))[:, None, :]  # warm start: each fold's own fit
            batch = fit_batch(design, eff, train_b, starts=starts, chunk_size=chunk_for(layout), max_iter=max_iter,
                              show_progress=show_progress, desc=f"{eff.name} paired bootstrap")
            loss, weight = (np.asarray(x).reshape(r, f) for x in
                            _heldout_jit(np.asarray(batch.theta), test_b, design.arrays,
                                         layout=layout, n_cells=design.n_cells))
            boot_ll[name] = loss.sum(axis=1) / weight.sum(axis=1)
            boot_ok[name] = batch.valid.reshape(r, f).all(axis=1)
            boot_failed[name] = int(np.sum(~batch.valid))
        rows = []
        for a, b in pair_list:
            if not (estimable[a] and estimable[b]):
                rows.append({"a": a, "b": b, "estimate": float("nan"), "lo": float("nan"), "hi": float("nan"),
                             "replicates": r, "valid": 0, "excludes_zero": None,
                             "note": "not estimable: " + (a if not estimable[a] else b)})
                continue
            ok = boot_ok[a] & boot_ok[b]
            diff = (boot_ll[a] - boot_ll[b])[ok]
            lo, hi = percentiles(diff[:, None], ci_prob)
            lo, hi = float(lo[0]), float(hi[0])
            rows.append({"a": a, "b": b, "estimate": log_loss[a] - log_loss[b], "lo": lo, "hi": hi,
                         "replicates": r, "valid": int(ok.sum()),
                         "excludes_zero": bool(lo > 0 or hi < 0) if np.isfinite(lo) else None, "note": ""})
        differences = pd.DataFrame(rows)

    return CompareResult(models=tuple(names), tokens=tuple(str(t) for t in tokens), log_loss=log_loss,
                         fold_log_loss=fold_ll, fitted=fitted, estimable=estimable, failed=failed, notes=notes_out,
                         folds=folds, seed=int(seed), fold_of_cluster=fold_ids, n_records=int(design.n_records),
                         n_prompts=int(design.n_clusters), paired_bootstrap=paired_bootstrap,
                         bootstrap_seed=b_seed if paired_bootstrap else None, ci_prob=ci_prob,
                         differences=differences, bootstrap_failed=boot_failed)


# --------------------------------------------------------------------------- fixed-score refits
REFIT_RIDGE = 0.05  # D.3: penalty 0.05 γ² / 2


@lru_cache(maxsize=16)
def _refit_layout(n_cand: int, n_judge: int, with_pos: bool) -> Layout:
    # γ ≡ 1 layouts: with φ_loc = (γ_k s̃_a, γ_k s̃_b[, β_k]) the core's own local_loss gives
    # η = γ_k (s̃_a − s̃_b) [+ β_k] — Equation (11) — without a second definition of η.
    return Layout(n_cand, n_judge, 0, 0, Structure(("pos",) if with_pos else (), False, "fractional"))


def _refit_gamma(arrays: DesignArrays, stats, s_tilde, beta, *, layout: Layout, ridge, max_iter: int):
    """argmin_{γ ≥ 0} Σ_t ℓ_t(γ_k d̃_t [+ β_k]) + (ridge/2)‖γ‖², all K judges at once.

    The objective separates by judge and each f_k is convex in γ_k with curvature
    ≥ ridge > 0 (η is linear in γ), so a per-judge projected Newton step with
    backtracking (Armijo) converges from γ = 1; the constrained minimum of a convex
    1-D function is its unconstrained one clipped at 0. Returns (γ (K,), converged,
    judge weight (K,)).
    """
    n_judge = layout.n_judge
    with_pos = "pos" in layout.structure.terms

    def per_judge(gamma):
        ga = gamma[arrays.k]
        cols = [ga * s_tilde[arrays.a], ga * s_tilde[arrays.b]]
        if with_pos:
            cols.append(beta[arrays.k])
        ploc = jnp.stack(cols, axis=1)
        per_cell = jax.vmap(lambda p, z, s: local_loss(p, z, s, layout))(ploc, arrays.z, stats)
        return jax.ops.segment_sum(per_cell, arrays.k, num_segments=n_judge) + 0.5 * ridge * gamma ** 2

    total = lambda gamma: jnp.sum(per_judge(gamma))  # noqa: E731
    grad = jax.grad(total)

    def grad_diag(gamma):
        # Separable objective: the Hessian is diagonal, so H·1 is its diagonal.
        return jax.jvp(grad, (gamma,), (jnp.ones_like(gamma),))

    weight = jax.ops.segment_sum(stats[:, 0], arrays.k, num_segments=n_judge)
    tol = 1e-10 * jnp.maximum(weight, 1.0)

    def proj(gamma, g):
        return jnp.where((gamma <= 0.0) & (g > 0.0), 0.0, g)

    def outer_cond(state):
        gamma, g, it = state
        return (it < max_iter) & jnp.any(jnp.abs(proj(gamma, g)) > tol)

    def outer_body(state):
        gamma, _, it = state
        g, h = grad_diag(gamma)
        step = -g / jnp.maximum(h, ridge)
        f0 = per_judge(gamma)

        def ls_cond(ls):
            _, done, k = ls
            return ~jnp.all(done) & (k < 60)

        def ls_body(ls):
            t, done, k = ls
            cand = jnp.maximum(gamma + t * step, 0.0)
            f_c = per_judge(cand)
            # Armijo decrease, or no increase beyond rounding (at the optimum both are noise).
            ok = (f_c <= f0 + 1e-4 * g * (cand - gamma)) | (f_c - f0 <= 1e-13 * jnp.maximum(jnp.abs(f0), 1.0))
            done2 = done | ok
            return jnp.where(done2, t, 0.5 * t), done2, k + 1

        t, done, _ = jax.lax.while_loop(ls_cond, ls_body, (jnp.ones_like(gamma), jnp.zeros(n_judge, bool), 0))
        new = jnp.where(done, jnp.maximum(gamma + t * step, 0.0), gamma)
        return new, grad(new), it + 1

    gamma0 = jnp.ones(n_judge)
    gamma, g, _ = jax.lax.while_loop(outer_cond, outer_body, (gamma0, grad(gamma0), 0))
    converged = jnp.all(jnp.abs(proj(gamma, g)) <= tol)
    return gamma, converged, weight


@lru_cache(maxsize=16)
def _refit_fn(n_cand: int, n_judge: int, n_cells: int, max_iter: int):
    naive = _refit_layout(n_cand, n_judge, False)
    adjusted = _refit_layout(n_cand, n_judge, True)

    def one(arrays, omega, s_tilde, beta, ridge):
        stats = cell_stats_from_cluster_weights(arrays, omega, n_cells)
        g_n, ok_n, weight = _refit_gamma(arrays, stats, s_tilde, beta, layout=naive, ridge=ridge, max_iter=max_iter)
        g_p, ok_p, _ = _refit_gamma(arrays, stats, s_tilde, beta, layout=adjusted, ridge=ridge, max_iter=max_iter)
        return g_n, g_p, ok_n & ok_p, weight

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, 0, None)))


def _normalize_scores(s):
    """s̃ = (s − mean)/RMS (Section 6.2), row-wise for (B, C)."""
    s = np.asarray(s, dtype=np.float64)
    centred = s - s.mean(axis=-1, keepdims=True)
    rms = np.sqrt(np.mean(centred ** 2, axis=-1, keepdims=True))
    return centred / np.where(rms > 0, rms, np.nan)


@dataclass(frozen=True, eq=False)
class FixedScoreRefit:
    """Equation (11) refits: γᴺ (no position) and γᴾ (fixed β_k) per judge, scores fixed.

    Arrays are (K,) for one refit sample or (B, K) for a batch of cluster weights.
    ``ratio`` = γᴺ/γᴾ, ``predicted`` = 1 − D² with D = tanh(β/2) (Eq. 5);
    ``log_discrepancy`` = log ratio − log predicted. Judges with no refit data are NaN.
    """

    judges: tuple[str, ...]
    gamma_naive: np.ndarray
    gamma_pos: np.ndarray
    beta_pos: np.ndarray
    weight: np.ndarray
    converged: np.ndarray

    @property
    def D(self) -> np.ndarray:
        return net_preference(self.beta_pos)

    @property
    def predicted(self) -> np.ndarray:
        return 1.0 - self.D ** 2

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.gamma_pos > 0, self.gamma_naive / self.gamma_pos, np.nan)

    @property
    def log_discrepancy(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.ratio > 0, np.log(self.ratio) - np.log(self.predicted), np.nan)

    def table(self) -> pd.DataFrame:
        if self.gamma_naive.ndim != 1:
            raise OscarInputError("table() describes one refit; this FixedScoreRefit holds a batch (B, K)")
        return pd.DataFrame({"judge": list(self.judges), "n": self.weight, "D": self.D,
                             "gamma_naive": self.gamma_naive, "gamma_pos": self.gamma_pos,
                             "ratio": self.ratio, "predicted": self.predicted,
                             "log_discrepancy": self.log_discrepancy})

    def median_abs_log_discrepancy(self) -> float | np.ndarray:
        """median_k |log(γᴺ/γᴾ) − log(1 − D²)| over judges with finite values (per row)."""
        v = np.abs(self.log_discrepancy)
        if v.ndim == 1:
            v = v[np.isfinite(v)]
            return float(np.median(v)) if v.size else float("nan")
        return np.array([np.median(r[np.isfinite(r)]) if np.isfinite(r).any() else np.nan for r in v])


def fixed_score_refit(design: Design, scores, beta_pos, *, omega=None, ridge: float = REFIT_RIDGE,
                      max_iter: int = 100) -> FixedScoreRefit:
    """Refit each judge's sensitivity with scores held fixed, with and without position (Eq. 11).

    Minimizes Σ_t ℓ_t + 0.05 γ_k²/2 subject to γ_k ≥ 0 (Appendix D.3) for
    p̂ᴺ = σ(γᴺ_k d̃_t) and p̂ᴾ = σ(γᴾ_k d̃_t + β_k), d̃ = s̃_a − s̃_b with s̃ the scores
    centred and scaled to RMS 1, fractional ties.

    Parameters
    ----------
    design
        The refit data.
    scores
        (C,) or (B, C) calibration scores (normalized here).
    beta_pos
        (K,) or (B, K) position effects held fixed in the adjusted refit (e.g. a J+P fit's
        β_pos or an exact-swap calibration); NaN (a dropped column) counts as 0.
    omega
        (G,) or (B, G) cluster weights selecting/resampling the refit prompts (default all).

    Returns
    -------
    FixedScoreRefit with (K,) arrays, or (B, K) when any input is batched.
    """
    if not isinstance(design, Design):
        raise OscarInputError("fixed_score_refit() needs a Design; build one with oscar_jax.fit.as_design(data)")
    max_iter = check_positive_int("max_iter", max_iter)
    s = np.asarray(scores, dtype=np.float64)
    beta = np.nan_to_num(np.asarray(beta_pos, dtype=np.float64), nan=0.0)
    om = np.ones(design.n_clusters) if omega is None else np.asarray(omega, dtype=np.float64)
    if s.shape[-1] != design.n_cand or s.ndim > 2:
        raise OscarInputError(f"scores must have shape (C,) or (B, C) with C = {design.n_cand}, got {s.shape}")
    if beta.shape[-1] != design.n_judge or beta.ndim > 2:
        raise OscarInputError(f"beta_pos must have shape (K,) or (B, K) with K = {design.n_judge}, got {beta.shape}")
    if om.shape[-1] != design.n_clusters or om.ndim > 2 or np.any(~np.isfinite(om)) or np.any(om < 0):
        raise OscarInputError(f"omega must be finite, ≥ 0, shape (G,) or (B, G) with G = {design.n_clusters}")
    if not np.all(np.isfinite(s)):
        raise OscarInputError("scores contain non-finite values")
    batched = s.ndim == 2 or beta.ndim == 2 or om.ndim == 2
    b = max(x.shape[0] if x.ndim == 2 else 1 for x in (s, beta, om))
    s_t = _normalize_scores(np.broadcast_to(s, (b, design.n_cand)))
    if not np.all(np.isfinite(s_t)):
        raise OscarInputError("scores are all equal: there is no score difference to refit a sensitivity on")
    beta_b = np.broadcast_to(beta, (b, design.n_judge))
    om_b = np.broadcast_to(om, (b, design.n_clusters))
    fn = _refit_fn(design.n_cand, design.n_judge, design.n_cells, max_iter)
    g_n, g_p, ok, weight = (np.asarray(x) for x in fn(design.arrays, jnp.asarray(om_b), jnp.asarray(s_t),
                                                      jnp.asarray(beta_b), float(ridge)))
    empty = weight <= 0
    g_n, g_p = np.where(empty, np.nan, g_n), np.where(empty, np.nan, g_p)
    if not batched:
        g_n, g_p, beta_b, weight, ok = g_n[0], g_p[0], beta_b[0], weight[0], ok[0]
    return FixedScoreRefit(judges=design.judges, gamma_naive=g_n, gamma_pos=g_p, beta_pos=np.array(beta_b),
                           weight=weight, converged=ok)


@dataclass(frozen=True, eq=False)
class AttenuationResult:
    """Section 6.2 protocol: calibrate on one prompt split, refit sensitivities on another.

    ``refit`` holds the point estimates; ``boot`` the paired bootstrap refits (B, K) or None.
    """

    refit: FixedScoreRefit
    split: np.ndarray            # (G,) 0 = calibration cluster, 1 = refit cluster
    calibration_model: str
    boot: FixedScoreRefit | None
    boot_valid: np.ndarray | None
    ci_prob: float
    seed: int

    def table(self) -> pd.DataFrame:
        """Per judge: D, γᴺ, γᴾ, γᴾ − γᴺ, ratio γᴺ/γᴾ, 1 − D², log discrepancy (+ percentile CIs)."""
        t = self.refit.table()
        t.insert(5, "difference", t["gamma_pos"] - t["gamma_naive"])
        if self.boot is not None:
            v = self.boot_valid
            for name, draws in (("gamma_naive", self.boot.gamma_naive), ("gamma_pos", self.boot.gamma_pos),
                                ("difference", self.boot.gamma_pos - self.boot.gamma_naive),
                                ("ratio", self.boot.ratio), ("D", self.boot.D)):
                lo, hi = percentiles(np.asarray(draws)[v], self.ci_prob)
                t[f"{name}_lo"], t[f"{name}_hi"] = lo, hi
        return t


def attenuation_refit(data, model: str | ModelSpec = "j+p", *, refit_fraction: float = 0.25, seed: int = 0,
                      replicates: int = 0, beta_pos=None, ci_prob: float = 0.95, chunk_size: int | None = None,
                      reference_judge: str | None = None, show_progress: bool | None = None) -> AttenuationResult:
    """The fixed-score attenuation check of Section 6.2 / Appendix D.3 on any data.

    Prompt clusters are split at random (``seed``) into a calibration set and a refit
    set (``refit_fraction`` of the clusters). ``model`` (with a position term) is fitted
    on the calibration set; its scores — and its β_pos unless ``beta_pos`` (K,) is given,
    e.g. from an exact-swap calibration — are held fixed while each judge's γ is refitted
    on the refit set with and without position (:func:`fixed_score_refit`).
    ``replicates`` > 0 adds the paired prompt bootstrap of D.3: prompts are resampled
    within each fixed split, and calibration fit and refits are redone per replicate
    (calibration fits vmapped in one batch, warm-started at the calibration estimate).
    """
    ci_prob = check_ci_prob(ci_prob)
    replicates = check_positive_int("replicates", replicates, minimum=0)
    if not 0.0 < float(refit_fraction) < 1.0:
        raise OscarInputError(f"refit_fraction must lie strictly between 0 and 1, got {refit_fraction}")
    design = as_design(data, reference_judge=reference_judge)
    spec = parse_model(model)
    eff, _ = design.effective_spec(spec)
    if beta_pos is None and "pos" not in eff.terms:
        raise OscarInputError(f"calibration model {eff.name} has no position term; use e.g. 'j+p' or pass beta_pos=")
    g = design.n_clusters
    n_refit = int(round(refit_fraction * g))
    if n_refit < 1 or n_refit >= g:
        raise OscarInputError(f"refit_fraction = {refit_fraction} leaves an empty split of the {g} prompt clusters")
    perm = np.asarray(jax.random.permutation(jax.random.PRNGKey(int(seed)), g))
    split = np.zeros(g, dtype=np.int64)
    split[perm[:n_refit]] = 1
    calib_w, refit_w = (split == 0).astype(float), (split == 1).astype(float)

    def calibrate(omega, starts):
        batch = fit_batch(design, eff, omega, starts=starts, chunk_size=chunk_size, show_progress=show_progress,
                          desc=f"{eff.name} calibration")
        s = batch.targets.s
        beta = np.nan_to_num(batch.coefficient("pos"), nan=0.0) if beta_pos is None else \
            np.broadcast_to(np.asarray(beta_pos, float), (batch.n, design.n_judge))
        return batch, s, beta

    cal, s, beta = calibrate(calib_w[None], None)
    refit = fixed_score_refit(design, s[0], beta[0], omega=refit_w)
    boot, boot_valid = None, None
    if replicates:
        omega = np.asarray(within_fold_weights(jax.random.fold_in(jax.random.PRNGKey(int(seed)), 5), split, replicates))
        cal_b, s_b, beta_b = calibrate(omega * calib_w[None], cal.theta[0])
        boot = fixed_score_refit(design, s_b, beta_b, omega=omega * refit_w[None])
        boot_valid = cal_b.valid & np.asarray(boot.converged)
    return AttenuationResult(refit=refit, split=split, calibration_model=eff.name, boot=boot, boot_valid=boot_valid,
                             ci_prob=ci_prob, seed=int(seed))
