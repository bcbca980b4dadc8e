"""Judge screening: bottom-three judges by κ under J and J+P, their overlap, and Figure 2 (Section 6.4).

κ_k = γ_k RMS(s) from the full-data J and J+P fits (``FitResult.kappa``); judges are
ranked from most (1) to least sensitive; the bottom-three sets of the two fits are
compared. Figure 2 (UltraFeedback) is drawn as a rank-change (slope) chart for every
dataset.
"""

from __future__ import annotations

import sys

import repro_common as rc

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

KEY = "judge_screening"
TITLE = "5. Judge screening: bottom-three judges by κ under J vs J+P (Figure 2)"


def _ranks(kappa: np.ndarray) -> np.ndarray:
    """1 = most sensitive."""
    return pd.Series(-np.asarray(kappa)).rank(method="first").to_numpy().astype(int)


def _slope_chart(tab: pd.DataFrame, ds: str, highlight: str | None, path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from oscar_jax.report.plots import OKABE_ITO
    from oscar_jax.report.render import shorten

    n = len(tab)
    fig = Figure(figsize=(7.2, 0.28 * n + 1.8), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for r in tab.itertuples():
        in_j, in_p = r.rank_J > n - 3, r.rank_JP > n - 3
        colour = OKABE_ITO[6] if (in_j and not in_p) else OKABE_ITO[5] if (in_p and not in_j) else \
            OKABE_ITO[0] if (in_j and in_p) else "0.7"
        width = 2.2 if (highlight and highlight.lower() in r.judge.lower()) else 1.2
        ax.plot([0, 1], [r.rank_J, r.rank_JP], color=colour, linewidth=width, marker="o", markersize=3)
        name = shorten(r.judge.split("/")[-1], 30)
        ax.text(-0.03, r.rank_J, f"{name}  κ={r.kappa_J:.3f}", ha="right", va="center", fontsize=6.5, color=colour)
        ax.text(1.03, r.rank_JP, f"κ={r.kappa_JP:.3f}  {name}", ha="left", va="center", fontsize=6.5, color=colour)
    ax.axhline(n - 2.5, color="0.5", linestyle=":", linewidth=1)
    ax.set_xlim(-1.05, 2.05)
    ax.set_ylim(n + 0.7, 0.3)
    ax.set_xticks([0, 1], ["J (no position)", "J+P"])
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{ds}: judge rank by κ (1 = most sensitive); below the dotted line = bottom three\n"
                 "vermilion: bottom three only under J; blue: only under J+P; black: both", fontsize=8.5)
    fig.savefig(path, format="png")


def screening_rows(ds: str, tab: pd.DataFrame, pub: dict) -> list[dict]:
    """Verdict rows of the judge screen from the per-judge κ and ranks under J and J+P (``tab``).

    Full-data fits are deterministic: sets and ranks must match exactly, κ within half a
    unit of the printed digit. A J+P fit that lost its position term would equal J: the
    overlap would be 3 of 3 (not discriminating where the paper's is 3 of 3) and
    Mixtral's κ under J+P would be its κ under J.
    """
    rows = []
    n = len(tab)
    overlap = len(set(tab.judge[tab.rank_J > n - 3]) & set(tab.judge[tab.rank_JP > n - 3]))
    if ds in pub["bottom_three_overlap"]:
        rows.append(rc.row(KEY, "bottom-three overlap J vs J+P (of 3)", pub["bottom_three_overlap"][ds], overlap,
                           dataset=ds, noise=rc.exact("full-data fits; sets must agree exactly"),
                           alternatives={"position removed from J+P (the same set)": 3}, headline=True))
    hl = pub["highlight"]
    if ds == hl["dataset"]:
        hit = tab[tab.judge.str.contains(hl["judge"], case=False, regex=False)]
        if len(hit) == 1:
            r = hit.iloc[0]
            half = rc.rounding_only(pub["tolerance_kappa"], pub["tolerance_reason"])
            exact = rc.exact("rank among the judges")
            rows += [
                rc.row(KEY, f"{hl['judge']}: κ under J", hl["kappa_J"], float(r.kappa_J), dataset=ds, noise=half,
                       alternatives={"κ under J+P": hl["kappa_JP"]}, digits=3, headline=True),
                rc.row(KEY, f"{hl['judge']}: κ under J+P", hl["kappa_JP"], float(r.kappa_JP), dataset=ds, noise=half,
                       alternatives={"κ under J (position removed)": hl["kappa_J"]}, digits=3, headline=True),
                rc.row(KEY, f"{hl['judge']}: rank under J (of {n})", hl["rank_J"], int(r.rank_J), dataset=ds,
                       noise=exact),
                rc.row(KEY, f"{hl['judge']}: rank under J+P (of {n})", hl["rank_JP"], int(r.rank_JP), dataset=ds,
                       noise=exact, alternatives={"rank under J (position removed)": hl["rank_J"]}),
            ]
    return rows


def run(ctx: rc.Context) -> rc.Section:
    pub = ctx.published["screening"]
    hl = pub["highlight"]
    sec = rc.Section(KEY, TITLE)
    summary, all_tabs = [], []
    for key in ctx.missing():
        ds = rc.label(key)
        if ds in pub["bottom_three_overlap"]:
            sec.rows.append(rc.row(KEY, "bottom-three overlap J vs J+P (of 3)", pub["bottom_three_overlap"][ds], None,
                                   dataset=ds, verdict=rc.VERDICT_SKIPPED, reason="data file not present"))
    for key in ctx.available():
        ds = rc.label(key)
        j, jp = ctx.fit(key, "j"), ctx.fit(key, "j+p")
        tab = pd.DataFrame({"judge": list(j.design.judges), "kappa_J": j.kappa, "kappa_JP": jp.kappa,
                            "rank_J": _ranks(j.kappa), "rank_JP": _ranks(jp.kappa)})
        n = len(tab)
        bottom_j = set(tab.judge[tab.rank_J > n - 3])
        bottom_p = set(tab.judge[tab.rank_JP > n - 3])
        overlap = len(bottom_j & bottom_p)
        short = lambda s: ", ".join(sorted(x.split("/")[-1] for x in s))  # noqa: E731
        summary.append({"dataset": ds, "judges": n, "bottom three under J": short(bottom_j),
                        "bottom three under J+P": short(bottom_p), "overlap": f"{overlap}/3",
                        "paper": f"{pub['bottom_three_overlap'][ds]}/3" if ds in pub["bottom_three_overlap"] else "–"})
        if ctx.design(key).has_length:
            # With response lengths the full model is estimable: screen on OSCAR's κ as well.
            full = ctx.fit(key, "oscar")
            tab["kappa_OSCAR"], tab["rank_OSCAR"] = full.kappa, _ranks(full.kappa)
            bottom_o = set(tab.judge[tab.rank_OSCAR > n - 3])
            summary[-1]["bottom three under OSCAR"] = short(bottom_o)
            sec.rows.append(rc.row(KEY, "bottom-three overlap J vs OSCAR (of 3)", None, len(bottom_j & bottom_o),
                                   dataset=ds, verdict=rc.VERDICT_OURS,
                                   reason="full model with response lengths; the paper screens J vs J+P only"))
            sec.rows.append(rc.row(KEY, "bottom-three overlap J+P vs OSCAR (of 3)", None, len(bottom_p & bottom_o),
                                   dataset=ds, verdict=rc.VERDICT_OURS,
                                   reason="does adding length and family terms change the screen beyond position?"))
        all_tabs.append(tab.assign(dataset=ds))
        sec.rows += screening_rows(ds, tab, pub)
        png = sec.file(ctx, ctx.out / (f"fig2_rank_change_{key}.png"))
        _slope_chart(tab, ds, hl["judge"] if ds == hl["dataset"] else None, png)
    if all_tabs:
        csv = sec.file(ctx, ctx.out / "judge_screening.csv")
        pd.concat(all_tabs, ignore_index=True).to_csv(csv, index=False)
    sec.add("κ_k = γ_k·RMS(s) from the full-data J and J+P fits; rank 1 = most sensitive. "
            "Figure 2 of the paper is `fig2_rank_change_ultrafeedback.png`.", "",
            rc.md_table(summary) if summary else "_(no dataset available)_")
    return sec


def main(argv=None) -> int:
    return rc.standalone_main(run, argv, (__doc__ or "").splitlines()[0], KEY)


if __name__ == "__main__":
    sys.exit(main())
