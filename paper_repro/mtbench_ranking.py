"""MT-Bench: rankings under J, J+P and OSCAR against the human votes (Section 6.4, Appendix F, Table F1).

The human reference ranking is our own Bradley–Terry fit of the 1,689 first-turn MT-Bench
human votes (F.2: ties ½, ridge 0.05; ``oscar_jax.human``); the LLM models are the
full-data fits with response lengths joined from FastChat's answer files (OSCAR has its
length term). Table F1: held-out human-vote log loss with scores fixed at the full-data
LLM fits, (α₀, α₁) calibrated on 4 of 5 prompt groups, and a prompt bootstrap that
applies the same prompt counts to the LLM judgments and the votes
(``oscar_jax.human.human_agreement``).
"""

from __future__ import annotations

import sys

import repro_common as rc

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

KEY = "mtbench_ranking"
TITLE = "6. MT-Bench rankings vs human votes (Section 6.4, Table F1)"
MODELS = (("j", "J"), ("j+p", "J+P"), ("oscar", "OSCAR"))
GROUP_SEEDS = 20  # prompt-group partitions for the spread of the F.3 point values


def partition_spread(design, vframe, res) -> dict:
    """F.3 held-out loss of each model (and the J+P gain) over GROUP_SEEDS prompt-group partitions.

    The paper's five prompt groups are unpublished: this is the noise of a Table F1 point
    value that comes from the partition alone (the scores stay at the full-data fits).
    """
    from oscar_jax.bootstrap import prompt_folds
    from oscar_jax.human import heldout_log_loss

    cands = list(design.candidates)
    ia = np.array([cands.index(c) for c in vframe.candidate_a])
    ib = np.array([cands.index(c) for c in vframe.candidate_b])
    y, w = vframe.outcome.to_numpy(float), vframe.weight.to_numpy(float)
    prompt_index = {p: i for i, p in enumerate(design.prompts)}
    vprompt = vframe.prompt.map(prompt_index).to_numpy(int)
    voted = np.unique(vprompt)
    out = {}
    for token, _ in MODELS:
        s = res.scores[token].reindex(cands).to_numpy()
        vals = []
        for gs in range(GROUP_SEEDS):
            g = np.full(design.n_clusters, -1)
            g[voted] = prompt_folds(len(voted), res.n_groups, gs)
            vals.append(float(heldout_log_loss(s[ia] - s[ib], y, w, g[vprompt])[0]))
        out[token] = np.array(vals)
    out["gain"] = out["j"] - out["j+p"]
    return out


def ranking_rows(res, pub: dict, f1: dict) -> list[dict]:
    """Section 6.4 ranking checks: exact orders, top candidates and Spearman values (discrete: 1 − 6Σd²/210)."""
    human = list(res.human.candidate)
    rows = [rc.row(KEY, "human reference ranking (F.2 Bradley–Terry fit of the votes)", " > ".join(pub["human_order"]),
                   " > ".join(human), dataset="MT-Bench",
                   reason="exact order; the paper's is the order J+P and OSCAR match (Section 6.4)", headline=True),
            rc.row(KEY, "human votes used (F.1)", f1["n_votes"], res.n_votes, dataset="MT-Bench",
                   noise=rc.exact())]
    spearman_noise = rc.rounding_only(pub["tolerance"], pub["tolerance_reason"])
    for token, name in MODELS:
        top = res.scores[token].idxmax()
        rows.append(rc.row(KEY, f"top candidate ({name})", pub["top"][name], top, dataset="MT-Bench",
                           reason="full-data fit", headline=True))
        others = {f"{n}'s published value": v for n, v in pub["spearman"].items() if n != name}
        rows.append(rc.row(KEY, f"Spearman with human ranking ({name})", pub["spearman"][name], res.spearman[token],
                           dataset="MT-Bench", noise=spearman_noise, alternatives=others, digits=3, headline=True))
    return rows


def f1_rows(res, spread: dict, f1: dict, reps: int) -> tuple[list[dict], list[dict]]:
    """Table F1 verdict rows and the displayed table.

    The point value compared is the mean over GROUP_SEEDS partitions (ours) against the
    paper's one partition: the SD of the difference is SD_partition × √(1 + 1/GROUP_SEEDS).
    A point value must exclude the other models' published losses (J vs J+P are 0.0083
    apart; J+P vs OSCAR 0.0002, so those two cannot be told apart); the gain must exclude
    zero; an endpoint must exclude a zero-width interval at the estimate and carries both
    studies' percentile Monte Carlo SE (ours from ``reps`` replicates, the paper's from 200).
    """
    names = dict(MODELS)
    rows, table = [], []
    factor = float(np.sqrt(1.0 + 1.0 / GROUP_SEEDS))
    for token, name in MODELS:
        paper = f1["values"][name]
        vals = spread[token]
        sd = float(np.std(vals, ddof=1))
        lo, hi = res.intervals.get(token, (np.nan, np.nan))
        bsd = (hi - lo) / 3.92 if np.isfinite(lo) else np.nan
        point = rc.Noise(sd * factor, f"SD {sd:.4f} of the held-out loss over {GROUP_SEEDS} prompt-group partitions "
                                      f"× √(1 + 1/{GROUP_SEEDS}): ours is their mean, the paper's one partition",
                         rounding=0.00005)
        others = {f"{names[t]}'s published loss": f1["values"][names[t]][0] for t, _ in MODELS if t != token}
        rows.append(rc.row(KEY, f"Table F1 human-vote log loss ({name}), mean over {GROUP_SEEDS} partitions",
                           paper[0], float(vals.mean()), dataset="MT-Bench", noise=point, alternatives=others,
                           reason=f"seed-0 partition: {res.log_loss[token]:.4f}", headline=name == "J+P"))
        if np.isfinite(lo):
            mc = float(np.hypot(rc.percentile_mc_se(bsd, reps), rc.percentile_mc_se(bsd, 200)))
            end = rc.Noise(float(np.sqrt(2 * sd ** 2 + mc ** 2)),
                           f"√(2·partition SD² + percentile MC SE²): SD {sd:.4f}, MC SE {mc:.4f} ({reps} and 200 "
                           "replicates)", rounding=0.00005)
            for side, ours_v, p_v in (("lower", lo, paper[1]), ("upper", hi, paper[2])):
                rows.append(rc.row(KEY, f"Table F1 95% CI {side} ({name})", p_v, float(ours_v), dataset="MT-Bench",
                                   noise=end, alternatives={"a zero-width interval at the estimate": paper[0]}))
        table.append({"model": name, "log loss (seed-0 partition)": res.log_loss[token],
                      f"mean over {GROUP_SEEDS} partitions": float(vals.mean()),
                      "SD over partitions": sd, "95% CI": f"[{lo:.4f}, {hi:.4f}]",
                      "paper": f"{paper[0]:.4f} [{paper[1]:.4f}, {paper[2]:.4f}]",
                      "failed bootstrap refits": res.failed.get(token, 0)})
    gain, glo, ghi = res.gains["j+p over j"]
    pg = f1["gain_jp_over_j"]
    gsd = float(np.std(spread["gain"], ddof=1))
    point = rc.Noise(gsd * factor, f"SD {gsd:.4f} of the gain over {GROUP_SEEDS} partitions × √(1 + 1/{GROUP_SEEDS})",
                     rounding=0.0001)
    rows.append(rc.row(KEY, f"Table F1 gain of J+P over J, mean over {GROUP_SEEDS} partitions", pg[0],
                       float(spread["gain"].mean()), dataset="MT-Bench", noise=point,
                       alternatives={"no gain": 0.0}, reason=f"seed-0 partition: {gain:.4f}", headline=True))
    if np.isfinite(glo):
        gbsd = (ghi - glo) / 3.92
        gmc = float(np.hypot(rc.percentile_mc_se(gbsd, reps), rc.percentile_mc_se(gbsd, 200)))
        end = rc.Noise(float(np.sqrt(2 * gsd ** 2 + gmc ** 2)),
                       f"√(2·partition SD² + percentile MC SE²): SD {gsd:.4f}, MC SE {gmc:.4f}", rounding=0.00005)
        for side, ours_v, p_v in (("lower", glo, pg[1]), ("upper", ghi, pg[2])):
            rows.append(rc.row(KEY, f"Table F1 gain 95% CI {side}", p_v, float(ours_v), dataset="MT-Bench", noise=end,
                               alternatives={"a zero-width interval at the estimate": pg[0]}))
        rows.append(rc.excludes_zero_row(KEY, "J+P gain 95% CI vs zero (Section 6.4)", pg[1], pg[2], glo, ghi, end,
                                         dataset="MT-Bench", reason=f"{reps} replicates"))
    return rows, table


def run(ctx: rc.Context) -> rc.Section:
    from oscar_jax.human import human_agreement, load_votes

    pub = ctx.published["mtbench_ranking"]
    f1 = ctx.published["table_f1"]
    sec = rc.Section(KEY, TITLE)
    if ctx.datasets is not None and "mtbench" not in ctx.datasets:
        sec.skipped = "MT-Bench not among --datasets"
        return sec
    votes_path = ctx.votes_path("mtbench")
    if ctx.dataset_path("mtbench") is None or votes_path is None or ctx.responses_path("mtbench") is None:
        sec.skipped = "the MT-Bench judgments, answers (mtbench_answers/) or human votes (mtbench_human/) are absent"
        for _, name in MODELS:
            sec.rows.append(rc.row(KEY, f"Spearman with human ranking ({name})", pub["spearman"][name], None,
                                   dataset="MT-Bench", verdict=rc.VERDICT_SKIPPED, reason="data file not present"))
        return sec
    ctx.read(votes_path)
    design = ctx.design("mtbench")
    reps = ctx.reps("human")
    votes = load_votes(votes_path)
    if ctx.max_prompts is not None:  # a prompt subset (smoke run): keep the votes on those prompts
        keep = votes[0].prompt.isin(set(design.prompts)).to_numpy()
        votes = (votes[0].loc[keep].reset_index(drop=True), votes[1])
    res = human_agreement(design, votes, [m for m, _ in MODELS], replicates=reps, seed=ctx.seed)

    columns = {"rank": list(range(1, len(res.human) + 1)),
               "human (F.2 fit)": [f"{c} ({s:+.3f})" for c, s in zip(res.human.candidate, res.human.human_score)]}
    for token, name in MODELS:
        s = res.scores[token].sort_values(ascending=False)
        columns[name] = [f"{c} ({v:+.3f})" for c, v in s.items()]
    spread = partition_spread(design, votes[0], res)
    sec.rows += ranking_rows(res, pub, f1)
    rows, table = f1_rows(res, spread, f1, reps)
    sec.rows += rows
    gain, glo, ghi = res.gains["j+p over j"]
    pg = f1["gain_jp_over_j"]
    rank_csv = sec.file(ctx, ctx.out / "mtbench_ranking.csv")
    pd.DataFrame(columns).to_csv(rank_csv, index=False)
    f1_csv = sec.file(ctx, ctx.out / "table_f1_human.csv")
    pd.DataFrame(table).to_csv(f1_csv, index=False)
    sec.add("Human reference: Bradley–Terry fit of the human votes (one rater, ties ½, Σ s = 0, ridge 0.05). "
            "LLM rankings: full-data fits on the Xu et al. judgments, OSCAR with first-turn response lengths "
            "(Unicode characters) from FastChat's answer files. Scores in parentheses; Spearman ρ of the candidate "
            "scores against the human scores.", "", rc.md_table(pd.DataFrame(columns)), "",
            f"Table F1: scores fixed at the full-data fits, σ(α₀ + α₁(ŝ_a − ŝ_b)) calibrated with ridge 1e-6 on 4 of "
            f"{res.n_groups} prompt groups (seed {ctx.seed}) and scored on the 5th, pooled; {reps} prompt-bootstrap "
            "replicates with the same prompt counts on judgments and votes (refits are weighted, not resampled).", "",
            rc.md_table(table), "",
            f"Gain of J+P over J: {gain:.4f} [{glo:.4f}, {ghi:.4f}] (paper {pg[0]:.4f} [{pg[1]:.4f}, {pg[2]:.4f}]).")
    if res.notes:
        sec.add("", "Notes: " + " | ".join(res.notes))
    return sec


def main(argv=None) -> int:
    return rc.standalone_main(run, argv, (__doc__ or "").splitlines()[0], KEY)


if __name__ == "__main__":
    sys.exit(main())
