"""Reproduce every table and figure of the OSCAR paper that the available data allow.

``python paper_repro/run_all.py [--data-dir ../shared/data] [--out paper_repro/out] [--quick]``
runs the artefact scripts of this folder in order and writes ``REPORT.md`` (header with
run time, CPU time, package versions and seed; a summary of what reproduces and what
differs, and why; one section per artefact), the per-artefact CSVs and PNG figures, and
``REPORT_verdicts.csv`` with every ours-vs-paper comparison. Each artefact can also be
run alone (``python paper_repro/table1_heldout.py --quick``). Generated outputs are not
committed (``paper_repro/out/`` is git-ignored); ``paper_repro/REPORT.md`` is the summary of
the last full run, copied by hand. Verdicts: reproduced, differs, within noise but not
discriminating, sanity check (``repro_common.row``); the qualified statements live in
``FINDINGS.md`` and the MT-Bench length-source study in ``length_source.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import repro_common as rc

import data_table_c1  # noqa: E402
import fig1b_population  # noqa: E402
import inhouse_d2_swaps  # noqa: E402
import judge_screening  # noqa: E402
import mtbench_ranking  # noqa: E402
import section7_simulations  # noqa: E402
import table1_heldout  # noqa: E402
import table_d1_attenuation  # noqa: E402
import table_e2_bootstrap  # noqa: E402

ARTEFACTS = (data_table_c1, fig1b_population, table1_heldout, table_e2_bootstrap, table_d1_attenuation,
             judge_screening, mtbench_ranking, section7_simulations, inhouse_d2_swaps)
KEYS = tuple(m.KEY for m in ARTEFACTS)


def build_parser() -> argparse.ArgumentParser:
    parser = rc.add_common_arguments(argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0]))
    parser.add_argument("--only", default=None, help="comma list of artefacts to run: " + ", ".join(KEYS))
    parser.add_argument("--skip", default=None, help="comma list of artefacts to leave out")
    parser.add_argument("--ns", default=None, help=argparse.SUPPRESS)       # simulations: N subset (smoke tests)
    parser.add_argument("--control-n", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sim-methods", default=None, help=argparse.SUPPRESS)  # simulations: method subset
    return parser


def _select(args) -> list:
    chosen = list(ARTEFACTS)
    for opt, keep in ((args.only, True), (args.skip, False)):
        if not opt:
            continue
        names = [x.strip() for x in opt.split(",") if x.strip()]
        bad = [n for n in names if n not in KEYS]
        if bad:
            raise SystemExit(f"unknown artefact(s) {bad}; choose among {list(KEYS)}")
        chosen = [m for m in chosen if (m.KEY in names) == keep]
    return chosen


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    modules = _select(args)
    ctx = rc.context_from_args(args, share_compare=True)
    ctx.args = args
    load = os.getloadavg()
    t0, c0 = time.perf_counter(), rc.cpu_time()
    sections = []
    for i, module in enumerate(modules, 1):
        print(f"[{i}/{len(modules)}] {module.KEY} ...", file=sys.stderr, flush=True)
        section = rc.run_section(module.run, ctx)
        sections.append(section)
        status = "skipped: " + section.skipped[:80] if section.skipped else "done"
        print(f"      {status} ({section.seconds:.0f} s wall, {section.cpu_seconds:.0f} s CPU)", file=sys.stderr,
              flush=True)
    wall, cpu = time.perf_counter() - t0, rc.cpu_time() - c0
    path = rc.write_report(ctx, sections, wall, cpu, load)
    counts = {}
    for s in sections:
        for r in s.rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    (ctx.out / "summary.json").write_text(json.dumps({
        "mode": ctx.mode, "seed": ctx.seed, "wall_s": wall, "cpu_s": cpu, "verdicts": counts,
        "artefacts": {s.key: {"skipped": s.skipped, "wall_s": s.seconds, "cpu_s": s.cpu_seconds,
                              "comparisons": len(s.rows)} for s in sections},
        "versions": rc.versions()}, indent=2), encoding="utf-8")
    print(f"wrote {path} ({wall:.0f} s wall, {cpu:.0f} s CPU): " +
          ", ".join(f"{n} {v}" for v, n in counts.items()), file=sys.stderr)
    failed = [s.key for s in sections if s.skipped and s.skipped.startswith("failed")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
