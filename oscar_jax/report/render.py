"""Rendering for people and programs: 80-column tables, JSON and CSV."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..io.names import visible
from ..results.jsonable import to_json

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TABLE_WIDTH", "csv_safe", "csv_text", "current_width", "fill", "fmt_ci", "render_table", "shorten",
           "shorten_names", "table_width", "write_tables"]

TABLE_WIDTH = 100  # text tables fit this many columns unless --wide (table_width(None))
_WIDTH: ContextVar[int | None] = ContextVar("oscar_table_width", default=TABLE_WIDTH)
_MARK = re.compile(r"^[!*†‡]+ ?")  # row markers (the flag "!", the reference judge's "*"), kept when names are cut


@contextmanager
def table_width(width: int | None):
    """Within the block, tables fit ``width`` columns; None never shortens or drops (``--wide``)."""
    token = _WIDTH.set(width)
    try:
        yield
    finally:
        _WIDTH.reset(token)


def current_width() -> int | None:
    """The width text output fits now (None under ``--wide``)."""
    return _WIDTH.get()


def fill(text: str, indent: str = "  ") -> str:
    """Wrap one line of prose to the table width (unchanged under ``--wide``)."""
    import textwrap

    width = _WIDTH.get()
    if width is None or len(text) <= width:
        return text
    return textwrap.fill(text, width, subsequent_indent=indent, break_on_hyphens=False)


def _split_mark(name: str) -> tuple[str, str]:
    m = _MARK.match(name)
    return (m.group(), name[m.end():]) if m else ("", name)


def shorten(name: str, width: int) -> str:
    """Fit a long model name in ``width`` characters, keeping its informative end.

    The organisation prefix ("meta-llama/") goes first, then the end of the name is cut
    with "…". A leading row marker such as the reference judge's ``*`` is always kept.
    """
    name = str(name)
    if len(name) <= width:
        return name
    mark, body = _split_mark(name)
    room = max(width - len(mark), 2)
    if "/" in body:  # drop the organisation prefix first
        body = body.split("/", 1)[1]
        if len(body) <= room:
            return mark + body
    return mark + body[: room - 1] + "…"


def shorten_names(names: Sequence[str], width: int | None) -> list[str]:
    """Shorten a column of names consistently.

    When every name fits, nothing changes. Otherwise organisation prefixes are dropped from
    *all* names (not only from the long ones, so the column reads alike), except where that
    would make two names equal, and names still too long are cut with "…".
    """
    names = [str(n) for n in names]
    if width is None or all(len(n) <= width for n in names):
        return names
    parts = [_split_mark(n) for n in names]
    bare = [(m, b.split("/", 1)[1] if "/" in b else b) for m, b in parts]
    counts: dict[str, int] = {}
    for _, b in bare:
        counts[b] = counts.get(b, 0) + 1
    out = []
    for (mark, body), (_, stripped) in zip(parts, bare):
        body = stripped if counts[stripped] == 1 else body
        out.append(shorten(mark + body, width))
    return out


def fmt_ci(lo: float, hi: float, digits: int = 2) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "–"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _values(frame, col) -> list:
    """A column's cells: of a DataFrame, or of a list of row dicts (tables made without pandas)."""
    return [row[col] for row in frame] if isinstance(frame, list) else frame[col].tolist()


def render_table(frame, columns: Sequence[tuple[str, str, str]], width: int | None = None,
                 name_col: str | None = None, secondary: Sequence[str] = (), min_name: int = 16) -> str:
    """Render ``frame`` (a DataFrame or a list of row dicts) as fixed-width text.

    ``columns`` = (column, header, format spec or "" for str). The ``name_col`` column is
    shortened so the table fits in ``width`` characters (default :data:`TABLE_WIDTH`, or
    as set by :func:`table_width`; under ``table_width(None)`` nothing is shortened).
    When names would have to go below ``min_name`` characters, the ``secondary`` columns
    are dropped first, in the order given, and a last line says which.
    """
    wide = _WIDTH.get()
    width = None if wide is None else (width or wide)
    if width is not None and secondary:
        dropped = []
        for col in secondary:
            if _table_width(frame, columns, name_col, min_name) <= width:
                break
            headers = [h for c, h, _ in columns if c == col]
            columns = [c for c in columns if c[0] != col]
            dropped += headers
        if dropped:
            return (render_table(frame, columns, width, name_col) + "\n"
                    + f"(columns left out to fit {width} characters: {', '.join(dropped)}; --wide shows them)")
    cells = []
    for col, _, spec in columns:
        values = []
        for v in _values(frame, col):
            if isinstance(v, str) or spec == "":
                # Invisible and direction-changing characters in names (a newline, a right-to-left
                # override) would break the row or disguise the name: show them escaped.
                values.append("–" if v is None or (isinstance(v, float) and math.isnan(v)) else visible(v))
            elif v is None or (isinstance(v, float) and not math.isfinite(v)):
                values.append("–")
            else:
                values.append(format(v, spec))
        cells.append(values)
    widths = [max([len(h)] + [len(x) for x in vals]) for (_, h, _), vals in zip(columns, cells)]
    total = sum(widths) + 2 * (len(widths) - 1)
    if name_col is not None and width is not None and total > width:
        idx = [c for c, _, _ in columns].index(name_col)
        room = max(10, widths[idx] - (total - width))
        cells[idx] = shorten_names(cells[idx], room)
        widths[idx] = max(len(columns[idx][1]), max((len(x) for x in cells[idx]), default=0))
    lines = []
    header = []
    for (_, h, spec), w in zip(columns, widths):
        header.append(h.ljust(w) if spec == "" else h.rjust(w))
    lines.append("  ".join(header).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in range(len(frame)):
        row = []
        for (_, _, spec), w, vals in zip(columns, widths, cells):
            row.append(vals[r].ljust(w) if spec == "" else vals[r].rjust(w))
        lines.append("  ".join(row).rstrip())
    return "\n".join(lines)


def _table_width(frame, columns, name_col, min_name: int) -> int:
    """Width of the rendered table with the name column cut to at most ``min_name``."""
    total = 0
    for col, head, spec in columns:
        values = _values(frame, col)
        if spec == "" or any(isinstance(v, str) for v in values):
            lens = [len(str(v)) for v in values]
        else:
            lens = [len(format(v, spec)) if v is not None and math.isfinite(v) else 1 for v in values]
        w = max([len(head)] + lens)
        if col == name_col:
            w = min(w, max(min_name, len(head)))
        total += w + 2
    return total - 2


# OWASP "CSV injection": a spreadsheet evaluates a cell that starts with = + - @ (or a tab
# or carriage return) as a formula, so a candidate named "=HYPERLINK(…)" would run in the
# reader's spreadsheet. Such a text cell is written with a leading apostrophe, which
# spreadsheets show as text. A text cell that is a plain number ("-0.5") is no formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _defuse(cell):
    if isinstance(cell, str) and cell.startswith(_FORMULA_START) and cell != "-" and not _PLAIN_NUMBER.match(cell):
        return "'" + cell
    return cell


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell that a spreadsheet would run as a formula defused
    (OWASP CSV-injection guidance); numbers untouched. The one rule for every CSV written."""
    import pandas as pd  # (a text table is rendered without it)

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(_defuse)
    out.columns = [_defuse(c) for c in out.columns]
    return out


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index), formula-like text cells defused (:func:`csv_safe`)."""
    return csv_safe(frame).to_csv(index=False)


def write_tables(out_dir: str | Path, tables: dict[str, pd.DataFrame], payload: dict | None = None) -> list[Path]:
    """Write each table as CSV (and ``payload`` as result.json) under ``out_dir``."""
    from ..runtime.validate import atomic_write, atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables.items():
        path = out / f"{name}.csv"
        atomic_write(path, lambda tmp, frame=csv_safe(frame): frame.to_csv(tmp, index=False))
        written.append(path)
    if payload is not None:
        path = out / "result.json"
        atomic_write_text(path, to_json(payload) + "\n")
        written.append(path)
    return written
