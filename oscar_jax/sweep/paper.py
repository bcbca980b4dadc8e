"""Our sweep next to the published Section 7 / Table G2 figures.

The paper's numbers are not here: they live once, in ``paper_repro/published.json``
(``section7.rows``), and are passed in.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PAPER_REPLICATES", "compare_with_paper"]

PAPER_REPLICATES = 100  # Section 7's study design: 100 replicates per setting (its SEs are unpublished)


def compare_with_paper(result, published) -> pd.DataFrame:
    """Our estimates next to the published Section 7 / Table G2 figures.

    ``published``: the rows of ``paper_repro/published.json``'s ``section7`` (quantity,
    method, n, c, rho, metric, value), the one copy of the paper's numbers. A list value
    is a [lo, hi] range over the main-setting N; a method "A-B" is a paired difference;
    coverage in %, top-1 as a count.

    ``z`` = (ours − paper) / SE of the difference of two independent Monte Carlo studies.
    The paper's figure is a 100-replicate mean whose SE is unpublished; with our SD it is
    about ours × √(n/100) for our n replicates, so the SE of the difference is
    ours × √(1 + n/100) (√2 when we also run 100). Top-1 counts become rates per 100 with
    binomial SEs of both studies (the paper's from its own rate), which stay finite when
    every one of our replicates recovers (or misses) the best candidate.
    ``value`` is our number (in the paper's units) and ``se_diff`` the SE of ours − paper.
    ``consistent`` = |z| ≤ 1.96. For a range the nearest end is used at each N, and the
    row reports the worst N. Rows whose setting or method was not run are omitted.
    """
    import pandas as pd  # (the sweep itself makes its tables without it)

    tab = result.table().set_index(["n", "c", "rho", "method"])
    rows = []

    def scale(metric):
        return 100.0 if metric.startswith("coverage") else 1.0

    for p in published:
        label, n, c, rho, method, metric, paper = (p["quantity"], p["n"], p["c"], p["rho"], p["method"],
                                                   p["metric"], p["value"])
        kind = "range" if isinstance(paper, (list, tuple)) else ("diff" if "-" in method else "value")
        if kind == "diff":
            a, b = method.split("-", 1)
            if a not in result.methods or b not in result.methods:
                continue
            d = result.differences(a, b)
            d = d[(d.n == n) & (d.c == c) & (d.rho == rho) & (d.metric == metric)]
            if d.empty:
                continue
            ours, se = float(d["diff"].iloc[0]), float(d.mcse.iloc[0])
            se_diff = se * _two_study_factor(int(d.n_pairs.iloc[0]))
            rows.append(_paper_row(label, method, ours, se, se_diff, paper,
                                   f"[{d.lo.iloc[0]:+.4f}, {d.hi.iloc[0]:+.4f}]"))
            continue
        if kind == "range":
            sub = [(key, r) for key, r in tab.iterrows() if key[1:] == (c, rho, method)]
            if not sub:
                continue
            lo, hi = paper
            worst = None
            for key, r in sub:
                ours, se = scale(metric) * r[metric], scale(metric) * r[f"{metric}_mcse"]
                target = min(max(ours, lo), hi)
                z = (ours - target) / (se * _two_study_factor(int(r.n_ok))) if se > 0 else 0.0
                if worst is None or abs(z) > abs(worst[0]):
                    worst = (z, key[0], ours, se)
            ours_text = ", ".join(f"{scale(metric) * r[metric]:.1f}" for _, r in sub)
            z, n_worst, ours, se = worst
            se_diff = se * _two_study_factor(int(sub[0][1].n_ok))
            rows.append({"quantity": label, "method": method, "ours": ours_text, "mcse": f"{se:.2f} (N={n_worst:,})",
                         "paper": f"{lo:g}–{hi:g}", "z": z, "consistent": abs(z) <= 1.96, "value": ours,
                         "se_diff": se_diff})
            continue
        key = (n, c, rho, method)
        if key not in tab.index:
            continue
        r = tab.loc[key]
        if metric == "top1":
            n_ok = max(int(r.n_ok), 1)
            share, p_paper = float(r.top1_count) / n_ok, paper / 100.0
            ours, se = 100.0 * share, 100.0 * math.sqrt(share * (1.0 - share) / n_ok)
            se_diff = 100.0 * math.sqrt(share * (1.0 - share) / n_ok + p_paper * (1.0 - p_paper) / PAPER_REPLICATES)
        else:
            ours, se = scale(metric) * float(r[metric]), scale(metric) * float(r[f"{metric}_mcse"])
            se_diff = se * _two_study_factor(int(r.n_ok))
        rows.append(_paper_row(label, method, ours, se, se_diff, paper, None))
    return pd.DataFrame(rows)


def _two_study_factor(n: int) -> float:
    """SE of (ours − paper) over our MC SE when the paper ran 100 replicates and we ran n."""
    return math.sqrt(1.0 + n / PAPER_REPLICATES)


def _paper_row(label, method, ours, se, se_diff, paper, interval):
    z = (ours - paper) / se_diff if se_diff > 0 else (0.0 if ours == paper else math.inf)
    digits = 1 if abs(paper) >= 10 else 4
    text = f"{ours:.{digits}f}" + (f" {interval}" if interval else "")
    return {"quantity": label, "method": method, "ours": text, "mcse": f"{se:.{digits}f}", "paper": f"{paper:g}",
            "z": z, "consistent": abs(z) <= 1.96, "value": ours, "se_diff": se_diff}
