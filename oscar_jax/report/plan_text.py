"""Text summary of a plan (``oscar plan``): what the batch is expected to buy, and where it goes."""

from __future__ import annotations

import pandas as pd

from .render import fill, render_table

__all__ = ["plan_text"]

def _label(quantity: str, a: str, b: str) -> str:
    return f"q({a} beats {b})" if quantity == "q" else f"{'κ' if quantity == 'kappa' else 'D'} {a}"


def _before_after(entry: dict) -> str:
    if entry["flag"]:
        return f"not determined ({entry['flag']})"
    return f"{entry['before']:.3f} → {entry['after']:.3f}"


def plan_text(summary: dict, batch: pd.DataFrame, out=None, head: int = 5) -> str:
    s = summary
    level = f"{100 * s['ci_prob']:g}%"
    where = {"new": "new prompt ids (new-1, …): put one fresh prompt in each",
             "prompt pool": "the least used prompts of the pool",
             "judgment pool": "the pool's judgments, on their least used prompts"}[s["prompts"]]
    lines = [f"oscar plan: target {s['target']}, model {s['model']}: {s['judgments']} judgments, cost {s['spent']:g} "
             f"of budget {s['budget']:g}", fill(f"prompts: {where}"), ""]
    p1, tau, top = s["p_top1"], s["kendall_tau"], s["top_pair"]
    width = (f"{top['width']:.3f} → {top['width_after']:.3f}" if not top["flag"]
             else f"not determined ({top['flag']})")
    lines += [
        "expected now → after the batch (at the current estimates; see docs/plan.md)",
        f"  P(correct top-1)         {_before_after(p1)}   (leader {p1['leader']})",
        f"  E[Kendall τ] vs truth    {_before_after(tau)}",
        f"  {level} interval width of q({top['a']} beats {top['b']}): {width}",
        "",
    ]
    rows = s["rows"].copy()
    rows["what"] = [_label(q, a, b) for q, a, b in zip(rows.quantity, rows.a, rows.b)]
    rows["flag"] = rows["flag"].fillna("")
    lines += [f"target quantities ({level} intervals, cluster sandwich)",
              render_table(rows, [("what", "quantity", ""), ("estimate", "estimate", ".3f"), ("lo", "lo", ".3f"),
                                  ("hi", "hi", ".3f"), ("width", "width now", ".3f"),
                                  ("width_after", "after", ".3f"), ("flag", "flag", "")], name_col="what"), ""]
    judges = s["by_judge"]
    lines += ["by judge (orders: the higher-scored candidate of the pair in slot A or in slot B)",
              render_table(judges, [("judge", "judge", ""), ("cost", "cost", "g"), ("judgments", "judgments", "d"),
                                    ("higher_first", "higher first", "d"), ("lower_first", "lower first", "d"),
                                    ("spent", "spent", "g")], name_col="judge"), ""]
    pairs = s["pairs"].head(10)
    more = len(s["pairs"]) - len(pairs)
    lines += [f"pairs ({len(s['pairs'])} chosen" + ("; first 10" if more > 0 else "") + ")",
              render_table(pairs, [("a", "a", ""), ("b", "b", ""), ("judgments", "judgments", "d")]), ""]
    lines += [fill(f"note: {n}") for n in s["notes"]]
    if out is not None:
        lines += ["", fill(f"batch: {len(batch)} judgments written to {out} in plan order (most valuable first); "
                           "fill 'outcome' with A, B or tie and fit it with the data")]
    else:
        lines += ["", f"batch (first {min(head, len(batch))} of {len(batch)}; --out FILE writes all):",
                  render_table(batch.head(head), [(c, c, "") for c in ("prompt", "candidate_a", "candidate_b", "judge")])]
    return "\n".join(lines)
