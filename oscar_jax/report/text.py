"""Human-readable reports (80-column text) of fits, bootstraps, posteriors and held-out comparisons."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from ..results.intervals import CI_KIND_NAMES
from .render import TABLE_WIDTH, fill, fmt_ci, render_table, shorten, shorten_names
from ..results.fit import FitResult
from .scales import on_scale, scale_label

__all__ = ["bayes_report", "bootstrap_report", "compare_report", "fit_report", "fmt_or", "header", "leaderboard_text", "judges_text",
           "win_text"]

_CI_NAME = {"sandwich": "prompt-cluster sandwich",
            "model": "model-based: assumes independent records; too narrow under prompt dependence"}


def _check_status(failed: list, flagged: bool) -> str:
    # "all passed" only when nothing is flagged: a flagged quantity is set by the ridge.
    if failed:
        return "FAILED" + ("; flags raised (! below)" if flagged else "")
    return "passed; flags raised (! below)" if flagged else "all passed"


def _ci_or(status, lo, hi, digits=2) -> str:
    return status if status else fmt_ci(lo, hi, digits)


def header(result: FitResult, ci: str = "sandwich") -> str:
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


def leaderboard_text(result: FitResult, ci: str = "sandwich") -> str:
    from ..infer.identification import interval_status

    lb = result.leaderboard(ci)
    status = dict(zip(result.design.candidates, interval_status(result, ci)["candidates"]))
    st = [status[c] for c in lb.candidate]
    lb = lb.assign(score_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(st, lb.score_lo, lb.score_hi)],
                   q_ci=[_ci_or(x, lo, hi, 3) for x, lo, hi in zip(st, lb.q_field_lo, lb.q_field_hi)],
                   name=[("!" if f else "") + c for c, f in zip(lb.candidate, lb["flags"])])
    pct = int(round(100 * result.ci_prob))
    title = (f"Leaderboard ({pct}% CI, {_CI_NAME[ci]})\n"
             "score: average-judge logit (same for any reference judge); q: P(win) vs field")
    if lb["flags"].astype(bool).any():
        title += "\n" + textwrap.fill("! = flagged (see 'flag:' above): " + "; ".join(
            f"{c}: {f.replace(',', ', ')}" for c, f in zip(lb.candidate, lb["flags"]) if f), 80, subsequent_indent="  ")
    table = render_table(lb, [("rank", "rank", "d"), ("name", "candidate", ""), ("score", "score", ".3f"),
                              ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% CI", ""),
                              ("votes", "votes", "d")], name_col="name")
    return title + "\n" + table


def judges_text(result: FitResult, ci: str = "sandwich") -> str:
    from ..infer.identification import interval_status

    jt = result.judges(ci)
    status = interval_status(result, ci)
    jt = jt.assign(kappa_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(status["kappa"], jt.kappa_lo, jt.kappa_hi)],
                   D_ci=[_ci_or(x, lo, hi) for x, lo, hi in zip(status["D"], jt.D_lo, jt.D_hi)],
                   name=[("!" if f else "") + ("*" if r else "") + j for j, r, f in zip(jt.judge, jt.reference, jt["flags"])])
    cols = [("name", "judge (*=ref)", ""), ("n", "n", "d"), ("kappa", "κ", ".3f"), ("kappa_ci", "κ CI", "")]
    if jt["D"].notna().any():
        cols += [("D", "D", ".2f"), ("D_ci", "D CI", "")]
    if jt["beta_len"].notna().any():
        cols.append(("beta_len", "β_len", ".2f"))
    if jt["beta_fam"].notna().any():
        cols.append(("beta_fam", "β_fam", ".2f"))
    title = "Judges (κ = γ·RMS(s): sensitivity; D = tanh(β_pos/2): first-slot preference)"
    if jt["flags"].astype(bool).any() or status["any_candidate_separated"]:
        ident = result.identification
        parts = []
        for k, (j, f) in enumerate(zip(jt.judge, jt["flags"])):
            if f:
                terms = ident.judge_flag_terms[k]
                detail = ", ".join(f"{flag} ({'/'.join(terms[flag])})" if flag in terms else flag for flag in f.split(","))
                parts.append(f"{j}: {detail}")
        if status["any_candidate_separated"]:
            parts.append("every κ: a separated score makes RMS(s) unbounded")
        title += "\n" + textwrap.fill("! = flagged (see 'flag:' above): " + "; ".join(parts), 80, subsequent_indent="  ")
    return title + "\n" + render_table(jt, cols, name_col="name")


def win_text(result: FitResult, ci: str = "sandwich", max_matrix: int = 8) -> str:
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
    from ..infer.identification import interval_status

    status = dict(zip(names, interval_status(result, ci)["candidates"]))
    wm = result.win_matrix(ci)
    key = {(a, b): r for a, b, r in zip(wm.a, wm.b, range(len(wm)))}
    rows = []
    for x, y in zip(order[:-1], order[1:]):
        r = wm.iloc[key[(names[x], names[y])]]
        flag = status[names[x]] or status[names[y]]
        rows.append({"pair": f"{'!' if flag else ''}{shorten(names[x], 24)} > {shorten(names[y], 24)}", "q": r.q,
                     "ci": _ci_or(flag, r.lo, r.hi, 3)})
    adj = pd.DataFrame(rows)
    parts.append(f"Adjacent ranks ({pct}% CI, {_CI_NAME[ci]})\n"
                 + render_table(adj, [("pair", "pair", ""), ("q", "q", ".3f"), ("ci", f"{pct}% CI", "")], name_col="pair"))
    return "\n\n".join(parts)


def fit_report(result: FitResult, ci: str = "sandwich") -> str:
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
    board, lb = on_scale(boot, scale, anchor)
    digits = 1 if scale in ("elo", "winrate") else 2
    lb = lb.assign(score_ci=[fmt_ci(a, b, digits) for a, b in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(a, b, 3) for a, b in zip(lb.q_field_lo, lb.q_field_hi)],
                   rank_ci=[fmt_ci(a, b, 0) for a, b in zip(lb.rank_lo, lb.rank_hi)])
    lines += ["", f"Leaderboard ({pct}% bootstrap percentile CI; {scale_label(scale, board.attrs.get('anchor'))}; "
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
    rd = boot.rank_distribution()
    rank_cols = [c for c in rd.columns if c.startswith("p_rank_")]
    cols = [("candidate", "candidate", "")] + [(c, c.removeprefix("p_rank_"), ".2f") for c in rank_cols]
    lines += ["", "Rank distribution P(rank = r) over valid replicates",
              render_table(rd, cols + [("expected_rank", "E[rank]", ".2f")], name_col="candidate")]
    lines += [f"note: {n}" for n in boot.batch.notes if n not in boot.full.notes]
    return "\n".join(lines)


def bayes_report(result, ci_prob: float, scale: str = "logit", anchor=None) -> str:
    """``oscar bayes``'s text: sampler diagnostics, posterior leaderboard on ``scale``, judges."""
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
    board, lb = on_scale(result, scale, anchor, ci_prob)
    digits = 1 if scale in ("elo", "winrate") else 2
    lb = lb.assign(score_ci=[fmt_ci(lo, hi, digits) for lo, hi in zip(lb.score_lo, lb.score_hi)],
                   q_ci=[fmt_ci(lo, hi, 3) for lo, hi in zip(lb.q_field_lo, lb.q_field_hi)])
    kind = CI_KIND_NAMES[result.ci_kind]
    lines += ["", f"Leaderboard (posterior mean; {scale_label(scale, board.attrs.get('anchor'))} with {pct}% "
                  f"equal-tailed interval; q: win prob. vs the field, {pct}% {kind})",
              render_table(lb, [("rank", "rank", "d"), ("candidate", "candidate", ""),
                                ("score", "score", ".1f" if scale in ("elo", "winrate") else ".3f"),
                                ("score_ci", f"{pct}% CI", ""), ("q_field", "q", ".3f"), ("q_ci", f"{pct}% {kind}", ""),
                                ("p_best", "P(best)", ".3f")], name_col="candidate")]
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
