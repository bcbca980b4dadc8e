"""Table 1: held-out log loss of the seven models on identical 3-fold prompt splits (Section 6.3, E.2).

One ``oscar_jax.compare(design, models, folds=3, seed)`` call per dataset (shared with
Table E2 when run from run_all.py). The Xu releases carry no response lengths: J+L is
not estimable, and BT+PLF, Davidson+PLF and OSCAR — whose published columns include the
length term — are reported as not estimable too; their fitted variants without L
(BT+P+F, Davidson+P+F, J+P+F) are listed separately, labelled, for reference only.
"""

from __future__ import annotations

import sys

import repro_common as rc

import pandas as pd  # noqa: E402

KEY = "table1_heldout"
TITLE = "2. Table 1: held-out log loss"


def _reason(model: str, spec_terms) -> str:
    base = "fold randomness (the paper's fold partition is unpublished)"
    if "fam" in spec_terms:
        base += "; family map (the paper's family table is unpublished)"
    return base


def run(ctx: rc.Context) -> rc.Section:
    from oscar_jax import parse_model

    pub = ctx.published["table1"]
    gain_pub = ctx.published["position_gain"]
    sec = rc.Section(KEY, TITLE)
    models = ctx.models()
    names = [parse_model(m).name for m in models]
    tol = pub["tolerance"]
    grid, extra, records = [], [], []
    for key in ctx.missing():
        for name in names:
            sec.rows.append(rc.row(KEY, name, pub["values"].get(rc.label(key), {}).get(name), None,
                                   dataset=rc.label(key), verdict=rc.VERDICT_SKIPPED, reason="data file not present"))
    for key in ctx.available():
        ds = rc.label(key)
        design = ctx.design(key)
        cr = ctx.compare(key, models=models)
        paper = pub["values"].get(ds, {})
        cells = {"dataset": ds}
        for m, name in zip(models, names):
            spec = parse_model(m)
            value = cr.log_loss[name]
            records.append({"dataset": ds, "model": name, "fitted": cr.fitted[name] if cr.estimable[name] else "",
                            "estimable": cr.estimable[name], "log_loss": value, "paper": paper.get(name),
                            "fold_log_loss": ";".join(f"{x:.5f}" for x in cr.fold_log_loss[name]),
                            "failed_fold_fits": cr.failed[name], "notes": " | ".join(cr.notes[name])})
            needs_length = "len" in spec.terms and not design.has_length
            if not cr.estimable[name] or needs_length:
                why = "needs response lengths (L); these data carry no texts or lengths"
                sec.rows.append(rc.row(KEY, name, paper.get(name), None, dataset=ds, verdict=rc.VERDICT_NE,
                                       reason=why))
                cells[name] = "not estimable"
                if cr.estimable[name]:
                    extra.append({"dataset": ds, "published column": name, "fitted without L": cr.fitted[name],
                                  "log loss (reference only)": value, "paper (with L)": paper.get(name)})
                continue
            flag = f" ({cr.failed[name]} fold fit(s) failed B.3)" if cr.failed[name] else ""
            cells[name] = f"{value:.4f}" + (f" ({paper[name]:.4f})" if name in paper else "") + flag
            if name in paper:
                sec.rows.append(rc.row(KEY, name, paper[name], value, dataset=ds, tol=tol,
                                       reason=_reason(name, spec.terms) + flag,
                                       headline=name in ("J", "J+P")))
            else:
                sec.rows.append(rc.row(KEY, name, None, value, dataset=ds, verdict=rc.VERDICT_OURS,
                                       reason="no published value"))
        grid.append(cells)
        if {"J", "J+P"} <= set(names) and {"J", "J+P"} <= set(paper):
            ours_gain = 100.0 * (cr.log_loss["J"] - cr.log_loss["J+P"]) / cr.log_loss["J"]
            paper_gain = 100.0 * (paper["J"] - paper["J+P"]) / paper["J"]
            sec.rows.append(rc.row(KEY, "J → J+P log-loss reduction, % (Section 6.3: 14–23%)", round(paper_gain, 1),
                                   ours_gain, dataset=ds, tol=gain_pub["tolerance_points"],
                                   reason=gain_pub["tolerance_reason"], digits=1))
    csv = sec.file(ctx, ctx.out / "table1_heldout.csv")
    pd.DataFrame(records).to_csv(csv, index=False)
    sec.add(f"3 folds of prompt clusters (seed {ctx.seed}), pooled out-of-fold mean log loss, predictions clipped to "
            "[1e-15, 1 − 1e-15], every model on the same folds (`oscar_jax.compare`). Cells: ours (paper).", "",
            rc.md_table(grid, ["dataset"] + names) if grid else "_(no dataset available)_", "")
    if extra:
        sec.add("Fitted variants without the length term — **not the paper's models**, shown for reference only "
                "(the published columns above are not estimable on these data):", "", rc.md_table(extra), "")
    return sec


def main(argv=None) -> int:
    return rc.standalone_main(run, argv, (__doc__ or "").splitlines()[0], KEY)


if __name__ == "__main__":
    sys.exit(main())
