"""What the user gives, checked before anything is computed; what a run writes, written whole;
the package's error and warning classes.

Argument checks raise :class:`OscarInputError` with messages that name the value and the
fix (the CLI prints them and exits with status 2). Output paths too: a run that computes
for minutes and then fails to write (a read-only folder, ``--out`` pointing at a file)
wastes the run, so the CLI checks every output folder first (:func:`check_output_dir`);
and a run interrupted while writing must not leave a truncated CSV that looks complete,
so every file is written to a temporary name in the same folder and renamed into place
(:func:`atomic_write`; ``os.replace`` is atomic on POSIX and Windows): a reader sees the
old file or the new one, never a part.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

__all__ = [
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
    "resolve_name",
]


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
    """Raise unless ``path`` is (or can be created as) a writable folder. Creates nothing."""
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
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OscarInputError(f"{option} {str(p)!r}: no permission to write in {str(probe)!r}; choose a writable folder")
    return p


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
