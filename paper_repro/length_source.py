"""Which MT-Bench length source reproduces Table 1's J+L and OSCAR rows? (issue 38 §2)

The paper measures lengths in Unicode characters (Section 3.2) but does not say of which
text. This study builds the length contrast from several sources of the FastChat answer
files (``<data-dir>/mtbench_answers``: ``choices[0].turns`` per model, ``question.jsonl``
for the questions) and runs the Table 1 held-out comparison over fold seeds 0..S-1 for
each: J+L − J and OSCAR − J+P (the rows the length term moves), with their fold-seed SDs,
next to the paper's −0.0019 and −0.0003. J and J+P do not use lengths, so they are fitted
once (the folds depend on the seed only).

Sources: turn 1, turn 2, both turns (summed); each as Unicode characters, as the text the
judge saw in FastChat's pairwise prompts (the answer inside the "[The Start of Assistant
A's Answer]" wrapper of ``pair-v2``; for both turns the whole side block of
``pair-v2-multi-turn``: both questions, both answers and the headers); UTF-8 bytes;
whitespace words and regex pre-tokens (letters, digits and punctuation runs, the
pre-tokenisation of GPT-style BPE, a lower bound on BPE tokens: no BPE vocabulary is
installed here). A negative control permutes the first-turn lengths among the candidates
of each prompt (a wrong join).

``python paper_repro/length_source.py [--seeds 10]`` writes ``length_source.json`` and
``length_source.md`` next to this file (about 10 CPU-minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import repro_common as rc

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
PAPER = {"J+L − J": -0.0019, "OSCAR − J+P": -0.0003, "J+L": 0.5187, "OSCAR": 0.4363}
# The text of one side in FastChat's pairwise judge prompts (judge_prompts.jsonl): pair-v2 puts the
# answer between "[The Start of Assistant A's Answer]" and "[The End of …]" lines; pair-v2-multi-turn
# shows the side's whole conversation (both questions, both answers, headers).


def single_turn_block(answer: str) -> str:
    return f"[The Start of Assistant A's Answer]\n{answer}\n[The End of Assistant A's Answer]"


def multi_turn_block(q1: str, a1: str, q2: str, a2: str) -> str:
    return (f"<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}"
            f"\n\n### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>")


SINGLE_WRAPPER = len(single_turn_block(""))
MULTI_HEADERS = len(multi_turn_block("", "", "", ""))
_PRETOKEN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+")


def read_answers(folder: Path) -> tuple[dict, dict]:
    """{(question_id, model): [turn texts]} of the answer files and {question_id: [turns]}."""
    answers, questions = {}, {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if "choices" in rec:
                model = rec.get("model_id") or path.stem
                answers[(str(rec["question_id"]), str(model))] = list(rec["choices"][0]["turns"])
            elif "turns" in rec:
                questions[str(rec["question_id"])] = list(rec["turns"])
    return answers, questions


def sources(answers: dict, questions: dict) -> dict:
    """{name: (description, {(question_id, model): length})}."""
    def table(fn):
        return {k: float(fn(t, questions[k[0]])) for k, t in answers.items()}

    def pretokens(text):
        return len(_PRETOKEN.findall(text))

    return {
        "turn 1, characters": ("first answer, Unicode characters (the package's default)", table(lambda t, q: len(t[0]))),
        "turn 2, characters": ("second answer, Unicode characters", table(lambda t, q: len(t[1]))),
        "both turns, characters": ("first + second answer, Unicode characters",
                                   table(lambda t, q: len(t[0]) + len(t[1]))),
        "turn 1, judge prompt": (f"first answer inside pair-v2's answer wrapper (+{SINGLE_WRAPPER} characters)",
                                 table(lambda t, q: len(single_turn_block(t[0])))),
        "both turns, judge prompt": ("the side's pair-v2-multi-turn block: both questions, both answers, headers "
                                     f"(+{MULTI_HEADERS} characters)",
                                     table(lambda t, q: len(multi_turn_block(q[0], t[0], q[1], t[1])))),
        "turn 1, UTF-8 bytes": ("first answer, UTF-8 bytes", table(lambda t, q: len(t[0].encode("utf-8")))),
        "turn 1, words": ("first answer, whitespace-separated words", table(lambda t, q: len(t[0].split()))),
        "turn 1, pre-tokens": ("first answer, regex pre-tokens (GPT-style BPE pre-tokenisation)",
                               table(lambda t, q: pretokens(t[0]))),
        "both turns, pre-tokens": ("both answers, regex pre-tokens", table(lambda t, q: pretokens(t[0]) + pretokens(t[1]))),
    }


def permuted(lengths: dict) -> dict:
    """Negative control: each prompt's lengths rotated among its candidates (a wrong join)."""
    out = {}
    by_prompt: dict = {}
    for (q, m), v in sorted(lengths.items()):
        by_prompt.setdefault(q, []).append((m, v))
    for q, items in by_prompt.items():
        models, values = zip(*items)
        for m, v in zip(models, values[1:] + values[:1]):
            out[(q, m)] = v
    return out


def design_for(judgments: Path, lengths: dict):
    import oscar_jax as oj

    table = pd.DataFrame([{"prompt": q, "candidate": m, "length": v} for (q, m), v in lengths.items()])
    frame, report = oj.load_judgments(judgments, responses=table)
    return oj.build_design(frame, reference_judge=rc.REFERENCE_JUDGE, report=report)


def losses_over_seeds(design, models: list[str], seeds: list[int]) -> dict:
    """{model name: [Table 1 held-out loss at each fold seed]} (3 prompt folds)."""
    import oscar_jax as oj

    out: dict = {}
    for seed in seeds:
        cr = oj.compare(design, models=models, folds=3, seed=seed, show_progress=False)
        for name, value in cr.log_loss.items():
            out.setdefault(name, []).append(float(value))
    return out


def summarise(per_seed: dict, base: dict) -> dict:
    """Means and fold-seed SDs of the J+L and OSCAR rows and their distance from the paper in SDs."""
    out = {}
    series = {"J+L": np.array(per_seed["J+L"]), "OSCAR": np.array(per_seed["OSCAR"]),
              "J+L − J": np.array(per_seed["J+L"]) - np.array(base["J"]),
              "OSCAR − J+P": np.array(per_seed["OSCAR"]) - np.array(base["J+P"])}
    n = len(series["J+L"])
    for key, v in series.items():
        sd = float(np.std(v, ddof=1))
        # ours is a mean over n fold seeds, the paper's one fold draw: SD of the gap √(1 + 1/n)·SD
        z = (float(v.mean()) - PAPER[key]) / (sd * np.sqrt(1.0 + 1.0 / n)) if sd > 0 else float("nan")
        out[key] = {"mean": float(v.mean()), "sd": sd, "z": z, "worse_in": int((v > 0).sum()) if "−" in key else None}
    return out


def markdown(result: dict) -> str:
    s, base = result["sources"], result["base"]
    lines = [
        "# MT-Bench length source vs Table 1's J+L and OSCAR rows",
        "",
        f"`paper_repro/length_source.py --seeds {len(result['seeds'])}`, commit {result['commit']}, {result['date']}; "
        f"{result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} s CPU at load {result['load'][0]:.1f} (2 shared cores). "
        "Table 1 protocol (3 prompt folds, pooled held-out log loss) for fold seeds "
        f"0–{len(result['seeds']) - 1}; mean (fold-seed SD). z = (mean − paper) / (SD·√(1 + 1/S)): our mean over S "
        "seeds against the paper's one fold draw. Negative numbers favour the length term.",
        "",
        f"J and J+P (no lengths): {np.mean(base['J']):.4f} ({np.std(base['J'], ddof=1):.4f}) and "
        f"{np.mean(base['J+P']):.4f} ({np.std(base['J+P'], ddof=1):.4f}); paper 0.5206 and 0.4366.",
        "",
        "| length source | J+L − J (paper −0.0019) | z | seeds worse than J | OSCAR − J+P (paper −0.0003) | z | "
        "seeds worse than J+P | J+L (paper 0.5187) | OSCAR (paper 0.4363) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in s.items():
        a, b = r["summary"]["J+L − J"], r["summary"]["OSCAR − J+P"]
        cl, co = r["summary"]["J+L"], r["summary"]["OSCAR"]
        n = len(result["seeds"])
        lines.append(f"| {name} | {a['mean']:+.4f} ({a['sd']:.4f}) | {a['z']:+.1f} | {a['worse_in']}/{n} | "
                     f"{b['mean']:+.4f} ({b['sd']:.4f}) | {b['z']:+.1f} | {b['worse_in']}/{n} | "
                     f"{cl['mean']:.4f} ({cl['sd']:.4f}) | {co['mean']:.4f} ({co['sd']:.4f}) |")
    lines += ["", "Sources:", ""] + [f"* **{name}**: {r['description']}" for name, r in s.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import os

    parser = rc.add_common_arguments(argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0]))
    parser.add_argument("--seeds", type=int, default=10, help="fold seeds 0..S-1 (default 10)")
    parser.add_argument("--only", default=None, help="comma list of source names (default: all)")
    args = parser.parse_args(argv)
    ctx = rc.context_from_args(args)
    judgments, folder = ctx.dataset_path("mtbench"), ctx.responses_path("mtbench")
    if judgments is None or folder is None:
        print("MT-Bench judgments or mtbench_answers/ absent", file=sys.stderr)
        return 1
    load, t0, c0 = os.getloadavg(), time.perf_counter(), rc.cpu_time()
    answers, questions = read_answers(folder)
    all_sources = sources(answers, questions)
    t1 = all_sources["turn 1, characters"][1]
    all_sources["negative control: turn 1 permuted"] = (
        "first-answer characters rotated among the candidates of each prompt (a wrong join)", permuted(t1))
    if args.only:
        keep = {x.strip() for x in args.only.split(",")}
        all_sources = {k: v for k, v in all_sources.items() if k in keep}
    seeds = list(range(args.seeds))
    base_design = design_for(judgments, t1)
    base = losses_over_seeds(base_design, ["j", "j+p"], seeds)
    result = {"seeds": seeds, "commit": rc.git_commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "load": list(load), "base": base, "paper": PAPER, "sources": {}}
    for name, (description, lengths) in all_sources.items():
        design = design_for(judgments, lengths)
        per_seed = losses_over_seeds(design, ["j+l", "oscar"], seeds)
        result["sources"][name] = {"description": description, "per_seed": per_seed,
                                   "summary": summarise(per_seed, base)}
        r = result["sources"][name]["summary"]
        print(f"{name}: J+L − J {r['J+L − J']['mean']:+.4f} ({r['J+L − J']['sd']:.4f}), OSCAR − J+P "
              f"{r['OSCAR − J+P']['mean']:+.4f} ({r['OSCAR − J+P']['sd']:.4f})", file=sys.stderr, flush=True)
    result["wall_s"], result["cpu_s"] = time.perf_counter() - t0, rc.cpu_time() - c0
    (HERE / "length_source.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (HERE / "length_source.md").write_text(markdown(result), encoding="utf-8")
    print(f"wrote {HERE / 'length_source.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
