"""``oscar compare``: held-out log loss on identical prompt folds, paired refit bootstrap (E.2–E.3)."""

from __future__ import annotations

from ..compare import DEFAULT_MODELS, compare
from ..report.render import write_tables
from ..report.text import compare_report
from .common import MODELS_HELP, add_data_arguments, add_output_arguments, design_from_args, emit, emit_json

NAME = "compare"
HELP = "held-out log loss of several models on identical prompt-cluster folds (paper Table 1, E2)"
DESCRIPTION = (
    "Deals prompt clusters into folds once, trains every model on the same training folds and scores "
    "the pooled out-of-fold log loss with the full predictor (bias terms kept), predictions clipped to "
    "[1e-15, 1-1e-15]. --paired-bootstrap R adds the paired refit bootstrap of Appendix E.3 (prompts "
    "resampled within each fixed fold, every model refitted on the same resampled folds) with percentile "
    "intervals for the loss differences of --pairs."
)


def add_arguments(parser):
    add_data_arguments(parser)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated models: {MODELS_HELP} (default: the seven of Table 1)")
    parser.add_argument("--folds", type=int, default=3, help="number of prompt-cluster folds (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold assignment (default 0)")
    parser.add_argument("--paired-bootstrap", type=int, default=0, metavar="R",
                        help="replicates of the paired refit bootstrap (0 = none; the paper uses 200)")
    parser.add_argument("--pairs", default=None, metavar="A:B,...",
                        help="contrasts for the bootstrap, e.g. j:j+p,bt+plf:oscar (difference LL(A) − LL(B), "
                             "positive favours B; default: Table E2's J:J+P, J+P:OSCAR, BT+PLF:OSCAR where present)")
    parser.add_argument("--bootstrap-seed", type=int, default=None, help="seed of the resampling (default --seed)")
    parser.add_argument("--ci-prob", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--chunk-size", type=int, default=None, help="refits per compiled call (default automatic)")
    add_output_arguments(parser)


def run(args) -> int:
    design = design_from_args(args)
    pairs = [p for p in args.pairs.split(",") if p.strip()] if args.pairs else None
    res = compare(design, [m.strip() for m in args.models.split(",") if m.strip()], folds=args.folds, seed=args.seed,
                  paired_bootstrap=args.paired_bootstrap, pairs=pairs, bootstrap_seed=args.bootstrap_seed,
                  ci_prob=args.ci_prob, chunk_size=args.chunk_size)
    payload = res.to_dict()
    if args.out:
        tables = {"log_loss": res.table()}
        if res.differences is not None:
            tables["differences"] = res.differences
        write_tables(args.out, tables, payload)
    if args.format == "json":
        emit_json(payload)
    elif args.format == "csv":
        emit(res.table().to_csv(index=False))
    else:
        emit(compare_report(res))
    return 0
