"""Self-repair of the persistent XLA compilation cache used by the CLI.

JAX warns "Error reading persistent compilation cache entry for 'NAME'" when an entry
cannot be read (a run killed while writing, a disk error) — and, since it never replaces
an existing entry, warns again on every later run. The CLI passes each warning through
:func:`drop_unreadable_entry`: the entries of that function are removed, so the program
is compiled once more and cached afresh, and the warning is not repeated.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

__all__ = ["drop_unreadable_entry"]

_UNREADABLE = re.compile(r"Error reading persistent compilation cache entry for '([^']+)'")


def drop_unreadable_entry(message: str, cache_dir: str | None = None) -> bool:
    """Remove the cache entries a JAX "Error reading … cache entry" warning names.

    Returns True when the message was such a warning and at least one entry was removed.
    Entries are files ``NAME-<hash>-cache`` in the cache folder (``cache_dir``, default
    JAX's ``jax_compilation_cache_dir``).
    """
    match = _UNREADABLE.search(str(message))
    if not match:
        return False
    if cache_dir is None:
        import jax

        cache_dir = jax.config.jax_compilation_cache_dir
    if not cache_dir:
        return False
    removed = False
    for path in Path(cache_dir).glob(f"{glob.escape(match.group(1))}-*-cache"):
        try:
            path.unlink()
            removed = True
        except OSError:
            pass
    return removed
