"""One call from an audit table to the paper's measures, its tests and the paired and
Bayesian effects (method section 9; ad-relevance paper, Sections 3–4, Tables 1–5).

:func:`audit` returns an :class:`AuditResult` with tidy tables:

* ``conditions()`` — per condition: Bad DR, Fair DR, label distribution, mean pRel,
  consistency with the anchor (the original, else the reference), mean over runs;
* ``paper_table()`` — the paper's layout (metrics as rows, conditions as columns) with
  the t-test across runs of the reference against the mean of the other conditions;
* ``effects()`` — every contrast (each condition and "others (mean)" minus the
  reference) by every method: ``ttest_runs`` (the paper's), ``bootstrap_items``
  (paired, item-cluster bootstrap), ``mcnemar_clustered`` and ``sign_exact`` (paired
  binary), ``bayes_ordinal`` / ``bayes_logit`` (posterior of δ).

Signs: decision-rate, pRel and consistency effects are *condition minus reference*
(a positive Bad DR effect = judged bad more often than the reference). Bayesian effects
are δ_c on the log-odds of a more favourable label (or on logit pRel): positive = judged
more favourably. Consistency effects are relative to the duplicated baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..infer.posterior import rhat_flag
from ..report.render import current_width, fill, fmt_ci, render_table
from ..runtime.lazy_jax import jax, jnp
from ..runtime.validate import OscarInputError, check_choice, check_ci_prob, check_positive_int
from .bayes import AuditPosterior, fit_audit_model
from .data import AuditData
from .inference import (
    METRIC_LABEL,
    METRICS,
    PERCENT_METRICS,
    consistency_tests_jit,
    frequentist_tests_jit,
    metric_arrays,
)
from .load import load_audit
from .measures import label_distribution, run_rates
from .stats import ALTERNATIVES, ttest_ind

_ttest_jit = jax.jit(ttest_ind, static_argnames=("alternative", "equal_var", "ci_prob"))

__all__ = ["AuditResult", "audit"]

OTHERS = "others (mean)"
METHOD_ORDER = ("ttest_runs", "bootstrap_items", "mcnemar_clustered", "sign_exact", "bayes_ordinal", "bayes_logit")


@dataclass(frozen=True, eq=False)
class AuditResult:
    """Everything :func:`audit` computed; tables are tidy DataFrames (see module doc)."""

    data: AuditData
    reference: str
    original: str | None
    duplicate: str | None
    others: tuple[str, ...]
    alternative: str
    ci_prob: float
    n_boot: int
    seed: int
    conditions_frame: pd.DataFrame
    effects_frame: pd.DataFrame
    focal_tests: pd.DataFrame
    bayes: AuditPosterior | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def conditions(self) -> pd.DataFrame:
        return self.conditions_frame.copy()

    def effects(self, method: str | None = None, metric: str | None = None) -> pd.DataFrame:
        out = self.effects_frame
        if method is not None:
            out = out[out["method"] == method]
        if metric is not None:
            out = out[out["metric"] == metric]
        return out.reset_index(drop=True)

    def paper_table(self) -> pd.DataFrame:
        """Metrics (in %) as rows, conditions as columns, plus the focal t-test p-value."""
        cond = self.conditions_frame
        rows = []
        for metric in ("consistency", "bad_dr", "fair_dr", "mean_prel"):
            if metric not in cond or not np.isfinite(cond[metric].to_numpy(float)).any():
                continue
            row = {"metric": METRIC_LABEL[metric] + " (%)"}
            row.update({c: 100.0 * v for c, v in zip(cond["condition"], cond[metric])})
            hit = self.focal_tests[self.focal_tests["metric"] == metric]
            row["p_value"] = float(hit["p_value"].iloc[0]) if len(hit) else np.nan
            rows.append(row)
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict:
        def clean(v):
            if isinstance(v, (float, np.floating)):
                return None if not np.isfinite(v) else float(v)
            if isinstance(v, (np.integer,)):
                return int(v)
            if isinstance(v, np.bool_):
                return bool(v)
            return v

        def records(frame):
            return [{k: clean(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]

        out = {
            "attribute": self.data.attribute, "kind": self.data.kind, "labels": list(self.data.labels),
            "reference": self.reference, "original": self.original, "duplicate": self.duplicate,
            "others": list(self.others), "alternative": self.alternative, "ci_prob": self.ci_prob,
            "n_items": self.data.n_items, "n_repetitions": self.data.n_reps, "n_boot": self.n_boot, "seed": self.seed,
            "conditions": records(self.conditions_frame), "paper_table": records(self.paper_table()),
            "focal_tests": records(self.focal_tests), "effects": records(self.effects_frame),
            "data_report": self.data.report.to_dict(), "notes": list(self.notes),
        }
        if self.bayes is not None:
            out["bayes"] = {"scale": self.bayes.scale, "interaction": self.bayes.interaction,
                            "diagnostics": self.bayes.diagnostics, "hyper": self.bayes.hyper,
                            "notes": list(self.bayes.notes)}
            if self.bayes.elbo is not None:
                out["bayes"]["elbo"] = (-self.bayes.elbo).tolist()
        return out

    def report(self, width: int = 100) -> str:
        """Paper-style table, then the effects by metric, as fixed-width text."""
        d = self.data
        lines = [fill(f"Counterfactual audit of {d.attribute or 'the attribute'}: {d.n_items} items × "
                      f"{d.n_conditions} conditions × {d.n_reps} runs ({d.kind} outputs); reference {self.reference!r}")]
        lines.append(d.report.summary())
        pt = self.paper_table()
        conds = list(d.conditions)
        cols = [("metric", "metric", "")] + [(c, c, ".1f") for c in conds] + [("p_value", "p (t-test)", ".3g")]
        table = render_table(pt, cols, width=max(width, 200))
        limit = current_width()
        if limit is not None and max(len(x) for x in table.splitlines()) > limit and len(pt):
            # One column per condition does not fit: conditions as rows, metrics as columns.
            tp = pt.set_index("metric")[conds].T.reset_index(names="condition")
            p_row = {"condition": "p (t-test)", **dict(zip(pt["metric"], pt["p_value"]))}
            tp = pd.concat([tp, pd.DataFrame([p_row])], ignore_index=True)
            metric_cols = [(m, m, ".3g") for m in pt["metric"]]
            table = render_table(tp, [("condition", "condition", "")] + metric_cols, name_col="condition")
        lines += ["", fill("Paper-style table (means over runs; p: reference vs mean of "
                           f"{', '.join(self.others) or '–'}, two-sample t-test across runs, {self.alternative})"),
                  table]
        eff = self.effects_frame.copy()
        pct = eff["metric"].isin(PERCENT_METRICS)
        scale = np.where(pct, 100.0, 1.0)
        eff["est"] = eff["estimate"] * scale
        eff["ci"] = [fmt_ci(lo * s, hi * s) for lo, hi, s in zip(eff["lo"], eff["hi"], scale)]
        n_draws = self.bayes.diagnostics["n_draws"] if self.bayes is not None else 0
        # Resampling p-values have a floor: a posterior tail area of 0 only says "below
        # 2 / draws", and the bootstrap's smallest p is 2 / (B + 1) (1 / (B + 1) one-sided).
        boot_min = (2.0 if self.alternative == "two-sided" else 1.0) / (self.n_boot + 1.0)

        def fmt_p(p, m):
            if not np.isfinite(p):
                return "–"
            if p == 0 and m.startswith("bayes"):
                return f"<{2.0 / n_draws:.2g}"
            if m == "bootstrap_items" and p <= boot_min * (1 + 1e-9):
                return f"≤{boot_min:.2g}"
            return format(p, ".3g")

        eff["p"] = [fmt_p(p, m) for p, m in zip(eff["p_value"], eff["method"])]
        for metric, block in eff.groupby("metric", sort=False):
            unit = "percentage points" if metric in PERCENT_METRICS else "log-odds"
            base = block["baseline"].iloc[0]
            lines += ["", fill(f"{METRIC_LABEL[metric]}: condition − {base} ({unit}; {int(self.ci_prob * 100)}% "
                               "intervals)")]
            cols = [("condition", "condition", ""), ("method", "method", ""), ("est", "estimate", "+.2f"),
                    ("ci", "interval", ""), ("p", "p", "")]
            if block["p_gt_0"].notna().any():
                cols.append(("p_gt_0", "P(δ>0)", ".3f"))
            lines.append(render_table(block.reset_index(drop=True), cols, width=width))
        if self.bayes is not None and self.bayes.method == "svi":
            dg = self.bayes.diagnostics
            lines += ["", fill(f"Bayesian model ({self.bayes.scale}; item effects"
                               f"{' and item × condition interaction' if self.bayes.interaction else ''}): SVI, "
                               f"{dg['guide']} guide, {dg['steps']} optax Adam steps, {dg['n_draws']} draws from the "
                               f"guide; ELBO {'levelled off' if dg['plateau'] else 'NOT CONVERGED'} (last-window "
                               f"change {dg['decrease_last_window']:.3g}, noise {dg['noise_se']:.3g}"
                               + (f", ELBO still to gain {dg['gain_left']:.3g}" if "gain_left" in dg else "") + ")")]
        elif self.bayes is not None:
            dg = self.bayes.diagnostics
            rh = "–" if dg["max_r_hat"] is None else f"{dg['max_r_hat']:.3f} ({rhat_flag(dg['max_r_hat'])})"
            lines += ["", (f"Bayesian model ({self.bayes.scale}; item effects"
                           f"{' and item × condition interaction' if self.bayes.interaction else ''}): "
                           f"{dg['num_chains']} chains × {dg['n_draws'] // max(dg['num_chains'], 1)} draws, "
                           f"max R̂ {rh}, {dg['divergences']} divergences")]
        for note in self.notes:
            lines.append(fill(f"note: {note}"))
        return "\n".join(lines)

    def plot(self, path, methods=("ttest_runs", "bootstrap_items", "bayes_ordinal", "bayes_logit")):
        """Forest plot of the effects with intervals (PNG); returns the path."""
        from .plot import plot_effects

        return plot_effects(self, path, methods=methods)


def _runs_mean(rates: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(rates)
        return np.where(ok.any(1), np.where(ok, rates, 0).sum(1) / np.maximum(ok.sum(1), 1), np.nan)


def audit(data, reference: str, *, original: str | None = None, duplicate: str | None = None, others=None,
          alternative: str = "two-sided", ci_prob: float = 0.95, n_boot: int = 2000, seed: int = 0,
          equal_var: bool = True, bayes: bool = True, bayes_options: dict | None = None,
          load_options: dict | None = None) -> AuditResult:
    """Run the paper's measures and tests and the paired and Bayesian analyses.

    Parameters
    ----------
    data
        :class:`AuditData`, or anything :func:`load_audit` reads (with ``load_options``).
    reference
        The condition every effect is measured against (exact name or unique substring),
        e.g. ``"Retailer A"``.
    original
        The unmodified original condition: shown, anchor of consistency, not pooled in
        "others".
    duplicate
        A duplicated, unchanged baseline (the judge's own noise): its consistency with
        the anchor is the reference level for consistency.
    others
        Conditions pooled in the focal contrast (default: all but the reference, the
        original and the duplicate), as the paper's "average of the other retailers".
    alternative
        H1 for (condition − reference) on decision rates, pRel and consistency:
        ``"two-sided"``, ``"less"`` or ``"greater"``.
    ci_prob, n_boot, seed, equal_var
        Interval level; bootstrap replicates; seed of the bootstrap and of NUTS;
        pooled (the paper's) or Welch t-test.
    bayes, bayes_options
        Fit the Bayesian model (keyword arguments for :func:`~oscar_jax.audit.bayes.fit_audit_model`;
        ``{"method": "svi"}`` for the variational fit).

    Returns
    -------
    AuditResult
    """
    if not isinstance(data, AuditData):
        data = load_audit(data, **(load_options or {}))
    check_choice("alternative", alternative, ALTERNATIVES)
    ci_prob = check_ci_prob(ci_prob)
    n_boot = check_positive_int("n_boot", n_boot, minimum=100)
    names = list(data.conditions)
    ref = data.condition_index(reference, "reference condition")
    orig = data.condition_index(original, "original condition") if original is not None else None
    dup = data.condition_index(duplicate, "duplicate condition") if duplicate is not None else None
    for label, idx in (("original", orig), ("duplicate", dup)):
        if idx is not None and idx == ref:
            raise OscarInputError(f"the {label} condition {names[idx]!r} is also the reference; choose another reference")
    if orig is not None and orig == dup:
        raise OscarInputError("original and duplicate must be different conditions")
    if others is None:
        pool = tuple(c for c in range(len(names)) if c not in (ref, orig, dup))
    else:
        pool = tuple(data.condition_index(o) for o in others)
        if ref in pool:
            raise OscarInputError(f"the reference {names[ref]!r} cannot be among 'others'")
    notes = list(data.report.notes)
    if not pool:
        notes.append("no other conditions to pool: the focal 'others (mean)' contrast is not computed")
    if data.n_reps < 2 or int(data.mask.any(0).sum(1).max()) < 2:
        notes.append("fewer than two runs per condition: the paper's t-test across runs is not available")

    key = jax.random.PRNGKey(seed)
    k_tests, k_cons = jax.random.split(key)
    values, mask = jnp.asarray(data.values), jnp.asarray(data.mask)
    n_labels = max(data.n_labels, 2)
    tests = frequentist_tests_jit(k_tests, values, mask, kind=data.kind, n_labels=n_labels, ref=ref,
                              others=pool if pool else (ref,), n_boot=n_boot, alternative=alternative,
                              ci_prob=ci_prob, equal_var=equal_var)
    tests = jax.tree_util.tree_map(np.asarray, tests)

    # ---- per-condition measures
    metrics = metric_arrays(values, data.kind, n_labels)
    cond = pd.DataFrame({"condition": names})
    cond["role"] = ["reference" if c == ref else "original" if c == orig else "duplicate" if c == dup else
                    "other" if c in pool else "-" for c in range(len(names))]
    cond["n_items"] = data.mask.any(axis=2).sum(axis=0)
    cond["n_runs"] = data.mask.any(axis=0).sum(axis=1)
    per_run = {}
    for m in ("bad_dr", "fair_dr", "mean_prel"):
        if m in metrics:
            per_run[m] = np.asarray(run_rates(metrics[m], mask))
            cond[m] = _runs_mean(per_run[m])
        else:
            cond[m] = np.nan
    if data.kind == "label":
        dist = np.asarray(label_distribution(values, mask, n_labels))      # (C, M) codes
        for j, lab in enumerate(data.labels):
            cond[f"share_{lab}"] = dist[:, n_labels - 1 - j]
    cons = None
    if data.kind == "label":
        anchor = orig if orig is not None else ref
        cons = consistency_tests_jit(k_cons, values, mask, anchor=anchor, duplicate=dup, n_boot=n_boot,
                                 alternative=alternative, ci_prob=ci_prob, equal_var=equal_var)
        cons = jax.tree_util.tree_map(np.asarray, cons)
        cond["consistency"] = cons["value"]
        per_run["consistency"] = cons["runs"]
        if dup is None:
            notes.append(f"consistency is agreement with {names[anchor]!r} in the same run; give a duplicated "
                         "baseline (--duplicate NAME; in Python duplicate=NAME) for the reference level of the "
                         "judge's own noise")
    else:
        cond["consistency"] = np.nan

    # ---- the paper's focal test: reference vs the mean of the others, across runs
    focal_rows = []
    if pool:
        for m, runs in per_run.items():
            if m == "consistency" and ref == (orig if orig is not None else ref):
                continue  # the anchor's own consistency is measured against the duplicate
            x = np.nanmean(runs[list(pool)], axis=0) if np.isfinite(runs[list(pool)]).any() else runs[0] * np.nan
            y = runs[ref]
            tt = _ttest_jit(jnp.asarray(np.nan_to_num(x)), jnp.asarray(np.isfinite(x)), jnp.asarray(np.nan_to_num(y)),
                           jnp.asarray(np.isfinite(y)), alternative=alternative, equal_var=equal_var, ci_prob=ci_prob)
            focal_rows.append({"metric": m, "estimate": float(tt.diff), "lo": float(tt.lo), "hi": float(tt.hi),
                               "t": float(tt.t), "df": float(tt.df), "p_value": float(tt.p)})
    focal = pd.DataFrame(focal_rows, columns=["metric", "estimate", "lo", "hi", "t", "df", "p_value"])

    # ---- effects table
    contrast_names = names + [OTHERS]
    rows = []
    for m in METRICS[data.kind]:
        if m not in tests:
            continue
        for method, res in tests[m].items():
            for k, cname in enumerate(contrast_names):
                if k == ref or (k == len(names) and not pool) or not np.isfinite(res["estimate"][k]):
                    continue
                rows.append({"condition": cname, "metric": m, "method": method, "baseline": names[ref],
                             "estimate": res["estimate"][k], "lo": res["lo"][k], "hi": res["hi"][k],
                             "p_value": res["p"][k], "p_gt_0": np.nan})
    if cons is not None and dup is not None:
        for method in ("ttest_runs", "bootstrap_items"):
            res = cons[method]
            for k, cname in enumerate(names):
                if not np.isfinite(res["estimate"][k]):
                    continue
                rows.append({"condition": cname, "metric": "consistency", "method": method, "baseline": names[dup],
                             "estimate": res["estimate"][k], "lo": res["lo"][k], "hi": res["hi"][k],
                             "p_value": res["p"][k], "p_gt_0": np.nan})
    bres = None
    if bayes:
        opts = {"seed": seed, "ci_prob": ci_prob, **(bayes_options or {})}
        bres = fit_audit_model(data, names[ref], others=[names[c] for c in pool] or None, **opts)
        method = "bayes_ordinal" if data.kind == "label" else "bayes_logit"
        metric = "log_odds_favourable" if data.kind == "label" else "logit_prel"
        for _, r in bres.summary.iterrows():
            if r["condition"] == names[ref] or (r["condition"] == OTHERS and not pool):
                continue
            rows.append({"condition": r["condition"], "metric": metric, "method": method, "baseline": names[ref],
                         "estimate": r["estimate"], "lo": r["lo"], "hi": r["hi"], "p_value": r["p"],
                         "p_gt_0": r["p_gt_0"]})
        notes += list(bres.notes)
    eff = pd.DataFrame(rows, columns=["condition", "metric", "method", "baseline", "estimate", "lo", "hi",
                                      "p_value", "p_gt_0"])
    notes += _withheld_bootstrap_notes(eff, int(data.mask.any(axis=(1, 2)).sum()))
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    morder = {m: i for i, m in enumerate(("bad_dr", "fair_dr", "mean_prel", "consistency", "log_odds_favourable",
                                          "logit_prel"))}
    corder = {c: i for i, c in enumerate(contrast_names)}
    eff = eff.sort_values(by=["metric", "condition", "method"],
                          key=lambda s: s.map(morder) if s.name == "metric" else
                          (s.map(corder) if s.name == "condition" else s.map(order)), kind="mergesort")
    return AuditResult(data=data, reference=names[ref], original=names[orig] if orig is not None else None,
                       duplicate=names[dup] if dup is not None else None, others=tuple(names[c] for c in pool),
                       alternative=alternative, ci_prob=ci_prob, n_boot=n_boot, seed=seed, conditions_frame=cond,
                       effects_frame=eff.reset_index(drop=True), focal_tests=focal, bayes=bres, notes=tuple(notes))


def _withheld_bootstrap_notes(eff: pd.DataFrame, n_items: int) -> list[str]:
    """Why item-bootstrap intervals are missing (``item_bootstrap`` withholds them), in words a user can act on."""
    boot = eff[(eff["method"] == "bootstrap_items") & eff["estimate"].notna() & eff["lo"].isna()]
    if boot.empty:
        return []
    if n_items < 2:
        return [f"{n_items} item: an item bootstrap cannot estimate uncertainty (every replicate resamples the same "
                "item); its intervals and p-values are withheld — audit more items"]
    shown = ", ".join(sorted({f"{r.condition} ({r.metric})" for r in boot.itertuples()})[:5])
    return [f"no spread across items for {shown}: every item differs by the same amount (identical conditions: 0), "
            "so the item bootstrap has nothing to resample and its interval is withheld; with "
            f"{n_items} items and no item that differs, the effect is bounded only to about ±{300 / n_items:.0f} "
            "percentage points (rule of three)"]

