"""Agreement of LLM-judge rankings with human votes (Appendix F).

What users want to know about their judges is whether the ranking they produce is the one
people would give. Given LLM judgments and human pairwise votes on the same prompts and
candidates, :func:`human_agreement` reports:

* **Human reference ranking (F.2).** A Bradley–Terry fit of the votes alone (one rater
  with sensitivity 1, ties ½, scores summing to zero, ridge 0.05: the package's own fit of
  model J on a single judge), candidates ranked by score.
* **Spearman** of each LLM model's full-data candidate scores with the human scores.
* **Held-out human-vote log loss (F.3, Table F1).** Candidate scores ŝ stay fixed at each
  model's full-data LLM fit; human votes are predicted as p̂ = σ(α₀ + α₁(ŝ_a − ŝ_b)) with
  (α₀, α₁) calibrated by ridge-1e-6 logistic regression on four of five prompt groups and
  scored on the fifth; the five held-out groups are pooled into one mean log loss
  (predictions clipped to [1e-15, 1 − 1e-15], ties scored ½).
* **Prompt bootstrap (F.4).** Each replicate draws prompt counts once and applies the same
  counts to the LLM judgments (refits by :func:`oscar_jax.bootstrap.fit_batch`, weights not
  resampled records) and to the human votes (vote weights), then repeats the calibration.
  Percentile intervals for every model's loss and for the gain of each model over the
  first (positive = lower loss).

The calibration is a two-parameter logistic regression solved by Newton's method,
vectorised over replicates, models and held-out groups in numpy (tiny host arithmetic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .io.data import load_judgments
from .model.design import Design, build_design
from .model.problem import as_design
from .fit import fit
from .model.links import sigmoid
from .compare import LOSS_CLIP
from .infer.batch_fit import fit_batch
from .results.intervals import percentiles
from .infer.weights import bootstrap_weights, prompt_folds
from .runtime.validate import OscarInputError, check_ci_prob, check_positive_int

__all__ = ["HumanAgreement", "calibrate", "heldout_log_loss", "human_agreement", "human_reference", "load_votes"]

HUMAN_RIDGE = 0.05  # F.2: ridge of the human Bradley–Terry fit
CALIBRATION_RIDGE = 1e-6  # F.3: ridge of the (α₀, α₁) calibration
HUMAN_JUDGE = "human"
_NEWTON_STEPS = 50


def load_votes(source, schema: str | None = None) -> tuple[pd.DataFrame, object]:
    """Human votes as a canonical frame with every vote from one rater, ``"human"``.

    Any judgment format :func:`~oscar_jax.io.data.load_judgments` reads (MT-Bench's
    ``human_judgments`` rows are the Arena convention: question_id, model_a, model_b,
    winner, judge). Ties (including ``tie (bothbad)``) score ½.
    """
    frame, report = load_judgments(source, schema=schema)
    n_raters = frame["judge"].nunique()
    frame["judge"] = HUMAN_JUDGE
    report.notes.append(f"{n_raters} human rater(s) pooled into one judge {HUMAN_JUDGE!r} for the F.2 fit")
    return frame, report


def human_reference(votes, *, ridge: float = HUMAN_RIDGE):
    """F.2: Bradley–Terry fit of the votes (ties ½, Σ s = 0, ridge 0.05) as a FitResult."""
    if isinstance(votes, Design):
        design = votes
    else:
        frame, report = votes if isinstance(votes, tuple) else load_votes(votes)
        design = build_design(frame, report=report)
    if design.n_judge != 1:
        raise OscarInputError(f"the human reference is a one-rater fit; the votes have {design.n_judge} judges "
                              "(read them with oscar_jax.human.load_votes)")
    return fit(design, "j", ridge=ridge, warn=False)


def calibrate(x, y, w, *, ridge: float = CALIBRATION_RIDGE) -> np.ndarray:
    """(..., 2) ridge logistic regression of y on (1, x) with weights w, over the last axis.

    Minimises Σ w·ℓ(y, σ(α₀ + α₁x)) + ½·ridge·(α₀² + α₁²) (ℓ the log loss; y may be ½)
    by Newton's method; x, y, w broadcast to a common shape (..., N).
    """
    x, y, w = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, y, w)))
    alpha = np.zeros(x.shape[:-1] + (2,))
    eye = ridge * np.eye(2)
    for _ in range(_NEWTON_STEPS):
        eta = alpha[..., :1] + alpha[..., 1:] * x
        p = sigmoid(eta)  # σ(η), stable for large |η|
        r = w * (p - y)
        g = np.stack([r.sum(-1), (r * x).sum(-1)], -1) + ridge * alpha
        c = w * p * (1.0 - p)
        h = np.stack([np.stack([c.sum(-1), (c * x).sum(-1)], -1),
                      np.stack([(c * x).sum(-1), (c * x * x).sum(-1)], -1)], -2) + eye
        step = np.linalg.solve(h, g[..., None])[..., 0]
        alpha = alpha - step
        if np.max(np.abs(step)) < 1e-12:
            break
    return alpha


def _log_loss(y, p):
    p = np.clip(p, LOSS_CLIP, 1.0 - LOSS_CLIP)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def heldout_log_loss(x, y, w, groups, *, ridge: float = CALIBRATION_RIDGE) -> tuple[np.ndarray, np.ndarray]:
    """F.3: pooled held-out log loss of calibrated predictions, and the (α₀, α₁) per group.

    ``x`` (..., N) score differences ŝ_a − ŝ_b, ``y`` (N,) human outcomes, ``w`` (..., N)
    vote weights, ``groups`` (N,) integer group of each vote. For each group g the
    calibration uses the other groups' votes and predicts group g's; the mean log loss is
    Σ w·ℓ / Σ w over all votes. Returns loss (...,) and alphas (..., n_groups, 2).
    """
    groups = np.asarray(groups)
    x, w = np.broadcast_arrays(np.asarray(x, float), np.asarray(w, float))
    ids = np.unique(groups)
    held = groups[None, :] == ids[:, None]  # (n_groups, N)
    alphas = calibrate(x[..., None, :], y, w[..., None, :] * ~held, ridge=ridge)  # (..., n_groups, 2)
    eta = alphas[..., 0:1] + alphas[..., 1:2] * x[..., None, :]
    p = sigmoid(eta)
    loss = (_log_loss(y, p) * w[..., None, :] * held).sum((-1, -2))
    return loss / w.sum(-1), alphas


@dataclass
class HumanAgreement:
    """Result of :func:`human_agreement` (see the module docstring)."""

    human: pd.DataFrame  # candidate, human_score, human_rank
    scores: pd.DataFrame  # one column of full-data LLM scores per model, indexed by candidate
    spearman: dict
    log_loss: dict
    alphas: dict  # model -> (n_groups, 2) calibration per held-out group
    intervals: dict  # model -> (lo, hi); "gain <m> over <base>" -> (value, lo, hi) in gains
    gains: dict
    replicates: int
    failed: dict  # model -> replicates whose refit failed a B.3 check (excluded)
    n_votes: int
    n_prompts: int
    n_groups: int
    ci_prob: float
    notes: list = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        rows = []
        for m, loss in self.log_loss.items():
            lo, hi = self.intervals.get(m, (np.nan, np.nan))
            rows.append({"model": m, "spearman": self.spearman[m], "log_loss": loss, "lo": lo, "hi": hi,
                         "top": self.scores[m].idxmax()})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        def num(v):
            v = float(v)
            return v if np.isfinite(v) else None

        return {
            "human_ranking": [{"candidate": r.candidate, "score": num(r.human_score), "rank": int(r.human_rank)}
                              for r in self.human.itertuples()],
            "models": [{"model": m, "spearman": num(self.spearman[m]), "log_loss": num(loss),
                        "lo": num(self.intervals[m][0]) if m in self.intervals else None,
                        "hi": num(self.intervals[m][1]) if m in self.intervals else None,
                        "failed_replicates": self.failed.get(m, 0),
                        "alpha": [[num(a) for a in row] for row in self.alphas[m]],
                        "scores": {c: num(s) for c, s in self.scores[m].items()}}
                       for m, loss in self.log_loss.items()],
            "gains": [{"contrast": k, "gain": num(v[0]), "lo": num(v[1]), "hi": num(v[2])} for k, v in self.gains.items()],
            "replicates": self.replicates, "n_votes": self.n_votes, "n_prompts": self.n_prompts,
            "n_groups": self.n_groups, "ci_prob": self.ci_prob, "notes": list(self.notes),
            "metric": "pooled held-out human-vote mean log loss (Appendix F.3), predictions clipped to "
                      "[1e-15, 1-1e-15]; gain = base loss - model loss (positive = lower loss)",
        }


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def human_agreement(data, votes, models=("j", "j+p", "oscar"), *, replicates: int = 200, n_groups: int = 5,
                    seed: int = 0, ci_prob: float = 0.95, show_progress=None, **setup) -> HumanAgreement:
    """Spearman and held-out log loss of LLM-judge models against human votes (Appendix F).

    Parameters
    ----------
    data
        LLM judgments: anything :func:`~oscar_jax.fit` takes, with its set-up keywords
        (``**setup``; e.g. ``responses=`` joins response lengths, needed for the length
        term).
    votes
        Human votes: a path, DataFrame or records (see :func:`load_votes`), on the same
        candidates and prompts.
    models
        Models whose full-data scores are compared; gains are against the first.
    replicates
        Prompt-bootstrap replicates (0 = none); the same prompt counts weight the LLM
        judgments and the human votes.
    n_groups, seed
        Prompt groups of the held-out calibration (a seeded balanced partition of the
        prompts with votes) and the seed of the groups and the bootstrap.
    """
    replicates = check_positive_int("replicates", replicates, minimum=0)
    ci_prob = check_ci_prob(ci_prob)
    n_groups = check_positive_int("n_groups", n_groups, minimum=2)
    models = tuple(models)
    if not models:
        raise OscarInputError("models must name at least one model")
    design = as_design(data, **setup)
    vframe, vreport = load_votes(votes) if not isinstance(votes, tuple) else votes
    cands = list(design.candidates)
    for side in ("candidate_a", "candidate_b"):
        unknown = sorted(set(vframe[side]) - set(cands))
        if unknown:
            raise OscarInputError(f"{vreport.source}: human votes name candidate(s) {unknown} absent from the LLM "
                                  f"judgments (candidates: {cands}); remove those votes or add judgments")
    prompt_index = {p: i for i, p in enumerate(design.prompts)}
    vprompt = vframe["prompt"].map(prompt_index)
    if vprompt.isna().any():
        row = int(np.flatnonzero(vprompt.isna().to_numpy())[0])
        raise OscarInputError(f"{vreport.source} record {row + 1}: prompt {vframe['prompt'].iloc[row]!r} has no LLM "
                              "judgments; the prompt bootstrap needs votes and judgments on the same prompts")
    vprompt = vprompt.to_numpy(dtype=int)
    ia = np.array([cands.index(c) for c in vframe["candidate_a"]])
    ib = np.array([cands.index(c) for c in vframe["candidate_b"]])
    y = vframe["outcome"].to_numpy(dtype=float)
    w0 = vframe["weight"].to_numpy(dtype=float)

    ref = human_reference((vframe, vreport))
    hscore = pd.Series(ref.scores, index=ref.design.candidates).reindex(cands)
    human = pd.DataFrame({"candidate": cands, "human_score": hscore.to_numpy()})
    human = human.sort_values("human_score", ascending=False, kind="stable").reset_index(drop=True)
    human["human_rank"] = np.arange(1, len(human) + 1)

    # Prompt groups over the prompts that have votes (balanced, seeded).
    voted = np.unique(vprompt)
    gfold = np.full(design.n_clusters, -1)
    gfold[voted] = prompt_folds(len(voted), n_groups, seed)
    groups = gfold[vprompt]

    notes = list(design.notes)
    scores, spearman, log_loss, alphas = {}, {}, {}, {}
    for m in models:
        res = fit(design, m, warn=False)
        if res.failed_checks():
            notes.append(f"{m}: full-data fit failed B.3: " + "; ".join(res.failed_checks()))
        s = np.asarray(res.scores)
        scores[m] = pd.Series(s, index=cands)
        spearman[m] = _spearman(s, hscore.to_numpy())
        loss, al = heldout_log_loss(s[ia] - s[ib], y, w0, groups)
        log_loss[m], alphas[m] = float(loss), al
        if res.effective_spec.name != res.spec.name:
            notes.append(f"{m}: fitted {res.effective_spec.name} (terms the data cannot support dropped)")

    intervals, gains, failed = {}, {}, {}
    base = models[0]
    if replicates:
        omega = np.asarray(bootstrap_weights(seed, design.n_clusters, replicates))  # (B, G) prompt counts
        wv = omega[:, vprompt] * w0[None, :]  # the same counts on the human votes
        draws = {}
        for m in models:
            batch = fit_batch(design, m, omega, seed=seed, show_progress=show_progress, desc=f"{m} human bootstrap")
            s = np.asarray(batch.targets.s)  # (B, C)
            loss, _ = heldout_log_loss(s[:, ia] - s[:, ib], y, wv, groups)
            draws[m] = np.where(batch.valid, loss, np.nan)
            failed[m] = int(batch.n_failed)
            lo, hi = percentiles(draws[m][:, None], ci_prob)
            intervals[m] = (float(lo[0]), float(hi[0]))
        for m in models[1:]:
            diff = draws[base] - draws[m]
            lo, hi = percentiles(diff[:, None], ci_prob)
            gains[f"{m} over {base}"] = (log_loss[base] - log_loss[m], float(lo[0]), float(hi[0]))
        if any(failed.values()):
            notes.append("bootstrap replicates whose refit failed a B.3 check are excluded: "
                         + ", ".join(f"{m} {n}" for m, n in failed.items() if n))
    else:
        for m in models[1:]:
            gains[f"{m} over {base}"] = (log_loss[base] - log_loss[m], np.nan, np.nan)
    return HumanAgreement(human=human, scores=pd.DataFrame(scores), spearman=spearman, log_loss=log_loss,
                          alphas=alphas, intervals=intervals, gains=gains, replicates=replicates, failed=failed,
                          n_votes=len(vframe), n_prompts=len(voted), n_groups=n_groups, ci_prob=ci_prob, notes=notes)
