"""What the user gives, checked before anything is computed; what a run writes, written whole;
the package's error and warning classes.

Argument checks raise :class:`OscarInputError` with messages that name the value and the
fix (the CLI prints them and exits with status 2). Output paths too: a run that computes
for minutes and then fails to write (a read-only folder, ``--out`` pointing at a file)
wastes the run, so the CLI checks every output folder first (:func:`check_output_dir`);
and a run interrupted while writing must not leave a truncated CSV that looks complete,
so every file is written to a temporary name in the same folder and renamed into place
(:func:`atomic_write`; ``os.replace`` is atomic on POSIX and Windows): a reader sees the
old file or the new one, never a part. A CLI run goes further (:func:`staged_outputs`):
all its files are written to a hidden folder inside ``--out`` and moved into place only
when every one is written, ``result.json`` last with the list of them (``files``), so a
run that fails while writing (a full disk) leaves none of its files, and a stale file
from an earlier run in the same folder is recognisable (not in ``files``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "CI_KINDS",
    "CI_SOURCES",
    "SCHEMA_NAMES",
    "SCORE_SCALES",
    "OscarDataWarning",
    "OscarFitWarning",
    "OscarInputError",
    "OscarNoteWarning",
    "atomic_write",
    "atomic_write_text",
    "check_ci_prob",
    "check_choice",
    "check_output_dir",
    "check_positive_int",
    "check_seed",
    "data_file_suffix",
    "os_error_message",
    "resolve_name",
    "staged_outputs",
]

# The words a user may choose among, here (no numpy, no pandas) so that `oscar CMD --help`
# and argument errors start light; the modules that act on them import them from here.
# Posterior intervals: equal-tailed or highest-density (results/intervals.py says why ETI
# is the default).
CI_KINDS = ("eti", "hdi")
# Where a leaderboard's intervals come from, and the scales a score is shown on (--ci, --scale).
CI_SOURCES = ("sandwich", "model", "bootstrap", "bayes")
SCORE_SCALES = ("logit", "elo", "winrate")
# The built-in input conventions in detection order; io/schemas.py registers one Schema per
# name (tests/test_light_start.py checks the two agree).
SCHEMA_NAMES = ("xu", "arena", "oscar", "evalica", "crowdkit", "alpacaeval", "arena-hard")


class OscarInputError(ValueError):
    """Bad user input, detected before any computation.

    A ``ValueError`` subclass so callers can catch either; the CLI turns it into a
    one-line message and exit status 2.
    """


class OscarDataWarning(UserWarning):
    """Input that is valid but probably not what the user meant (e.g. names differing only in case)."""


class OscarFitWarning(UserWarning):
    """A fit finished but failed one of the Appendix B.3 checks."""


class OscarNoteWarning(UserWarning):
    """Something the fit did that changes what it estimates (a term dropped, records left out).

    Issued once per distinct note per session; the CLI prints the notes in its output
    instead. Silence with ``warnings.filterwarnings("ignore", category=OscarNoteWarning)``.
    """


def check_ci_prob(ci_prob: float) -> float:
    """Return ``ci_prob`` as a float after checking 0 < ci_prob < 1."""
    try:
        value = float(ci_prob)
    except (TypeError, ValueError):
        raise OscarInputError(f"ci_prob must be a number in (0, 1), got {ci_prob!r}") from None
    if not 0.0 < value < 1.0:
        raise OscarInputError(f"ci_prob must lie strictly between 0 and 1, got {value}; e.g. 0.95")
    return value


def check_choice(name: str, value: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise naming them."""
    choices = list(choices)
    if value not in choices:
        raise OscarInputError(f"Requested {name} {value!r} but it must be one of {choices}")
    return value


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    """Return ``value`` as an int ≥ ``minimum``."""
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise OscarInputError(f"{name} must be an integer ≥ {minimum}, got {value!r}") from None
    if as_int != value or as_int < minimum:
        raise OscarInputError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return as_int


SEED_MAX = 2**63 - 1  # a seed is a 64-bit signed integer (JAX's PRNGKey, the fit's int64)


def check_seed(name: str, value) -> int:
    """Return ``value`` as an int seed in [0, 2⁶³ − 1], else raise naming the range."""
    try:
        as_int = int(value)
    except (TypeError, ValueError, OverflowError):
        raise OscarInputError(f"{name} must be an integer seed in [0, 2**63 - 1], got {value!r}") from None
    if as_int != value or not 0 <= as_int <= SEED_MAX:
        raise OscarInputError(f"{name} must be an integer seed in [0, 2**63 - 1], got {value!r}; e.g. {name} 0")
    return as_int


def resolve_name(kind: str, name: str, available: Sequence[str]) -> str:
    """Match ``name`` against ``available`` exactly, else as a unique case-insensitive substring.

    Judge names in released data often carry provider prefixes and suffixes
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-tput"); a user who types the model's name
    ("Qwen3-235B-A22B-Instruct-2507") should get that judge, and an ambiguous or
    absent name must be an error that lists the choices, never a silent default.
    """
    if name in available:
        return name
    lowered = name.lower()
    hits = [a for a in available if lowered in a.lower()]
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(repr(a) for a in available[:30])
    more = "" if len(available) <= 30 else f", … ({len(available)} in all)"
    if not hits:
        raise OscarInputError(f"{kind} {name!r} is not in the data; available: {shown}{more}")
    raise OscarInputError(
        f"{kind} {name!r} is ambiguous: it matches {hits}; pass the exact name"
    )


def check_output_dir(path, option: str) -> Path:
    """Create ``path`` (and its parents) as a writable folder, or raise naming why not.

    Run before anything is computed: a path that cannot be created, is a file, or is not
    writable is the user's error at second 0, not a traceback after the fit.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OscarInputError(f"{option} {str(p)!r} is a file, not a folder; give a folder path")
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise OscarInputError(f"{option} {str(p)!r}: {str(probe)!r} is a file, so no folder can be created under it")
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".oscar-probe-", dir=p)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OscarInputError(f"{option} {str(p)!r}: {os_error_message(exc)}; choose a folder you can write in") from None
    return p


def os_error_message(exc: OSError) -> str:
    """``[Errno 28] No space left on device: 'out/x.csv'`` as words a user can act on."""
    what = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return f"{what}{where}"


@contextmanager
def staged_outputs(out_dir) -> Iterator[Path]:
    """Yield a hidden staging folder inside ``out_dir`` for every file of one run; on a clean
    exit move them into ``out_dir``, ``result.json`` last with ``files`` (the manifest).

    On any failure (an OS error while writing, Ctrl-C) the staging folder is removed and
    ``out_dir`` is as it was: a run leaves all its files or none. The moves are renames
    within one folder, which need no space.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".oscar-run-", dir=out))
    try:
        yield stage
        names = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
        manifest = stage / "result.json"
        if manifest.exists():
            payload = json.loads(manifest.read_text(encoding="utf-8"))
            if isinstance(payload, dict):
                payload["files"] = names
                manifest.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        for name in sorted(names, key=lambda n: n == "result.json"):
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / name, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def atomic_write(path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` for a temporary file next to ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make outputs private
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


DATA_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".parquet", ".pq", ".jsonl", ".ndjson", ".jsonl.gz", ".json", ".json.gz")


def data_file_suffix(source) -> str:
    """The format suffix of a data file that exists (``.csv.gz`` counts as one), else the error.

    Checked before pandas loads (io/readers.py reads by this suffix), so that a mistyped path
    costs the user no numeric start-up.
    """
    path = Path(source)
    if not path.exists():
        raise OscarInputError(f"data file {str(path)!r} does not exist")
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
    if suffix not in DATA_SUFFIXES:
        raise OscarInputError(f"cannot tell the format of {str(path)!r} from its suffix {suffix!r}; "
                              "use .csv, .tsv, .json, .jsonl or .parquet (each but .parquet optionally gzipped: .csv.gz …)")
    return suffix
