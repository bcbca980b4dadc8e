"""Progress for long batched runs: a tqdm bar on a terminal, periodic one-line reports otherwise.

On a terminal a bar redraws in place. Off a terminal (logs, CI, ``nohup``) a bar would
either print nothing or flood the log, so one plain line goes to stderr every
``OSCAR_PROGRESS_EVERY`` seconds (default 30; the first after that long, so short runs
print nothing) and a last line when a reported run ends::

    oscar: simulate 120/600 fits (20%), 31 s elapsed, about 2 min left

Set ``OSCAR_PROGRESS=0`` to silence both and ``OSCAR_PROGRESS=1`` to force the bar.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["announce", "announce_now", "bar_enabled", "compile_notices", "compiling", "progress"]

_NOTICE = {"on": False, "said": False}


def bar_enabled(flag: bool | None) -> bool:
    """Whether to draw a bar: ``flag`` if given, else ``OSCAR_PROGRESS``, else "stderr is a terminal"."""
    if flag is not None:
        return flag
    env = os.environ.get("OSCAR_PROGRESS")
    if env is not None:
        return env not in ("0", "false", "no", "")
    return sys.stderr.isatty()


def _silenced() -> bool:
    return os.environ.get("OSCAR_PROGRESS") in ("0", "false", "no", "")


class _Null:
    def update(self, n: int = 1):
        pass

    def set_postfix_str(self, s: str):
        pass


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class LogLines:
    """``update(n)`` counter that writes one line to ``stream`` every ``every`` seconds.

    A daemon thread writes the lines, so a report comes on time even while one long
    compiled call (which releases the GIL) holds the main thread.
    """

    def __init__(self, total: int, desc: str, unit: str = "fit", every: float | None = None, stream=None,
                 clock=time.monotonic):
        self.total, self.desc, self.unit = int(total), desc, unit
        self.every = float(os.environ.get("OSCAR_PROGRESS_EVERY", 30) if every is None else every)
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        self.start = self.last = clock()
        self.done = 0
        self.lines = 0
        self.postfix = ""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    def start_timer(self):
        """Report every ``every`` seconds from a background thread until :meth:`close`."""
        def loop():
            while not self._stop.wait(self.every):
                self._emit()

        self._thread = threading.Thread(target=loop, name="oscar-progress", daemon=True)
        self._thread.start()
        return self

    def _emit(self):
        with self._lock:
            now = self.clock()
            self.last = now
            self.lines += 1
            print(self._line(now), file=self.stream, flush=True)

    def set_postfix_str(self, s: str):
        self.postfix = s

    def _line(self, now: float) -> str:
        elapsed = now - self.start
        text = f"oscar: {self.desc} {self.done}/{self.total} {self.unit}s"
        if self.total:
            text += f" ({100 * self.done / self.total:.0f}%)"
        text += f", {_duration(elapsed)} elapsed"
        if 0 < self.done < self.total:
            text += f", about {_duration(elapsed * (self.total - self.done) / self.done)} left"
        if self.postfix:
            text += f" [{self.postfix}]"
        return text

    def update(self, n: int = 1):
        self.done += int(n)
        if self._thread is None and self.clock() - self.last >= self.every:
            self._emit()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lines:  # a run long enough to have reported says when it ends
            print(self._line(self.clock()), file=self.stream, flush=True)


def announce(text: str) -> None:
    """One line on stderr off a terminal (where no bar shows), e.g. before a long sampler run."""
    if not sys.stderr.isatty() and not _silenced():
        print(f"oscar: {text}", file=sys.stderr, flush=True)


def announce_now(text: str) -> None:
    """One line on stderr, on a terminal too (unless ``OSCAR_PROGRESS=0``): what a command
    is about to do, before a wait with nothing else to show."""
    if not _silenced():
        print(f"oscar: {text}", file=sys.stderr, flush=True)


def compile_notices(on: bool = True) -> None:
    """Say on stderr when a command is about to compile (the CLI turns this on; a library
    caller sees its own timing)."""
    _NOTICE["on"] = bool(on)


def compiling(cache_off: bool = False) -> None:
    """Once per process, at the first program that is not in the cache: a cold run is silent
    for as long as XLA compiles (half a minute on a loaded 2-core machine), so say why."""
    if not _NOTICE["on"] or _NOTICE["said"] or _silenced():
        return
    _NOTICE["said"] = True
    why = ("the program cache is off (OSCAR_JAX_CACHE_DIR), so every run compiles" if cache_off
           else "later runs reuse the cache")
    print(f"oscar: first run on this data shape: compiling ({why}) …", file=sys.stderr, flush=True)


@contextmanager
def progress(total: int, desc: str, enabled: bool | None = None, unit: str = "fit", lines: bool = True,
             every_s: float | None = None):
    """Context manager yielding an object with ``update(n)``.

    ``enabled=None`` (default): a bar on a terminal, periodic lines otherwise;
    ``enabled=False`` or ``OSCAR_PROGRESS=0``: nothing; ``enabled=True``: the bar.
    ``lines=False``: no periodic lines off a terminal; ``every_s`` overrides their period.
    """
    if not bar_enabled(enabled):
        if enabled is False or _silenced() or not lines:
            yield _Null()
            return
        log = LogLines(total, desc, unit, every=every_s).start_timer()
        try:
            yield log
        finally:
            log.close()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
