"""Table E2: paired refit-bootstrap differences of held-out log loss with percentile CIs (Appendix E.3).

``oscar_jax.compare(..., paired_bootstrap=R, pairs=[J:J+P, J+P:OSCAR, BT+PLF:OSCAR])``:
prompt clusters are resampled within each fixed fold, both models of a contrast are
refitted on the same resampled training folds and scored on the same resampled test
folds; the interval is the 2.5/97.5 percentiles of R paired differences (R = 200 as in
the paper; 20 with --quick). Positive differences favour the second model.
"""

from __future__ import annotations

import sys

import repro_common as rc

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

KEY = "table_e2_bootstrap"
TITLE = "3. Table E2: paired refit-bootstrap differences"


def run(ctx: rc.Context) -> rc.Section:
    from oscar_jax import parse_model
    from table1_heldout import load_spread, seed_sd, spread_tolerance

    pub = ctx.published["table_e2"]
    claims = ctx.published["claims"]
    spread = load_spread().get("datasets", {})
    all_valid = {}
    sec = rc.Section(KEY, TITLE)
    reps = ctx.reps("e2")
    tol = pub["tolerance"]
    shown, records = [], []
    for key in ctx.missing():
        for p in pub["rows"]:
            if p["dataset"] == rc.label(key):
                sec.rows.append(rc.row(KEY, f"{p['a']} − {p['b']}", p["estimate"], None, dataset=p["dataset"],
                                       verdict=rc.VERDICT_SKIPPED, reason="data file not present"))
    for key in ctx.available():
        ds = rc.label(key)
        design = ctx.design(key)
        cr = ctx.compare(key, need_bootstrap=True)
        diffs = cr.differences
        published = {(p["a"], p["b"]): p for p in pub["rows"] if p["dataset"] == ds}
        for rec in diffs.itertuples():
            a, b = rec.a, rec.b
            all_valid[ds] = all_valid.get(ds, True) and int(rec.valid) == int(rec.replicates)
            needs_len = [m for m in (a, b) if "len" in parse_model(m).terms and not design.has_length]
            fitted = f"{cr.fitted[a]} − {cr.fitted[b]}"
            label = f"{a} − {b}" + (f" [fitted {fitted}: no L, reference only]" if needs_len else "")
            ci = f"({rec.lo:+.4f}, {rec.hi:+.4f})"
            star = "*" if rec.excludes_zero else ""
            p = published.get((a, b))
            shown.append({"dataset": ds, "difference": label, "estimate": f"{rec.estimate:.4f}{star}",
                          "percentile 95% CI": ci, "valid/replicates": f"{rec.valid}/{rec.replicates}",
                          "paper": (f"{p['estimate']:.4f}{'*' if p['excludes_zero'] else ''} "
                                    f"({p['lo']:+.4f}, {p['hi']:+.4f})") if p else "–"})
            records.append({"dataset": ds, "a": a, "b": b, "fitted_a": cr.fitted[a], "fitted_b": cr.fitted[b],
                            "estimate": rec.estimate, "lo": rec.lo, "hi": rec.hi, "excludes_zero": rec.excludes_zero,
                            "valid": rec.valid, "replicates": rec.replicates,
                            "paper_estimate": p["estimate"] if p else None, "paper_lo": p["lo"] if p else None,
                            "paper_hi": p["hi"] if p else None})
            if p is None:
                sec.rows.append(rc.row(KEY, f"{a} − {b}", None, float(rec.estimate), dataset=ds,
                                       verdict=rc.VERDICT_OURS, reason="no published row for this dataset"))
                continue
            if needs_len:
                sec.rows.append(rc.row(KEY, f"{a} − {b}", p["estimate"], None, dataset=ds, verdict=rc.VERDICT_NE,
                                       reason=f"{' and '.join(needs_len)} need(s) response lengths (L); "
                                              f"the without-L analogue {fitted} is shown for reference only"))
                continue
            an, bn = parse_model(a).name, parse_model(b).name
            sd, n_seeds = seed_sd(spread.get(ds), an, bn)
            est_tol = spread_tolerance(sd)
            if est_tol is None:
                sec.rows.append(rc.row(KEY, f"{a} − {b}: estimate", p["estimate"], float(rec.estimate), dataset=ds,
                                       tol=tol, reason="no measured fold-seed spread: " + pub["tolerance_reason"],
                                       headline=True))
            else:
                sec.rows.append(rc.row(KEY, f"{a} − {b}: estimate", p["estimate"], float(rec.estimate), dataset=ds,
                                       tol=est_tol, headline=True,
                                       reason=f"3·√2 × fold-seed SD of the difference {sd:.4f} ({n_seeds} seeds) + "
                                              "rounding"))
                # Endpoints: fold randomness shifts the interval; each study's percentile has its own
                # Monte Carlo error (ours from `reps` replicates, the paper's from 200).
                boot_sd = (rec.hi - rec.lo) / 3.92
                mc = np.hypot(rc.percentile_mc_se(boot_sd, reps), rc.percentile_mc_se(boot_sd, pub["replicates"]))
                end_tol = round(3.0 * float(np.sqrt(2.0 * sd ** 2 + mc ** 2)) + 0.00005, 4)
                why = (f"3 × √(2·fold-seed SD² + percentile MC SE²): fold SD {sd:.4f}, MC SE {mc:.4f} "
                       f"({reps} and {pub['replicates']} replicates)")
                for end, ours_v in (("lo", rec.lo), ("hi", rec.hi)):
                    sec.rows.append(rc.row(KEY, f"{a} − {b}: 95% CI {'lower' if end == 'lo' else 'upper'}", p[end],
                                           float(ours_v), dataset=ds, tol=end_tol, reason=why))
            sec.rows.append(rc.row(KEY, f"{a} − {b}: 95% CI excludes zero", bool(p["excludes_zero"]),
                                   bool(rec.excludes_zero), dataset=ds,
                                   reason=f"{reps} replicates" + (" (quick)" if ctx.quick else "")))
    for ds, ok in all_valid.items():
        sec.rows.append(rc.row(KEY, "all E.3 bootstrap fits pass B.3 (stationary, connected)",
                               "yes" if claims["e3_bootstrap_fits_stationary"] else "no", "yes" if ok else "no",
                               dataset=ds, reason=f"{claims['e3_text']}; ours: every fold fit of every replicate "
                                                  f"passed all B.3 point checks ({reps} replicates)"))
    csv = sec.file(ctx, ctx.out / "table_e2_bootstrap.csv")
    pd.DataFrame(records).to_csv(csv, index=False)
    quick = (f" **Quick run: {reps} replicates instead of the paper's {pub['replicates']}**, so the percentile "
             "intervals are rough.") if reps < pub["replicates"] else ""
    sec.add(f"{reps} paired refit-bootstrap replicates within the fixed Table 1 folds (seed {ctx.seed}); "
            "* = the 95% percentile interval excludes zero; `valid` counts replicates whose fold fits all passed the "
            "B.3 point-estimate checks." + quick
            + (" The bootstrap runs inside Table 1's `compare` call (same folds), so its time is counted there."
               if ctx.share_compare else ""), "", rc.md_table(shown) if shown else "_(no dataset available)_")
    return sec


def main(argv=None) -> int:
    return rc.standalone_main(run, argv, (__doc__ or "").splitlines()[0], KEY)


if __name__ == "__main__":
    sys.exit(main())
