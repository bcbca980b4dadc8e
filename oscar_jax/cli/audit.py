"""``oscar audit``: counterfactual bias audit of a judge (ad-relevance paper; method section 9)."""

from __future__ import annotations

from pathlib import Path

from ..report.render import write_tables
from ..runtime.validate import OscarInputError
from .common import emit, emit_json

DESCRIPTIONS = {
    "audit": (
        "Read a long table of matched counterfactual judgments (columns item, [attribute], condition, "
        "[repetition], label or prob) and print the paper-style table (conditions as columns; Bad DR, Fair DR, "
        "consistency, pRel; t-test across runs of the reference against the mean of the others) plus every "
        "condition's effect relative to the reference by the paper's t-test, a paired item-cluster bootstrap, "
        "clustered McNemar and exact sign tests, and a Bayesian ordinal (or logit) model with item effects."
    ),
}


def _names(text):
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def add_arguments(parser, command: str):
    parser.add_argument("data", metavar="DATA", help="audit table: .csv, .tsv, .jsonl, .json or .parquet")
    parser.add_argument("--attribute", default=None, metavar="NAME",
                        help="attribute to audit: value of the 'attribute' column, or the column holding the "
                             "conditions when there is no 'attribute'/'condition' column")
    parser.add_argument("--reference", required=True, metavar="COND",
                        help="condition the effects are measured against (exact name or unique substring)")
    parser.add_argument("--labels", default="good,fair,bad", metavar="L1,L2,…",
                        help="ordered label set, most favourable first (default good,fair,bad)")
    parser.add_argument("--original", default=None, metavar="COND",
                        help="the unmodified original condition (shown; anchor of consistency; not pooled)")
    parser.add_argument("--duplicate", default=None, metavar="COND",
                        help="duplicated unchanged baseline: its consistency is the reference level")
    parser.add_argument("--others", default=None, metavar="C1,C2,…",
                        help="conditions pooled in the focal test (default: all but reference/original/duplicate)")
    parser.add_argument("--alternative", choices=["two-sided", "less", "greater"], default="two-sided",
                        help="H1 for (condition − reference) on decision rates, pRel and consistency")
    parser.add_argument("--welch", action="store_true", help="Welch t-test instead of the pooled (paper's) one")
    parser.add_argument("--output", choices=["auto", "label", "prob"], default="auto",
                        help="judgment type (default: a 'label' column if present, else a probability column)")
    parser.add_argument("--incomplete", choices=["drop", "keep", "error"], default="drop",
                        help="items missing some condition/run: drop them (default, counted), keep, or error")
    for col, default in (("item", "item"), ("condition", "condition"), ("repetition", "repetition"),
                         ("label", "label"), ("prob", None), ("attribute", "attribute")):
        parser.add_argument(f"--{col}-col", default=default, metavar="NAME", help=f"{col} column name"
                            + (f" (default {default})" if default else " (default: prob/prel/p_rel/probability/score)"))
    parser.add_argument("--n-boot", type=int, default=2000, help="item-bootstrap replicates (default 2000)")
    parser.add_argument("--no-bayes", action="store_true", help="skip the Bayesian model")
    parser.add_argument("--warmup", type=int, default=500, help="NUTS warm-up per chain (default 500)")
    parser.add_argument("--draws", type=int, default=500, help="NUTS draws per chain (default 500)")
    parser.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    parser.add_argument("--chain-method", choices=["auto", "vectorized", "sequential"], default="auto",
                        help="run the chains one after another (auto on a CPU: about 4× cheaper per step) "
                             "or vmapped (auto on an accelerator)")
    svi = parser.add_argument_group("variational inference (--method svi)")
    svi.add_argument("--method", choices=["nuts", "svi"], default="nuts",
                     help="nuts (default) or svi: a Gaussian approximation of the same posterior fitted by NumPyro "
                          "SVI with optax Adam; minutes faster on large audits, intervals may be too narrow")
    svi.add_argument("--svi-steps", type=int, default=None, help="SVI optimizer steps (default 2000)")
    svi.add_argument("--learning-rate", type=float, default=None, help="peak Adam learning rate (default 0.08)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the sampler (default 0)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write conditions.csv, effects.csv, paper_table.csv, result.json and effects.png here")
    parser.add_argument("--plot", default=None, metavar="FILE.png", help="write the effects plot here")


def _bayes_options(args) -> dict:
    if args.method == "nuts":
        if args.svi_steps is not None or args.learning_rate is not None:
            raise OscarInputError("--svi-steps and --learning-rate are for --method svi")
        return {"num_warmup": args.warmup, "num_samples": args.draws, "num_chains": args.chains,
                "chain_method": args.chain_method}
    from dataclasses import replace

    from ..audit.bayes_svi import AUDIT_SVI

    changes = {k: v for k, v in (("steps", args.svi_steps), ("learning_rate", args.learning_rate)) if v is not None}
    return {"method": "svi", "svi": replace(AUDIT_SVI, **changes)}


def run(args) -> int:
    from ..audit import audit, load_audit

    if args.plot is not None and not str(args.plot).lower().endswith(".png"):
        raise OscarInputError(f"--plot {args.plot!r}: the plot is written as PNG; give a .png file name")
    data = load_audit(args.data, attribute=args.attribute, labels=args.labels, output=args.output,
                      item_col=args.item_col, condition_col=args.condition_col,
                      repetition_col=args.repetition_col, attribute_col=args.attribute_col,
                      label_col=args.label_col, prob_col=args.prob_col, incomplete=args.incomplete)
    result = audit(data, args.reference, original=args.original, duplicate=args.duplicate,
                   others=_names(args.others), alternative=args.alternative, ci_prob=args.ci_prob,
                   n_boot=args.n_boot, seed=args.seed, equal_var=not args.welch, bayes=not args.no_bayes,
                   bayes_options=_bayes_options(args))
    payload = result.to_dict()
    plots = []
    if args.out:
        write_tables(args.out, {"conditions": result.conditions(), "effects": result.effects(),
                                "paper_table": result.paper_table()}, payload)
        plots.append(Path(args.out) / "effects.png")
    if args.plot:
        plots.append(Path(args.plot))
    for path in plots:
        result.plot(path)
    if args.format == "json":
        emit_json(payload)
    else:
        emit(result.report())
        for path in plots:
            emit(f"plot written to {path}")
    return 0
