"""Shared plumbing of the paper_repro scripts: arguments, data, cached fits, verdicts, Markdown.

No statistics live here: every number comes from the oscar_jax API (fit, compare, sweep,
attenuation, the population calculations, the swap calibration); this module loads the
data, caches results so that several artefacts share one fit or one compiled program,
and turns ours-vs-paper pairs into verdict rows and Markdown.
"""

from __future__ import annotations

import os

# The batched fits run many small Cholesky/eigen factorizations; OpenBLAS's own threads on
# two shared cores made them ~30x slower (docs/resampling.md). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OSCAR_PROGRESS", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
PUBLISHED_PATH = HERE / "published.json"
REFERENCE_JUDGE = "Qwen3-235B-A22B-Instruct-2507"

# Paper order of Table 1; (file name or glob under <data-dir>/xu2026/).
DATASETS = {
    "inhouse": ("In-House", "judge_results_inhouse*.json"),
    "ultrafeedback": ("UltraFeedback", "judge_results_10k_ultrafeedback.json"),
    "mtbench": ("MT-Bench", "judge_results_10k_mtbench.json"),
    "chatbot_arena": ("Chatbot Arena", "judge_results_10k_chatbot_arena.json"),
}
XU_DATASETS = ("ultrafeedback", "mtbench", "chatbot_arena")
# Response texts (FastChat model_answer files) joined for the length term, under <data-dir>.
RESPONSES = {"mtbench": "mtbench_answers"}
HUMAN_VOTES = {"mtbench": "mtbench_human/human_judgments.jsonl"}

# Replicate counts: (paper / full path, --quick).
REPLICATES = {
    "e2": (200, 20),          # Table E2 paired refit bootstrap (Appendix E.3)
    "sim": (100, 20),         # Section 7 replicates per setting
    "inhouse": (500, 50),     # Section 6.2 / D.3 paired prompt bootstrap
    "human": (200, 50),       # Table F1 prompt bootstrap (Appendix F.4)
}
SIM_NS = {"full": (1000, 2500, 5000, 10000), "quick": (1000, 2500, 10000)}

# The four verdicts a comparison with the paper can get, counted separately in REPORT.md.
VERDICT_OK = "reproduced"                          # within 3 SD of its noise, and the check can tell the paper's
#                                                    value from the named wrong or null alternatives
VERDICT_DIFFERS = "differs"                        # outside 3 SD of its noise (or a categorical mismatch)
VERDICT_WEAK = "within noise, not discriminating"  # within tolerance, but so would be a wrong/null alternative
VERDICT_SANITY = "sanity check"                    # holds for any correct implementation of the model class
# Rows that are not comparisons with a paper number.
VERDICT_NE = "not estimable"
VERDICT_SKIPPED = "skipped"
VERDICT_OURS = "ours only"
VERDICTS = (VERDICT_OK, VERDICT_DIFFERS, VERDICT_WEAK, VERDICT_SANITY, VERDICT_NE, VERDICT_SKIPPED, VERDICT_OURS)
K_SD = 3.0  # every tolerance is K_SD standard deviations of the compared quantity's measured noise


# --------------------------------------------------------------------------------------
# Arguments and context
# --------------------------------------------------------------------------------------

def add_common_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    from oscar_jax.io.data import shared_data_dir

    parser.add_argument("--data-dir", type=Path, default=None,
                        help=f"folder holding xu2026/ (default: $OSCAR_DATA_DIR or {shared_data_dir()})")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="output folder (default paper_repro/out)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer replicates (E2 20, simulations 20 at N = 1000, 2500, 10000, In-House bootstrap 50)")
    parser.add_argument("--seed", type=int, default=0, help="seed of folds, bootstraps and simulations (default 0)")
    parser.add_argument("--datasets", default=None,
                        help="comma list among " + ", ".join(DATASETS) + " (default: every one present)")
    parser.add_argument("--max-prompts", type=int, default=None,
                        help="keep a random subset of this many prompt clusters per dataset (smoke tests)")
    parser.add_argument("--replicates", type=int, default=None,
                        help="override the replicate count of this artefact (bootstrap or simulation)")
    parser.add_argument("--models", default=None,
                        help="comma list of model tokens for Table 1 / E2, e.g. j,j+p (default: the seven Table 1 "
                             "models; a subset is a smoke run)")
    parser.add_argument("--xla-cache", type=Path, default=None,
                        help="persistent XLA compilation cache folder (default: none, every run compiles)")
    return parser


@dataclass
class Context:
    """Settings of one run plus caches shared by the artefacts (designs, fits, comparisons)."""

    data_dir: Path
    out: Path
    quick: bool = False
    seed: int = 0
    datasets: tuple[str, ...] | None = None
    max_prompts: int | None = None
    replicates: int | None = None
    share_compare: bool = False      # run_all: Table 1 and Table E2 come from one compare() call
    published: dict = field(default_factory=dict)
    args: object = None              # the script's parsed arguments (script-specific options)
    _cache: dict = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def reps(self, kind: str) -> int:
        if self.replicates is not None:
            return int(self.replicates)
        full, quick = REPLICATES[kind]
        return quick if self.quick else full

    # ---------------------------------------------------------------- data
    def dataset_path(self, key: str) -> Path | None:
        pattern = DATASETS[key][1]
        folder = self.data_dir / "xu2026"
        if "*" in pattern:
            hits = sorted(folder.glob(pattern)) if folder.is_dir() else []
            return hits[0] if hits else None
        path = folder / pattern
        return path if path.exists() else None

    def responses_path(self, key: str) -> Path | None:
        """Answer files whose lengths are joined to the dataset (None: no length term)."""
        sub = RESPONSES.get(key)
        path = self.data_dir / sub if sub else None
        return path if path is not None and path.is_dir() else None

    def votes_path(self, key: str) -> Path | None:
        sub = HUMAN_VOTES.get(key)
        path = self.data_dir / sub if sub else None
        return path if path is not None and path.exists() else None

    def read(self, *paths) -> None:
        """Record data files read (the report header lists their sha256)."""
        files = self._cache.setdefault(("files",), set())
        for p in paths:
            p = Path(p)
            files.update(sorted(p.glob("*")) if p.is_dir() else [p])

    def available(self, keys=None) -> list[str]:
        """Requested datasets (default all, paper order) whose files are present."""
        keys = list(keys if keys is not None else (self.datasets or DATASETS))
        return [k for k in DATASETS if k in keys and self.dataset_path(k) is not None]

    def missing(self, keys=None) -> list[str]:
        keys = list(keys if keys is not None else (self.datasets or DATASETS))
        return [k for k in DATASETS if k in keys and self.dataset_path(k) is None]

    def frame(self, key: str):
        """(canonical frame, LoadReport) of a dataset, subset to ``max_prompts`` clusters if asked."""
        ck = ("frame", key)
        if ck not in self._cache:
            import oscar_jax as oj

            responses = self.responses_path(key)
            self.read(self.dataset_path(key), *([responses] if responses else []))
            frame, report = oj.load_judgments(self.dataset_path(key), responses=responses)
            if self.max_prompts is not None:
                prompts = np.array(sorted(pd.unique(frame["prompt"]), key=str), dtype=object)
                if self.max_prompts < len(prompts):
                    rng = np.random.default_rng(self.seed)
                    keep = set(rng.choice(prompts, size=self.max_prompts, replace=False).tolist())
                    frame = frame[frame["prompt"].isin(keep)].reset_index(drop=True)
            self._cache[ck] = (frame, report)
        return self._cache[ck]

    def design(self, key: str):
        ck = ("design", key)
        if ck not in self._cache:
            import oscar_jax as oj

            frame, report = self.frame(key)
            self._cache[ck] = oj.build_design(frame, reference_judge=REFERENCE_JUDGE, report=report)
        return self._cache[ck]

    def fit(self, key: str, model: str):
        """Full-data fit (two starts, seed = ctx.seed), cached: D1, screening and MT-Bench share it."""
        ck = ("fit", key, model)
        if ck not in self._cache:
            import oscar_jax as oj

            self._cache[ck] = oj.fit(self.design(key), model, seed=self.seed, warn=False)
        return self._cache[ck]

    def models(self) -> tuple[str, ...]:
        """Model tokens of Table 1 / E2: ``--models`` if given, else the seven Table 1 columns."""
        from oscar_jax.compare import DEFAULT_MODELS

        given = getattr(self.args, "models", None) if self.args is not None else None
        if given:
            return tuple(m.strip().lower() for m in given.split(",") if m.strip())
        return tuple(DEFAULT_MODELS)

    def compare(self, key: str, *, need_bootstrap: bool = False, models=None):
        """Held-out comparison (Table 1) with the E2 bootstrap when shared or needed, cached."""
        import oscar_jax as oj
        from oscar_jax.compare import E2_PAIRS

        models = tuple(models or self.models())
        reps = self.reps("e2") if (need_bootstrap or self.share_compare) else 0
        for ck, value in self._cache.items():   # a cached run with ≥ the models and the bootstrap serves
            if ck[0] == "compare" and ck[1] == key and set(models) <= set(ck[2]) and ck[3] >= reps:
                return value
        pairs = [f"{a}:{b}" for a, b in E2_PAIRS if a in models and b in models] if reps else None
        res = oj.compare(self.design(key), models=list(models), folds=3, seed=self.seed,
                         paired_bootstrap=reps, pairs=pairs or None, show_progress=False)
        self._cache[("compare", key, models, reps)] = res
        return res


def context_from_args(args, **overrides) -> Context:
    from oscar_jax.io.data import shared_data_dir

    if args.xla_cache is not None:
        enable_xla_cache(args.xla_cache)
    datasets = None
    if args.datasets:
        datasets = tuple(d.strip() for d in args.datasets.split(",") if d.strip())
        bad = [d for d in datasets if d not in DATASETS]
        if bad:
            raise SystemExit(f"unknown dataset(s) {bad}; choose among {list(DATASETS)}")
    ctx = Context(data_dir=Path(args.data_dir) if args.data_dir else shared_data_dir(), out=Path(args.out),
                  quick=bool(args.quick), seed=int(args.seed), datasets=datasets, max_prompts=args.max_prompts,
                  replicates=args.replicates, published=load_published())
    ctx._cache[("commit",)] = git_commit()  # the code that runs, even if the tree changes meanwhile
    for k, v in overrides.items():
        setattr(ctx, k, v)
    ctx.out.mkdir(parents=True, exist_ok=True)
    return ctx


def enable_xla_cache(folder: Path) -> None:
    import jax

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def load_published() -> dict:
    with open(PUBLISHED_PATH, encoding="utf-8") as fh:
        return json.load(fh)


def label(key: str) -> str:
    return DATASETS[key][0]


# --------------------------------------------------------------------------------------
# Verdict rows and sections
# --------------------------------------------------------------------------------------

def percentile_mc_se(boot_sd: float, reps: int, p: float = 0.025) -> float:
    """Monte Carlo SE of the p-th percentile of ``reps`` bootstrap draws whose SD is ``boot_sd``.

    √(p(1 − p)/R) / φ(z_p) in SD units (normal approximation to the bootstrap distribution):
    about 0.19 SD for R = 200, 0.6 SD for R = 20.
    """
    from scipy.stats import norm

    return float(boot_sd * math.sqrt(p * (1 - p) / max(int(reps), 1)) / norm.pdf(norm.ppf(p)))


def fmt(x, digits: int = 4) -> str:
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    x = float(x)
    if not math.isfinite(x):
        return "–"
    if x != 0 and abs(x) < 0.5 * 10.0 ** (-digits):
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


ROW_COLUMNS = ["artefact", "dataset", "quantity", "paper", "ours", "diff", "tolerance", "verdict", "reason", "headline"]


@dataclass(frozen=True)
class Noise:
    """Measured noise of (ours − paper): the tolerance is K_SD × ``sd`` plus the paper's rounding.

    ``sd`` is the standard deviation of the difference between our number and the paper's
    when both implementations are right (fold-seed SD × √2 for two fold draws, Monte Carlo
    SE of two studies, partition SD, …); ``what`` says which, in words, beside the number.
    """

    sd: float
    what: str
    rounding: float = 0.0

    @property
    def tol(self) -> float:
        return K_SD * float(self.sd) + float(self.rounding)

    def text(self) -> str:
        if not self.sd:
            return f"±{self.tol:.3g} ({self.what})" if self.tol else f"exact ({self.what})"
        extra = f" + rounding {self.rounding:.2g}" if self.rounding else ""
        return f"±{self.tol:.3g} = {K_SD:g} × {self.sd:.3g} ({self.what}){extra}"


def exact(what: str = "exact count") -> Noise:
    """A deterministic quantity: no noise at all."""
    return Noise(0.0, what)


def rounding_only(half_unit: float, what: str) -> Noise:
    """A deterministic calculation compared with a rounded printed value."""
    return Noise(0.0, what, rounding=half_unit)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def row(artefact: str, quantity: str, paper, ours, *, dataset: str = "", noise: Noise | None = None,
        alternatives: dict | None = None, sanity: bool = False, verdict: str | None = None,
        reason: str = "", digits: int = 4, headline: bool = False) -> dict:
    """One ours-vs-paper comparison and its verdict (one of the four, or a not-compared kind).

    Numeric pairs need ``noise`` (the tolerance is ``noise.tol``, shown with its source);
    ``paper`` may be a published (lo, hi) range, compared by the distance to its nearer end.
    Within tolerance the verdict is "sanity check" when ``sanity`` (an identity any correct
    implementation satisfies), else "within noise, not discriminating" when some value in
    ``alternatives`` ({what a wrong or null implementation would give: value}) lies within
    the same tolerance of the paper's value, else "reproduced". Non-numeric pairs must
    match exactly; ``alternatives`` there are values a wrong implementation could equally
    produce (a match is then not discriminating). ``verdict`` overrides everything.
    """
    diff = None
    tol_text = ""
    span = None
    if isinstance(paper, (tuple, list)) and len(paper) == 2 and all(_is_number(v) for v in paper):
        span = (float(paper[0]), float(paper[1]))   # a published range: the distance to its nearest end
    numeric = (span is not None or _is_number(paper)) and _is_number(ours)
    if numeric and not (math.isfinite(float(ours)) and (span is not None or math.isfinite(float(paper)))):
        numeric = False
        verdict = verdict or VERDICT_DIFFERS

    def offset(value: float) -> float:
        if span is None:
            return float(value) - float(paper)
        return float(value) - min(max(float(value), span[0]), span[1])

    if numeric:
        if noise is None and verdict is None:
            raise ValueError(f"{artefact}: {quantity}: a numeric comparison needs its measured noise")
        diff = offset(ours)
        tol = noise.tol if noise is not None else None
        tol_text = noise.text() if noise is not None else ""
        if verdict is None:
            if abs(diff) > tol + 1e-12:
                verdict = VERDICT_DIFFERS
            elif sanity:
                verdict = VERDICT_SANITY
            else:
                weak = {k: v for k, v in (alternatives or {}).items() if abs(offset(v)) <= tol + 1e-12}
                if weak:
                    verdict = VERDICT_WEAK
                    reason = (reason + "; " if reason else "") + "not discriminating: " + "; ".join(
                        f"{k} ({fmt(float(v), digits)}) would pass as well" for k, v in weak.items())
                else:
                    verdict = VERDICT_OK
                    if alternatives:
                        reason = (reason + "; " if reason else "") + "excludes " + "; ".join(
                            f"{k} ({fmt(float(v), digits)})" for k, v in alternatives.items())
    if verdict is None:
        same = paper == ours and paper is not None
        if not same:
            verdict = VERDICT_DIFFERS
        elif sanity:
            verdict = VERDICT_SANITY
        elif alternatives and any(v == paper for v in alternatives.values()):
            verdict = VERDICT_WEAK
            reason = (reason + "; " if reason else "") + "not discriminating: " + "; ".join(
                f"{k} gives the same" for k, v in alternatives.items() if v == paper)
        else:
            verdict = VERDICT_OK
        tol_text = "exact"
    paper_text = (f"{span[0]:g}–{span[1]:g}" if span is not None else
                  f"{float(paper):g}" if isinstance(paper, (float, np.floating)) else fmt(paper, digits))
    return {"artefact": artefact, "dataset": dataset, "quantity": quantity, "paper": paper_text,
            "ours": fmt(ours, digits), "diff": fmt(diff, digits) if diff is not None else "",
            "tolerance": tol_text, "verdict": verdict, "reason": reason, "headline": bool(headline)}


def excludes_zero_row(artefact: str, quantity: str, paper_lo: float, paper_hi: float, ours_lo: float,
                      ours_hi: float, end_noise: Noise, *, dataset: str = "", reason: str = "") -> dict:
    """Does the 95% interval exclude zero, ours as the paper's?

    Not discriminating when the paper's endpoint nearest zero is within the endpoint
    tolerance of zero: an equally right implementation could then land on either side.
    """
    paper_ex, ours_ex = bool(paper_lo > 0 or paper_hi < 0), bool(ours_lo > 0 or ours_hi < 0)
    near = min(abs(paper_lo), abs(paper_hi))
    side = lambda lo, hi: "above 0" if lo > 0 else "below 0" if hi < 0 else "contains 0"  # noqa: E731
    verdict = None
    if paper_ex == ours_ex and side(paper_lo, paper_hi) == side(ours_lo, ours_hi) and near <= end_noise.tol:
        verdict = VERDICT_WEAK
        reason = (reason + "; " if reason else "") + (f"not discriminating: the paper's endpoint nearest 0 "
                                                      f"({near:.4f}) is within the endpoint tolerance {end_noise.tol:.4f}")
    elif side(paper_lo, paper_hi) != side(ours_lo, ours_hi):
        verdict = VERDICT_DIFFERS
    return row(artefact, quantity, side(paper_lo, paper_hi), side(ours_lo, ours_hi), dataset=dataset, verdict=verdict,
               reason=reason)


@dataclass
class Section:
    key: str
    title: str
    body: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def add(self, *lines: str) -> None:
        self.body.extend(lines)

    def file(self, ctx: Context, path) -> Path:
        path = Path(path)
        self.files.append(str(path.relative_to(ctx.out)) if path.is_relative_to(ctx.out) else str(path))
        return path


def md_table(frame: pd.DataFrame | list[dict], columns=None, digits: int = 4) -> str:
    df = pd.DataFrame(frame)
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    if df.empty:
        return "_(no rows)_"
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "---|" * len(df.columns)
    lines = [head, sep]
    for rec in df.itertuples(index=False):
        cells = [fmt(v, digits) if not isinstance(v, str) else v for v in rec]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


VERDICT_COLUMNS = ["dataset", "quantity", "paper", "ours", "diff", "tolerance", "verdict", "reason"]


def section_markdown(section: Section) -> str:
    lines = [f"## {section.title}", ""]
    if section.skipped:
        lines += [f"**Skipped:** {section.skipped}", ""]
    lines += section.body
    if section.rows:
        lines += ["", "Ours vs paper:", "", md_table(section.rows, VERDICT_COLUMNS), ""]
    if section.files:
        lines += ["", "Files: " + ", ".join(f"`{f}`" for f in section.files), ""]
    lines += [f"_({section.seconds:.0f} s wall, {section.cpu_seconds:.0f} s CPU)_", ""]
    return "\n".join(lines)


def run_section(fn, ctx: Context) -> Section:
    """Run one artefact, timing it; an exception becomes a failed section, not a crash."""
    import traceback

    t0, c0 = time.perf_counter(), cpu_time()
    try:
        section = fn(ctx)
    except Exception as exc:  # keep the other artefacts running; the report says what broke
        section = Section(key=getattr(fn, "__module__", "artefact"), title=f"{getattr(fn, '__module__', fn)} (FAILED)")
        section.skipped = f"failed with {type(exc).__name__}: {exc}"
        section.add("```", traceback.format_exc().strip()[-3000:], "```")
        section.rows.append(row(section.key, "artefact ran", "yes", "no", verdict=VERDICT_DIFFERS,
                                reason=f"{type(exc).__name__}: {exc}"))
    section.seconds = time.perf_counter() - t0
    section.cpu_seconds = cpu_time() - c0
    if ctx.max_prompts is not None:  # a prompt subset is a smoke run, never a reproduction
        real = {label(k) for k in DATASETS}
        for r in section.rows:
            if r["dataset"] in real and r["verdict"] in (VERDICT_OK, VERDICT_DIFFERS, VERDICT_WEAK, VERDICT_SANITY):
                r["verdict"] = VERDICT_OURS
                r["reason"] = f"prompt subset (--max-prompts {ctx.max_prompts}): not comparable with the paper"
    sec_dir = ctx.out / "sections"
    sec_dir.mkdir(parents=True, exist_ok=True)
    (sec_dir / f"{section.key}.md").write_text(section_markdown(section), encoding="utf-8")
    pd.DataFrame(section.rows, columns=ROW_COLUMNS).to_csv(
        sec_dir / f"{section.key}_verdicts.csv", index=False)
    return section


def cpu_time() -> float:
    """CPU seconds of this process and its finished children (all threads)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("oscar_jax", "jax", "jaxlib", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def git_commit() -> str:
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + (" (+ uncommitted changes)" if dirty else "") if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance_lines(ctx: Context) -> list[str]:
    """Where oscar_jax was imported from and the sha256 of every data file read."""
    import hashlib

    import oscar_jax

    lines = [f"* oscar_jax imported from `{Path(oscar_jax.__file__).resolve().parent}`, version "
             f"{oscar_jax.__version__}, commit {ctx._cache.get(('commit',)) or git_commit()} (at the start of the run)"]
    files = sorted(ctx._cache.get(("files",), ()))
    if files:
        lines.append("* Data files read (sha256):")
        for f in files:
            digest = hashlib.sha256(Path(f).read_bytes()).hexdigest()
            lines.append(f"  * `{f}`: `{digest}`")
    else:
        lines.append("* Data files read: none")
    return lines


def header_lines(ctx: Context, wall: float, cpu: float, load: tuple, title: str) -> list[str]:
    v = versions()
    quick_note = ("**quick** (fewer replicates: Table E2 {e2}, simulations {sim} per setting at N = {ns}, "
                  "In-House bootstrap {ih}; every real-data fit and fold is as in the full run)").format(
        e2=ctx.reps("e2"), sim=ctx.reps("sim"), ns=", ".join(f"{n:,}" for n in SIM_NS["quick"]), ih=ctx.reps("inhouse"))
    lines = [
        f"# {title}", "",
        f"* Mode: {quick_note if ctx.quick else '**full** (paper replicate counts)'}"
        + (f"; prompt subset: {ctx.max_prompts} clusters per dataset" if ctx.max_prompts else "")
        + "".join(f"; {flag} {getattr(ctx.args, attr)}" for flag, attr in
                  (("--models", "models"), ("--ns", "ns"), ("--control-n", "control_n"), ("--sim-methods", "sim_methods"),
                   ("--replicates", "replicates"), ("--datasets", "datasets"))
                  if getattr(ctx.args, attr, None) not in (None, "")),
        f"* Run time: **{wall:.0f} s wall, {cpu:.0f} s CPU** (this process and its children); "
        f"{os.cpu_count()} cores, load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        "(the machine is shared, so wall time is an upper bound)",
        f"* Seed: {ctx.seed} (folds, bootstraps, simulations, random second start)",
        f"* Reference judge: {REFERENCE_JUDGE}; data: `{ctx.data_dir}`",
        "* Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + f"; commit {git_commit()}",
        f"* Date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}",
        *provenance_lines(ctx),
        "",
    ]
    return lines


def write_report(ctx: Context, sections: list[Section], wall: float, cpu: float, load: tuple,
                 path: Path | None = None, title: str = "OSCAR paper reproduction") -> Path:
    rows = [r for s in sections for r in s.rows]
    counts = pd.Series([r["verdict"] for r in rows]).value_counts().to_dict() if rows else {}
    lines = header_lines(ctx, wall, cpu, load, title)
    lines += ["## Summary", ""]
    compared = sum(counts.get(v, 0) for v in (VERDICT_OK, VERDICT_DIFFERS, VERDICT_WEAK, VERDICT_SANITY))
    lines.append(f"**{compared} comparisons with the paper: " + ", ".join(
        f"{counts.get(v, 0)} {v}" for v in (VERDICT_OK, VERDICT_DIFFERS, VERDICT_WEAK, VERDICT_SANITY)) + "**; "
        + "not compared: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in (VERDICT_NE, VERDICT_SKIPPED, VERDICT_OURS))
        + f" ({len(rows)} rows in all).")
    lines += ["", f"Every tolerance is {K_SD:g} standard deviations of the compared quantity's measured noise (fold-seed "
              "SD, Monte Carlo SE or prompt-partition SD; shown beside it), plus half a unit of the paper's last "
              "printed digit. *Reproduced* means within that tolerance **and** able to tell the paper's value from "
              "the wrong or null alternatives named in the reason (a term that does nothing, a sign-reversed "
              "difference, another model's published value, a zero-width interval); *within noise, not "
              "discriminating* means within tolerance but one of those alternatives would pass too; a *sanity "
              "check* holds for any correct implementation of the model class (an identity or a claim that "
              "cannot fail on these data); *differs* means outside the tolerance.", ""]
    head = [r for r in rows if r["headline"]]
    if head:
        lines += ["### Headline numbers", "", md_table(head, ["dataset", "quantity", "paper", "ours", "diff",
                                                              "tolerance", "verdict", "reason"]), ""]
    lines += ["### What differs and why", ""]
    differs = [r for r in rows if r["verdict"] == VERDICT_DIFFERS]
    lines.append(f"**{len(differs)} compared number(s) outside their tolerance.**" if differs else
                 "**No compared number is outside its tolerance.**")
    lines.append("")
    reasons: dict[str, list[str]] = {}
    for verdict in (VERDICT_DIFFERS, VERDICT_NE, VERDICT_SKIPPED):
        for r in rows:
            if r["verdict"] == verdict:
                what = f"{r['artefact']}: {r['dataset'] + ' ' if r['dataset'] else ''}{r['quantity']}"
                reasons.setdefault(f"{r['verdict']} — {r['reason'] or 'no reason recorded'}", []).append(what)
    for reason, items in reasons.items():
        shown = "; ".join(items[:8]) + (f"; … ({len(items) - 8} more)" if len(items) > 8 else "")
        lines.append(f"* **{reason}** ({len(items)}): {shown}")
    weak: dict[str, list[str]] = {}
    for r in rows:
        if r["verdict"] == VERDICT_WEAK:
            weak.setdefault(r["artefact"], []).append(f"{r['dataset'] + ' ' if r['dataset'] else ''}{r['quantity']}")
    if weak:
        lines += ["", f"**Within noise, not discriminating** ({sum(map(len, weak.values()))}; the reason column of "
                  "each section names the alternative that would pass as well):", ""]
        lines += [f"* {artefact} ({len(items)}): " + "; ".join(items) for artefact, items in weak.items()]
    findings = HERE / "FINDINGS.md"
    if findings.exists():   # the qualified statements live once, in FINDINGS.md
        lines += ["", re.sub(r"^(#+) ", r"#\1 ", findings.read_text(encoding="utf-8"), flags=re.M)]  # one level down
    lines += ["", "### Artefacts", ""]
    lines.append(md_table([{"artefact": s.title, "status": "skipped" if s.skipped else "ran",
                            **{v: sum(r["verdict"] == v for r in s.rows) for v in
                               VERDICTS},
                            "wall s": f"{s.seconds:.0f}", "CPU s": f"{s.cpu_seconds:.0f}"}
                           for s in sections]))
    lines.append("")
    for s in sections:
        lines.append(section_markdown(s))
    path = path or (ctx.out / "REPORT.md")
    path.write_text("\n".join(lines), encoding="utf-8")
    pd.DataFrame(rows).to_csv(ctx.out / (path.stem + "_verdicts.csv"), index=False)
    return path


def standalone_main(run, argv, description: str, key: str, extra=None) -> int:
    """``main(argv)`` of a single-artefact script: run it and write REPORT_<key>.md."""
    parser = add_common_arguments(argparse.ArgumentParser(description=description))
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    ctx = context_from_args(args)
    ctx.args = args
    load = os.getloadavg()
    t0, c0 = time.perf_counter(), cpu_time()
    section = run_section(run, ctx)
    path = write_report(ctx, [section], time.perf_counter() - t0, cpu_time() - c0, load,
                        path=ctx.out / f"REPORT_{key}.md", title=f"OSCAR paper reproduction: {section.title}")
    print(f"wrote {path}")
    return 0 if not section.skipped or not section.skipped.startswith("failed") else 1
