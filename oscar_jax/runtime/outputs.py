"""Output paths: checked before any computation, written atomically.

A run that computes for minutes and then fails to write (a read-only folder, ``--out``
pointing at a file) wastes the run; a run interrupted while writing leaves a truncated
CSV that looks complete. So the CLI checks every output folder first
(:func:`check_output_dir`), and every file is written to a temporary name in the same
folder and renamed into place (:func:`atomic_write`; ``os.replace`` is atomic on POSIX
and Windows), so a reader sees the old file or the new one, never a part.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .validate import OscarInputError

__all__ = ["atomic_write", "atomic_write_text", "check_output_dir"]


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
