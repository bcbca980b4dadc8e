"""Human-readable reports (80-column text) of fits, bootstraps, posteriors and held-out comparisons.

Every number comes from the result's tables and every withheld interval from its status
(``result.status(ci)``, the tables' ``interval`` column); nothing here computes a statistic.
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd

from ..results.intervals import CI_KIND_NAMES
from ..results.schema import CI_LABELS
from .leaderboard import scale_label
from .render import TABLE_WIDTH, fill, fmt_ci, render_table, shorten, shorten_names

__all__ = ["bayes_report", "bootstrap_report", "compare_report", "fit_repr", "fit_repr_html", "fit_report", "fmt_or",
           "header", "judges_text", "leaderboard_text", "strong_weight_note", "win_text"]

_TOP = 5  # candidates a result's repr shows


def _check_status(failed: list, flagged: bool) -> str:
    # "all passed" only when nothing is flagged: a flagged quantity is set by the ridge.
    if failed:
        return "FAILED" + ("; flags raised (! below)" if flagged else "")
    return "passed; flags raised (! below)" if flagged else "all passed"


def _ci_or(status, lo, hi, digits=2) -> str:
    return status if status and status != "ok" else fmt_ci(lo, hi, digits)


def header(result, ci: str = "sandwich") -> str:
    d = result.design
    checks = result.failed_checks()
    ident = result.identification_check(ci)
    lines = [
        f"{result.effective_spec.name} — {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges",
        f"reference judge: {d.judges[d.reference]}",
        f"objective {result.objective:.4f} · checks (B.3): {_check_status(checks, not ident['ok'])}",
    ]
    if d.report is not None:
        lines.append(f"data: {d.report.summary()}")
        lines += [f"note: {n}" for n in d.report.notes]
    lines += [f"note: {n}" for n in result.notes]
    lines += [f"warning: {c}" for c in checks]
    lines += [f"flag: {m}" for m in ident["messages"]]
    return "\n".join(textwrap.fill(line, 80, subsequent_indent="  ") for line in lines)


def leaderboard_text(result, ci: str = "sandwich") -> str:
    lb = result.leaderboard(ci)
    lb = lb.assign(score_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(lb.interval, lb.score_lo, lb.score_hi)],
                   q_ci=[_ci_or(x, lo, hi, 3) for x, lo, hi in zip(lb.interval, lb.q_field_lo, lb.q_field_hi)],
                   name=[("!" if f else "") + c for c, f in zip(lb.candidate, lb["flags"])])
    pct = int(round(100 * result.ci_prob))
    title = (f"Leaderboard ({pct}% CI, {CI_LABELS[ci]})\n"
             "score: average-judge logit (same for any reference judge); q: P(win) vs field")
    if lb["flags"].astype(bool).any():
        title += "\n" + textwrap.fill("! = flagged (see 'flag:' above): " + "; ".join(
            f"{c}: {f.replace(',', ', ')}" for c, f in zip(lb.candidate, lb["flags"]) if f), 80, subsequent_indent="  ")
    table = render_table(lb, [("rank", "rank", "d"), ("name", "candidate", ""), ("score", "score", ".3f"),
                              ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% CI", ""),
                              ("votes", "votes", "d")], name_col="name")
    return title + "\n" + table


def judges_text(result, ci: str = "sandwich") -> str:
    jt = result.judges(ci)
    status = result.status(ci)
    jt = jt.assign(kappa_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(status.kappa, jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(status.D, jt.D_lo, jt.D_hi)],
                   name=[("!" if f else "") + ("*" if r else "") + j for j, r, f in zip(jt.judge, jt.reference, jt["flags"])])
    cols = [("name", "judge (*=ref)", ""), ("n", "n", "d"), ("kappa", "κ", ".3f"), ("kappa_ci", "κ CI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D CI", "")]
    if jt["beta_len"].notna().any():
        cols.append(("beta_len", "β_len", ".2f"))
    if jt["beta_fam"].notna().any():
        cols.append(("beta_fam", "β_fam", ".2f"))
    title = "Judges (κ = γ·RMS(s): sensitivity; D = tanh(β_pos/2): first-slot preference)"
    if jt["flags"].astype(bool).any() or status.any_candidate_separated:
        ident = result.identification
        parts = []
        for k, (j, f) in enumerate(zip(jt.judge, jt["flags"])):
            if f:
                terms = ident.judge_flag_terms[k]
                detail = ", ".join(f"{flag} ({'/'.join(terms[flag])})" if flag in terms else flag for flag in f.split(","))
                parts.append(f"{j}: {detail}")
        if status.any_candidate_separated:
            parts.append("every κ: a separated score makes RMS(s) unbounded")
        title += "\n" + textwrap.fill("! = flagged (see 'flag:' above): " + "; ".join(parts), 80, subsequent_indent="  ")
    return title + "\n" + render_table(jt, cols, name_col="name")


def win_text(result, ci: str = "sandwich", max_matrix: int = 8) -> str:
    names = result.design.candidates
    order = np.argsort(-result.scores, kind="mergesort")
    parts = []
    pct = int(round(100 * result.ci_prob))
    if len(names) <= max_matrix:
        q = result.win_prob[np.ix_(order, order)]
        # Columns as wide as the names allow within the table width (at least 6, at most 24).
        rows = shorten_names([names[i] for i in order], 24)
        room = (TABLE_WIDTH - max(len(r) for r in rows) - 2) // len(names) - 2
        short = shorten_names([names[i] for i in order], max(6, min(room, 24)))
        frame = pd.DataFrame(q, columns=short)
        frame.insert(0, "row beats col", rows)
        cols = [("row beats col", "row beats col", "")] + [(c, c, ".2f") for c in short]
        parts.append("Win probability q_ij (average-sensitivity judge, biases at zero)\n" + render_table(frame, cols, width=200))
    status = result.status(ci)
    wm = result.win_matrix(ci)
    key = {(a, b): r for a, b, r in zip(wm.a, wm.b, range(len(wm)))}
    rows = []
    for x, y in zip(order[:-1], order[1:]):
        r = wm.iloc[key[(names[x], names[y])]]
        flag = status.pair(x, y)
        rows.append({"pair": f"{'!' if flag else ''}{shorten(names[x], 24)} > {shorten(names[y], 24)}", "q": r.q,
                     "ci": _ci_or(flag, r.q_lo, r.q_hi, 3)})
    adj = pd.DataFrame(rows)
    parts.append(f"Adjacent ranks ({pct}% CI, {CI_LABELS[ci]})\n"
                 + render_table(adj, [("pair", "pair", ""), ("q", "q", ".3f"), ("ci", f"{pct}% CI", "")], name_col="pair"))
    return "\n\n".join(parts)


def fit_report(result, ci: str = "sandwich") -> str:
    return "\n\n".join([header(result, ci), leaderboard_text(result, ci), judges_text(result, ci), win_text(result, ci)])


def fmt_or(value, spec: str, missing: str) -> str:
    """``format(value, spec)``, or ``missing`` for None/NaN (a diagnostic one chain cannot give)."""
    return missing if value is None or not np.isfinite(value) else format(value, spec)


def bootstrap_report(boot, scale: str = "logit", anchor=None) -> str:
    """``oscar bootstrap``'s text: percentile leaderboard on ``scale``, judges, rank distribution."""
    pct = int(round(100 * boot.ci_prob))
    lines = [header(boot.full)]
    lines.append(fill(f"prompt bootstrap: {boot.replicates} replicates (seed {boot.seed}); point estimates are "
                      "the full-data fit, intervals are bootstrap percentiles"))
    lines.append(boot.batch.failure_summary())
    clusters = boot.batch.failure_counts()["clusters"]
    if clusters:
        lines.append(f"({clusters} replicates have G ≤ dim θ distinct prompts: a sandwich caveat only, "
                     "not used by percentile intervals, not excluded)")
    lb = boot.leaderboard(scale=scale, anchor=anchor)
    digits = 1 if scale in ("elo", "winrate") else 2
    lb = lb.assign(score_ci=[fmt_ci(a, b, digits) for a, b in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(a, b, 3) for a, b in zip(lb.q_field_lo, lb.q_field_hi)],
                   rank_ci=[fmt_ci(a, b, 0) for a, b in zip(lb.rank_lo, lb.rank_hi)])
    lines += ["", f"Leaderboard ({pct}% bootstrap percentile CI; {scale_label(scale, lb.attrs.get('anchor'))}; "
                  "q: win prob. vs the field)",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""),
                                ("score", "score", ".1f" if scale in ("elo", "winrate") else ".3f"),
                                ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% CI", ""),
                                ("p_best", "P(best)", ".3f"), ("rank_ci", "rank CI", "")], name_col="candidate",
                           secondary=("q_ci", "q_field"))]
    jt = boot.judges()
    jt = jt.assign(name=[("*" if r else "") + j for j, r in zip(jt.judge, jt.reference)],
                   kappa_ci=[fmt_ci(a, b) for a, b in zip(jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[fmt_ci(a, b) for a, b in zip(jt.D_lo, jt.D_hi)],
                   fam_ci=[fmt_ci(a, b) for a, b in zip(jt.beta_fam_lo, jt.beta_fam_hi)],
                   len_ci=[fmt_ci(a, b) for a, b in zip(jt.beta_len_lo, jt.beta_len_hi)])
    cols = [("name", "judge (*=ref)", ""), ("kappa", "κ", ".3f"), ("kappa_ci", "κ CI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D CI", "")]
    if jt["beta_len"].notna().any():
        cols += [("beta_len", "β_len", ".2f"), ("len_ci", "CI", "")]
    if jt["beta_fam"].notna().any():
        cols += [("beta_fam", "β_fam", ".2f"), ("fam_ci", "CI", "")]
    lines += ["", f"Judges ({pct}% bootstrap percentile CI; κ = γ·RMS(s), D = tanh(β_pos/2))",
              render_table(jt, cols, name_col="name", secondary=("fam_ci", "len_ci", "D_ci"))]
    lines += ["", "Rank distribution P(rank = r) over valid replicates", _rank_text(boot.rank_distribution())]
    lines += [f"note: {n}" for n in boot.batch.notes if n not in boot.full.notes]
    return "\n".join(lines)


def _rank_text(rd: pd.DataFrame) -> str:
    ranks = [c for c in rd.columns if c.startswith("p_rank_") and not c.endswith("_mcse")]
    cols = [("candidate", "candidate", "")] + [(c, c.removeprefix("p_rank_"), ".2f") for c in ranks]
    return render_table(rd, cols + [("expected_rank", "E[rank]", ".2f")], name_col="candidate")


def bayes_report(result, ci_prob: float, scale: str = "logit", anchor=None) -> str:
    """``oscar bayes``'s text: the model that produced the numbers, sampler diagnostics, the posterior
    leaderboard on ``scale`` (on the point fit's scale, P(best) with its Monte Carlo SE), judges."""
    d = result.design
    diag = result.diagnostics
    pct = int(round(100 * ci_prob))
    pe = {"candidate": " + prompt × candidate effect", "slot": " + prompt slot shift"}.get(result.prompt_effect, "")
    lines = [
        f"Bayesian {result.effective_spec.name}{pe} — {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges",
    ]
    if diag.get("method") == "svi":
        lines += [f"reference judge: {shorten(d.judges[d.reference], 40)} · SVI {diag['guide']} guide · "
                  f"{diag['steps']} steps × {diag['batch_size']:,} of {diag['n_units']:,} cells · "
                  f"{diag['draws']} draws · seed {result.seed}",
                  f"ELBO: final loss {diag['final_loss']:.2f} · last-window change {diag['decrease_last_window']:.3g} "
                  f"(noise {diag['noise_se']:.3g}) · {'plateau' if diag['plateau'] else 'NOT CONVERGED'}"]
    else:
        lines += [f"reference judge: {shorten(d.judges[d.reference], 40)} · NUTS {diag['chains']} chains × "
                  f"({diag['warmup']} warm-up + {diag['draws']} draws) · seed {result.seed}",
                  f"diagnostics: max R-hat {fmt_or(diag['max_rhat'], '.4f', 'n/a (one chain)')} · "
                  f"min ESS {fmt_or(diag['min_ess'], '.0f', 'n/a')} · "
                  f"divergences {diag['divergences']} · {'ok' if diag['ok'] else 'POOR'}"]
    lines += [f"note: {n}" for n in result.notes]
    lines += [f"warning: {m}" for m in diag["messages"]]
    sig = result.sigma_prompt(ci_prob)
    if sig is not None:
        lines.append(f"prompt effect σ_u: {sig['mean']:.3f} {fmt_ci(sig['lo'], sig['hi'], 3)}")
    estimand = result.estimand()
    lines.append(f"model: {estimand['model']}; probabilities: {estimand['probabilities']}; "
                 f"± = Monte Carlo SE ({estimand['mcse']})")
    lb = result.leaderboard(ci_prob=ci_prob, scale=scale, anchor=anchor)
    digits = 1 if scale in ("elo", "winrate") else 2
    lb = lb.assign(score_ci=[fmt_ci(lo, hi, digits) for lo, hi in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(lo, hi, 3) for lo, hi in zip(lb.q_field_lo, lb.q_field_hi)],
                   p_best_se=[f"±{se:.3f}" if np.isfinite(se) else "" for se in lb.p_best_mcse])
    kind = CI_KIND_NAMES[result.ci_kind]
    on_fit = " on the point fit's scale" if result.prompt_effect else ""
    lines += ["", f"Leaderboard (posterior mean; {scale_label(scale, lb.attrs.get('anchor'))}{on_fit} with {pct}% "
                  f"{kind}; q: win prob. vs the field, {pct}% {kind})",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""),
                                ("score", "score", ".1f" if scale in ("elo", "winrate") else ".3f"),
                                ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% {kind}", ""),
                                ("p_best", "P(best)", ".3f"), ("p_best_se", "", "")], name_col="candidate")]
    jt = result.judges(ci_prob=ci_prob)
    jt = jt.assign(kappa_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[fmt_ci(lo, hi) for lo, hi in zip(jt.D_lo, jt.D_hi)],
                   name=[("*" if r else "") + j for j, r in zip(jt.judge, jt.reference)])
    cols = [("name", "judge (*=ref)", ""), ("n", "n", "d"), ("kappa", "κ", ".3f"), ("kappa_ci", f"κ {kind}", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", f"D {kind}", "")]
    lines += ["", "Judges (κ = γ·RMS(s): sensitivity; D = tanh(β_pos/2): net first-slot preference)",
              render_table(jt, cols, name_col="name")]
    return "\n".join(line if "\n" in line else fill(line) for line in lines)


def compare_report(res) -> str:
    """``oscar compare``'s text: held-out log loss per model and the paired-bootstrap differences."""
    lines = [fill(f"Held-out log loss — {res.n_records:,} records · {res.n_prompts:,} prompts · {res.folds} folds "
                  f"by prompt cluster (seed {res.seed}; identical folds for every model; lower is better)")]
    table = res.table()
    table = table.assign(shown=[("not estimable" if not res.estimable[m] else f"{v:.4f}")
                                for m, v in zip(table.model, table.log_loss)])
    lines.append(render_table(table, [("model", "model", ""), ("shown", "log loss", ""),
                                      ("fitted", "fitted as", ""), ("status", "status", "")]))
    for m in res.models:
        for n in res.notes[m]:
            lines.append(fill(f"note ({m}): {n}"))
    if res.differences is not None:
        pct = int(round(100 * res.ci_prob))
        d = res.differences.copy()
        d["pair"] = [f"{a} − {b}" for a, b in zip(d.a, d.b)]
        d["ci"] = [fmt_ci(lo, hi, 4) for lo, hi in zip(d.lo, d.hi)]
        d["star"] = ["*" if x else "" for x in d.excludes_zero]
        d["ok"] = [f"{v}/{r}" for v, r in zip(d.valid, d.replicates)]
        lines += ["", fill(f"Paired refit bootstrap (E.3): {res.paired_bootstrap} replicates, prompts resampled "
                           f"within each fold; {pct}% percentile CI; positive favours the second model; "
                           "* = CI excludes 0"),
                  render_table(d, [("pair", "difference", ""), ("estimate", "estimate", ".4f"), ("ci", f"{pct}% CI", ""),
                                   ("star", "", ""), ("ok", "valid", "")])]
        for m, n in res.bootstrap_failed.items():
            if n:
                lines.append(fill(f"note ({m}): {n} bootstrap refits failed a B.3 check; their replicates are "
                                  "excluded"))
    return "\n".join(lines)


def strong_weight_note(weight) -> str | None:
    """Why ``--strong-weight 3`` widens prompt-cluster intervals instead of narrowing them."""
    if weight is None or float(weight) == 1.0:
        return None
    return (f"--strong-weight {float(weight):g} counts each strong verdict (A>>B) as {float(weight):g} verdicts, but "
            "they are one judgment of one prompt: the prompt-cluster intervals keep the number of prompts and see "
            "more unequal weights, so they widen (fewer effective judgments). arena-hard's bootstrap treats the "
            "copies as independent, which narrows its intervals without new information.")


# ---------------------------------------------------------------------------------------
# A FitResult in the REPL and in notebooks: what a user looks at first (the model, the data
# size, the checks and the top of the board on the reference-free logit scale), where the
# dataclass default printed every array of the fit (24 KB on Chatbot Arena).
# ---------------------------------------------------------------------------------------

def _check_summary(result) -> str:
    failed = result.failed_checks()
    return "checks passed" if not failed else f"{len(failed)} check(s) FAILED"


def fit_repr(result) -> str:
    d = result.design
    x = np.asarray(result.targets.x)  # the estimates only: a repr computes no covariance
    top = ", ".join(f"{d.candidates[i]} {x[i]:+.3f}" for i in np.argsort(-x, kind="mergesort")[:_TOP])
    more = f", … ({d.n_cand - _TOP} more)" if d.n_cand > _TOP else ""
    notes = f", {len(result.notes)} note(s) in .notes" if result.notes else ""
    return (f"<FitResult {result.effective_spec.name}: {d.n_records:,} records, {d.n_clusters:,} prompts, "
            f"{d.n_cand} candidates, {d.n_judge} judges; {_check_summary(result)}{notes}; "
            f"top (average-judge logit): {top}{more}; see .leaderboard(), .judges(), .win_matrix()>")


def fit_repr_html(result) -> str:
    d = result.design
    e = html.escape
    lb = result.leaderboard()
    rows = "".join(
        f"<tr><td>{int(r)}</td><td style='text-align:left'>{e(str(c))}</td><td>{xi:.3f}</td>"
        f"<td>{q:.3f}</td><td>{int(v):,}</td></tr>"
        for r, c, xi, q, v in zip(lb["rank"], lb["candidate"], lb["score"], lb["q_field"], lb["votes"]))
    notes = "".join(f"<li>{e(str(n))}</li>" for n in result.notes)
    failed = "".join(f"<li><b>{e(f)}</b></li>" for f in result.failed_checks())
    return (
        f"<div><b>FitResult</b> {e(result.effective_spec.name)}: {d.n_records:,} records · {d.n_clusters:,} prompts · "
        f"{d.n_cand} candidates · {d.n_judge} judges · reference judge {e(d.judges[d.reference])} · "
        f"{e(_check_summary(result))}"
        f"<table><thead><tr><th>rank</th><th>candidate</th><th>score (average-judge logit)</th>"
        f"<th>q vs field</th><th>votes</th></tr></thead><tbody>{rows}</tbody></table>"
        + (f"<ul>{failed}</ul>" if failed else "") + (f"<ul>{notes}</ul>" if notes else "")
        + "<small>Intervals: .leaderboard(), .judges(), .win_matrix(); Elo: "
          "oscar_jax.arena_leaderboard(result, scale='elo')</small></div>"
    )
