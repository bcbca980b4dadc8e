"""Table C1: analysis sample sizes after preprocessing, and exact-swap groups (Appendix C.1, C.3).

Loads every available dataset with ``oscar_jax.load_judgments`` (which drops the Xu
releases' 'unknown' verdicts, counted) and ``build_design``, and counts judgments,
prompt clusters, candidates and judges next to Table C1; exact-swap groups are counted
with ``oscar_jax.swaps.find_swap_groups`` (responses identified by candidate).
"""

from __future__ import annotations

import sys

import repro_common as rc

KEY = "data_table_c1"
TITLE = "0. Data: Table C1 sample sizes and exact-swap groups"


def count_rows(name: str, ours: dict, paper: dict, why: str, *, subset: bool = False) -> list[dict]:
    """Table C1 counts and the exact-swap counts: deterministic preprocessing, so they must match exactly."""
    rows = []
    for q in ("judgments", "prompts", "candidates", "judges"):
        rows.append(rc.row(KEY, q, paper.get(q), ours[q], dataset=name, noise=rc.exact(),
                           verdict=rc.VERDICT_OURS if subset else None, reason=why,
                           headline=(q == "judgments" and not subset)))
    for q in ("swap_groups", "swap_records"):
        if q in paper:
            rows.append(rc.row(KEY, q.replace("_", " "), paper[q], ours[q], dataset=name, noise=rc.exact(),
                               reason="groups matched by candidate here, by response text in the paper (C.3)"))
    return rows


def run(ctx: rc.Context) -> rc.Section:
    from oscar_jax.swaps import find_swap_groups

    pub = ctx.published["table_c1"]
    sec = rc.Section(KEY, TITLE)
    subset = ctx.max_prompts is not None
    why = pub["tolerance_reason"] if not subset else "prompt subset (--max-prompts): counts are not comparable"
    summary = []
    for key in rc.DATASETS:
        name = rc.label(key)
        paper = pub["rows"].get(name, {})
        if ctx.datasets is not None and key not in ctx.datasets:
            continue
        if ctx.dataset_path(key) is None:
            for q in ("judgments", "prompts", "candidates", "judges"):
                sec.rows.append(rc.row(KEY, q, paper.get(q), None, dataset=name, verdict=rc.VERDICT_SKIPPED,
                                       reason="data file not present (not redistributable / not released offline)"))
            continue
        frame, report = ctx.frame(key)
        design = ctx.design(key)
        groups = find_swap_groups(frame)
        ours = {"judgments": design.n_records, "prompts": design.n_clusters, "candidates": design.n_cand,
                "judges": design.n_judge, "swap_groups": groups.attrs["n_groups"],
                "swap_records": groups.attrs["n_records"]}
        summary.append({"dataset": name, **ours, "loader": report.summary()})
        sec.rows += count_rows(name, ours, paper, why, subset=subset)
    sec.add("Counts after the documented preprocessing; `loader` is the `LoadReport` of `oscar_jax.load_judgments`. "
            "Exact-swap groups (same judge, prompt and candidate pair in both display orders; "
            "`oscar_jax.swaps.find_swap_groups`, ties dropped) — the Xu MT-Bench, UltraFeedback and Chatbot Arena "
            "releases have none, so the swap calibration of Section 6.2 needs the In-House data.", "",
            rc.md_table(summary))
    return sec


def main(argv=None) -> int:
    return rc.standalone_main(run, argv, (__doc__ or "").splitlines()[0], KEY)


if __name__ == "__main__":
    sys.exit(main())
