"""PlanResult: the chosen batch and what it is expected to buy (``oscar plan``).

The summary compares the uncertainty now with the expected one after the batch
(:mod:`oscar_jax.infer.batch_design`): interval widths of the target's quantities (now:
the fit's cluster sandwich, as ``oscar fit`` shows them; after: now times the planning
covariance's expected ratio), the probability that the reported leader is the best, and
the expected Kendall τ between the reported ranking and the true one (both under the
planning covariance, before and after). "After" is preposterior: it averages over the
outcomes the batch may bring, at the current estimate θ̂.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..infer.batch_design import sign_probability, top1_probability
from ..model.links import net_preference, sigmoid
from ..model.plan_request import OUTPUT_SUFFIXES
from ..runtime.validate import OscarInputError, atomic_write
from .fit import FitResult

__all__ = ["PlanResult", "plan_summary"]

APPROXIMATION = ("expected values count each new judgment as a new prompt cluster (its expected information "
                 "added to the sandwich's bread and meat, the meat at least the bread) at the current estimate; "
                 "judgments that share a prompt with others may be correlated, which this ignores")


def _variances(grads: np.ndarray, cov: np.ndarray) -> np.ndarray:
    return np.maximum(np.einsum("...p,pq,...q->...", grads, cov, grads), 0.0)


def _row(key, values, se0, se1, z, names, judges, status, beta_pos) -> dict:
    kind = key[0]
    if kind == "h":
        _, i, j = key
        h = float(np.asarray(values.h)[i, j])
        flag = status.candidates[i] or status.candidates[j]
        lo0, hi0 = sigmoid(h - z * se0), sigmoid(h + z * se0)
        lo1, hi1 = sigmoid(h - z * se1), sigmoid(h + z * se1)
        return _masked({"quantity": "q", "a": names[i], "b": names[j], "estimate": float(sigmoid(h)), "lo": float(lo0),
                        "hi": float(hi0), "width": float(hi0 - lo0), "width_after": float(hi1 - lo1), "flag": flag})
    _, k = key
    if kind == "log_kappa":
        v = float(np.asarray(values.log_kappa)[k])
        ends = np.exp(v + z * np.array([-se0, se0, -se1, se1]))
        est, flag = float(np.exp(v)), status.kappa[k]
    else:  # D = tanh(β/2): the interval of β mapped through, as the judge table shows it
        d, beta = float(np.asarray(values.D)[k]), float(beta_pos[k])
        slope = max((1.0 - d * d) / 2.0, 1e-300)  # dD/dβ: the rows' standard errors are D's
        ends = net_preference(beta + z * np.array([-se0, se0, -se1, se1]) / slope)
        est, flag = d, status.D[k]
    return _masked({"quantity": "kappa" if kind == "log_kappa" else "D", "a": judges[k], "b": "", "estimate": est,
                    "lo": float(ends[0]), "hi": float(ends[1]), "width": float(ends[1] - ends[0]),
                    "width_after": float(ends[3] - ends[2]), "flag": flag})


def _masked(row: dict) -> dict:
    """A width the data do not determine is flagged, never given as a number (NaN; null in JSON)."""
    if row["flag"]:
        row.update({col: np.nan for col in ("lo", "hi", "width", "width_after")})
    return row


def plan_summary(result: FitResult, target, cand, alloc, crit, keys, values, grads, budget: float, *,
                 rng: np.random.Generator, draws: int, pool) -> dict:
    """Everything ``oscar plan`` prints: expectations before/after, the allocation, notes."""
    design, z = result.design, result.z
    names, judges = list(design.candidates), list(design.judges)
    sandwich, plan0, plan1 = (np.asarray(c) for c in (result.cov.cluster, alloc.cov_before, alloc.cov_after))
    status = result.status("sandwich")

    def se_now_after(grads):
        """The fit's sandwich se now, and after: now × the planning covariance's expected ratio."""
        now = np.sqrt(_variances(grads, sandwich))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.sqrt(_variances(grads, plan1) / _variances(grads, plan0))
        return now, now * np.minimum(np.nan_to_num(ratio, nan=1.0), 1.0)

    se0, se1 = se_now_after(crit.grads)
    beta = result.params.beta_pos
    rows = pd.DataFrame([_row(k, values, a, b, z, names, judges, status, beta) for k, a, b in zip(keys, se0, se1)])

    x, gx, gh = np.asarray(values.x), np.asarray(grads.x), np.asarray(grads.h)
    p_before, p_after = top1_probability(x, gx @ plan0 @ gx.T, gx @ plan1 @ gx.T, rng, draws)
    iu, ju = np.triu_indices(len(names), 1)
    v0, v1 = _variances(gh[iu, ju], plan0), _variances(gh[iu, ju], plan1)
    h = np.asarray(values.h)[iu, ju]
    tau = [float(2.0 * np.mean(sign_probability(h, v0, v)) - 1.0) for v in (v0, v1)]
    order = np.argsort(-x, kind="mergesort")
    lead, second = int(order[0]), int(order[1])
    top_now, top_after = se_now_after(gh[lead, second][None])
    top = _row(("h", lead, second), values, float(top_now[0]), float(top_after[0]), z, names, judges, status, beta)
    flagged = [n for n, f in zip(names, status.candidates) if f]
    undetermined = f"{', '.join(flagged)} not determined by the data" if flagged else None

    counts = alloc.counts
    chosen = counts > 0
    high_first = x[cand.a] > x[cand.b]
    by_judge = pd.DataFrame({
        "judge": judges,
        "cost": [float(cand.cost[cand.k == k][0]) if np.any(cand.k == k) else np.nan for k in range(len(judges))],
        "judgments": [int(counts[cand.k == k].sum()) for k in range(len(judges))],
        "higher_first": [int(counts[(cand.k == k) & high_first].sum()) for k in range(len(judges))],
        "lower_first": [int(counts[(cand.k == k) & ~high_first].sum()) for k in range(len(judges))],
    })
    by_judge["spent"] = by_judge["judgments"] * by_judge["cost"].fillna(0.0)
    lo_i, hi_i = np.minimum(cand.a, cand.b)[chosen], np.maximum(cand.a, cand.b)[chosen]
    pairs = (pd.DataFrame({"a": [names[i] for i in lo_i], "b": [names[i] for i in hi_i], "judgments": counts[chosen]})
             .groupby(["a", "b"], as_index=False, sort=False)["judgments"].sum()
             .sort_values("judgments", ascending=False, kind="mergesort").reset_index(drop=True))
    pairs["judgments"] = pairs["judgments"].astype(int)

    notes = list(result.notes) + [APPROXIMATION]
    if "len" in result.effective_spec.terms:
        notes.append("length contrasts of new judgments are predicted from each candidate's mean observed length "
                     "contrast (responses not yet measured)")
    if design.covariates:
        notes.append(f"user covariates {list(design.covariates)} are taken as 0 for new judgments")
    if alloc.exhausted:
        notes.append(f"stopped after spending {alloc.spent:g} of {budget:g}: no remaining judgment reduces the "
                     "target's expected uncertainty")
    if flagged:
        notes.append(f"not determined by the data: {', '.join(flagged)} (see oscar fit): probabilities and widths "
                     "involving them are flagged (their normal approximation does not hold), and the information of "
                     "their judgments at the estimate is near zero, so the greedy cannot value them — the random "
                     "share (--explore) is what compares them; raise it, or add their judgments by hand")
    fixed = int(np.sum(np.asarray(result.core.mask) == 0))
    if fixed:
        notes.append(f"{fixed} coefficient(s) fixed at 0 by column selection (B.2) are not planned for")
    return {
        "target": target.kind if target.kind != "pairs" else "pairs:" + ";".join(f"{a},{b}" for a, b in target.pairs),
        "model": result.effective_spec.name, "budget": float(budget), "spent": alloc.spent,
        "judgments": int(counts.sum()), "ci_prob": result.ci_prob, "prompts": "new" if pool is None else
        ("judgment pool" if pool.judgments is not None else "prompt pool"),
        "p_top1": {"before": None if flagged else p_before, "after": None if flagged else p_after,
                   "flag": undetermined, "leader": names[lead]},
        "kendall_tau": {"before": None if flagged else tau[0], "after": None if flagged else tau[1],
                        "flag": undetermined},
        "top_pair": top, "rows": rows, "by_judge": by_judge, "pairs": pairs, "notes": notes,
    }


@dataclass(frozen=True, eq=False)
class PlanResult:
    """A plan: ``batch`` (prompt, candidate_a, candidate_b, judge, outcome blank; the most
    valuable judgments first), ``summary`` (see :func:`plan_summary`) and the ``fit`` it started from."""

    batch: pd.DataFrame
    summary: dict
    fit: FitResult

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.summary.items() if not isinstance(v, pd.DataFrame)}
        out["top_pair"] = {c: (None if isinstance(v, float) and np.isnan(v) else v) for c, v in out["top_pair"].items()}
        for key in ("rows", "by_judge", "pairs"):
            frame = self.summary[key]
            out[key] = [{c: (None if isinstance(v, float) and np.isnan(v) else v) for c, v in r.items()}
                        for r in frame.to_dict(orient="records")]
        out["batch_size"] = int(len(self.batch))
        return out

    def write(self, path) -> Path:
        """Write the batch (CSV, or JSON lines for a .jsonl path) atomically; readable by ``oscar fit``
        once the harness has filled ``outcome`` with A, B or tie."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in OUTPUT_SUFFIXES:
            raise OscarInputError(f"plan output {str(path)!r}: use a .csv or .jsonl file name")
        if suffix == ".csv":
            return atomic_write(path, lambda tmp: self.batch.to_csv(tmp, index=False))
        return atomic_write(path, lambda tmp: self.batch.to_json(tmp, orient="records", lines=True, force_ascii=False))

    def __repr__(self) -> str:
        s, p1 = self.summary, self.summary["p_top1"]
        top = (f"{p1['before']:.3f} → {p1['after']:.3f}" if not p1["flag"] else f"not determined ({p1['flag']})")
        return (f"PlanResult({s['judgments']} judgments, target {s['target']}, spent {s['spent']:g} of "
                f"{s['budget']:g}; P(correct top-1) {top})")
