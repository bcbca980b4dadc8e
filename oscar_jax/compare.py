"""Held-out comparison of models on identical prompt-cluster folds (Section 6.3, Appendix E.2–E.3).

:func:`compare` — grouped K-fold held-out log loss (Appendix E.2): prompt clusters are
dealt into folds once, every model is trained on the same folds (ω = 1 on training
clusters, 0 on test clusters, one vmapped batch per model) and scored on the test
clusters' cell statistics with the full η (bias terms kept) through
:func:`~oscar_jax.infer.derivatives.cell_probabilities`; predictions are clipped to
[1e-15, 1 − 1e-15] and the out-of-fold losses are pooled. ``paired_bootstrap=R`` adds
the Appendix E.3 paired refit bootstrap: prompts are resampled within each fixed fold,
every model is refitted on the same resampled training folds and evaluated on the same
resampled test folds — all R × F refits of one model in one vmapped batch.

The length scale s_L (and every other covariate) is that of the design, i.e. computed
once on the full data and shared by all folds and replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .infer.derivatives import cell_probabilities
from .results.intervals import min_percentile_replicates
from .model.design import DesignArrays, cell_stats_from_cluster_weights
from .model.params import Layout
from .runtime.jit import persistent_jit
from .infer.batch_fit import auto_chunk_size, fit_batch
from .results.intervals import percentiles
from .results.jsonable import records
from .model.problem import as_design, prepare
from .infer.weights import fold_masks, prompt_folds, within_fold_weights
from .model.spec import ModelSpec, parse_model
from .runtime.lazy_jax import jax, jnp
from .runtime.validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = [
    "CompareResult",
    "DEFAULT_MODELS",
    "E2_PAIRS",
    "LOSS_CLIP",
    "compare",
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
            max_iter: int = 100, show_progress: bool | None = None, **setup) -> CompareResult:
    """Held-out log loss of several models on identical prompt-cluster folds (E.2, E.3).

    Parameters
    ----------
    data
        Design, prepared Problem, path, DataFrame or records. The design is built once, so the length scale
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
    **setup
        The set-up keywords of :func:`~oscar_jax.model.problem.as_design`
        (``reference_judge``, ``covariates``, ``filters``, ``exclude_ties``, ``schema``, …).

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
    if paired_bootstrap == 1:
        raise OscarInputError("paired_bootstrap = 1: one replicate cannot estimate uncertainty (its 'interval' is "
                              "a point); give 0 (none) or, for a 95% interval, at least "
                              f"{min_percentile_replicates(0.95)} replicates (e.g. 200)")
    max_iter = check_positive_int("max_iter", max_iter)
    if isinstance(models, str):
        models = [m for m in models.split(",") if m.strip()]
    models = list(models)
    if not models:
        raise OscarInputError("models is empty; pass e.g. models=['j', 'j+p', 'oscar']")
    design = as_design(data, **setup)
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

    problems = {spec.name: prepare(design, spec) for spec in specs}
    estimable = {n: not _not_estimable(s, problems[n].effective_spec) for n, s in zip(names, specs)}

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
        problem = problems[name]
        eff, notes = problem.effective_spec, list(problem.dropped)
        fitted[name] = eff.with_terms(eff.terms).name  # e.g. OSCAR without lengths → "J+P+F"
        if not estimable[name]:
            dropped = [t for t in spec.terms if t not in eff.terms]
            notes.append(f"not estimable on these data: its only term(s) {dropped} are unavailable, "
                         f"so it would be a copy of {eff.with_terms(()).name}")
            log_loss[name], fold_ll[name], failed[name] = float("nan"), np.full(folds, np.nan), 0
            notes_out[name] = tuple(notes)
            continue
        batch = fit_batch(problem, omega=train, chunk_size=chunk_for(problem.layout), max_iter=max_iter,
                          show_progress=show_progress, desc=f"{eff.name} folds")
        loss, weight = (np.asarray(x) for x in _heldout_jit(np.asarray(batch.theta), test, design.arrays,
                                                            layout=problem.layout, n_cells=design.n_cells))
        failed[name] = batch.n_failed
        if batch.n_failed:
            # Every model is scored on the same folds, so a failed fold fit is not dropped
            # (that would compare models on different test prompts): its loss is pooled, and said so.
            notes.append(batch.failure_summary("are pooled as they are (every model is scored on the same "
                                               "folds); read this model's loss with care", unit="fold fits"))
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
            problem = problems[name]
            layout = problem.layout
            starts = np.tile(fold_fits[name].theta, (r, 1))[:, None, :]  # warm start: each fold's own fit
            batch = fit_batch(problem, omega=train_b, starts=starts, chunk_size=chunk_for(layout), max_iter=max_iter,
                              show_progress=show_progress, desc=f"{problem.effective_spec.name} paired bootstrap")
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
            need = min_percentile_replicates(ci_prob)
            enough = int(ok.sum()) >= need
            rows.append({"a": a, "b": b, "estimate": log_loss[a] - log_loss[b], "lo": lo, "hi": hi,
                         "replicates": r, "valid": int(ok.sum()),
                         "excludes_zero": bool(lo > 0 or hi < 0) if np.isfinite(lo) and enough else None,
                         "note": "" if enough else
                         (f"{int(ok.sum())} valid replicates: a {ci_prob:.0%} percentile interval needs at least "
                          f"{need} (fewer cannot reach its tails), so no significance is claimed; rerun with "
                          f"paired_bootstrap ≥ {need}")})
        differences = pd.DataFrame(rows)

    return CompareResult(models=tuple(names), tokens=tuple(str(t) for t in tokens), log_loss=log_loss,
                         fold_log_loss=fold_ll, fitted=fitted, estimable=estimable, failed=failed, notes=notes_out,
                         folds=folds, seed=int(seed), fold_of_cluster=fold_ids, n_records=int(design.n_records),
                         n_prompts=int(design.n_clusters), paired_bootstrap=paired_bootstrap,
                         bootstrap_seed=b_seed if paired_bootstrap else None, ci_prob=ci_prob,
                         differences=differences, bootstrap_failed=boot_failed)
