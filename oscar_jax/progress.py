"""Progress bars for long batched runs: tqdm on a TTY, silent otherwise.

Set ``OSCAR_PROGRESS=0`` to silence them and ``OSCAR_PROGRESS=1`` to force them. With
``lines=True`` a run that is not on a terminal (a log, a batch job) gets one plain line on
stderr every ``every_s`` seconds instead of nothing.
"""

from __future__ import annotations

import os
import sys
import time
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


class _Lines:
    """Periodic one-line progress for logs: ``desc: done/total unit (x%), elapsed, postfix``."""

    def __init__(self, total: int, desc: str, unit: str, every_s: float):
        self.total, self.desc, self.unit, self.every_s = total, desc, unit, every_s
        self.n, self.postfix = 0, ""
        self.start = self.last = time.monotonic()

    def update(self, n: int = 1):
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every_s or self.n >= self.total:
            self.last = now
            pct = 100.0 * self.n / max(self.total, 1)
            extra = f", {self.postfix}" if self.postfix else ""
            print(f"{self.desc}: {self.n}/{self.total} {self.unit} ({pct:.0f}%), {now - self.start:.0f} s{extra}",
                  file=sys.stderr, flush=True)

    def set_postfix_str(self, s: str):
        self.postfix = s


@contextmanager
def progress(total: int, desc: str, enabled: bool | None = None, unit: str = "fit", lines: bool = False,
             every_s: float = 30.0):
    """Context manager yielding an object with ``update(n)``; a no-op when disabled.

    ``lines=True``: off a terminal (and unless ``OSCAR_PROGRESS=0`` or ``enabled=False``)
    print a plain line every ``every_s`` seconds rather than staying silent.
    """
    if not _enabled(enabled):
        env = os.environ.get("OSCAR_PROGRESS")
        if lines and enabled is None and (env is None or env not in ("0", "false", "no", "")):
            yield _Lines(total, desc, unit, every_s)
            return
        yield _Null()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
