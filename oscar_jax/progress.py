"""Progress bars for long batched runs: tqdm on a TTY, silent otherwise.

Set ``OSCAR_PROGRESS=0`` to silence them and ``OSCAR_PROGRESS=1`` to force them.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

__all__ = ["progress"]


def _enabled(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    env = os.environ.get("OSCAR_PROGRESS")
    if env is not None:
        return env not in ("0", "false", "no", "")
    return sys.stderr.isatty()


class _Null:
    def update(self, n: int = 1):
        pass

    def set_postfix_str(self, s: str):
        pass


@contextmanager
def progress(total: int, desc: str, enabled: bool | None = None, unit: str = "fit"):
    """Context manager yielding an object with ``update(n)``; a no-op when disabled."""
    if not _enabled(enabled):
        yield _Null()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
